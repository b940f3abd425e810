import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The growth run's command-line options.
struct Options {
    var replicas = 3
    var operations = 1_000_000
    var rounds = 200
    var records = 10_000
    var seed: UInt64 = 1
    var compactEvery = 10
    /// Virtual minutes per round (the engines' and stores' manual clock).
    var roundMinutes = 360.0
    var opsPerWrite = 1
    var fileEvery = 200
    var fileSlots = 50
    /// nil: the library's defaults.
    var historyDays: Double?
    var blobGraceDays: Double?
    var batchGraceDays: Double?
    var snapshotEvery: UInt64? = 64
    var sampleEvery = 20
    var json: String?
    var keep = false
    var strict = false

    static let usage = """
        usage: GrowthBenchmark [--replicas 3] [--operations 1000000] [--rounds 200] [--records 10000]
                               [--seed 1] [--compact-every 10] [--round-minutes 360] [--ops-per-write 1]
                               [--file-every 200] [--file-slots 50] [--history-days D] [--blob-grace-days D]
                               [--batch-grace-days D] [--snapshot-every 64|none] [--sample-every 20]
                               [--json PATH] [--keep] [--strict]
        """

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var rest = arguments[...]
        func value(_ flag: String) throws -> String {
            guard let next = rest.popFirst() else { throw Failure(description: "\(flag) needs a value") }
            return next
        }
        func int(_ flag: String) throws -> Int {
            guard let n = Int(try value(flag).replacingOccurrences(of: "_", with: "")), n >= 0 else { throw Failure(description: "\(flag) needs a whole number") }
            return n
        }
        func double(_ flag: String) throws -> Double {
            guard let n = Double(try value(flag)), n >= 0 else { throw Failure(description: "\(flag) needs a number") }
            return n
        }
        while let flag = rest.popFirst() {
            switch flag {
            case "--replicas": options.replicas = try int(flag)
            case "--operations": options.operations = try int(flag)
            case "--rounds": options.rounds = try int(flag)
            case "--records": options.records = try int(flag)
            case "--seed": options.seed = UInt64(try int(flag))
            case "--compact-every": options.compactEvery = try int(flag)
            case "--round-minutes": options.roundMinutes = try double(flag)
            case "--ops-per-write": options.opsPerWrite = max(1, try int(flag))
            case "--file-every": options.fileEvery = try int(flag)
            case "--file-slots": options.fileSlots = max(1, try int(flag))
            case "--history-days": options.historyDays = try double(flag)
            case "--blob-grace-days": options.blobGraceDays = try double(flag)
            case "--batch-grace-days": options.batchGraceDays = try double(flag)
            case "--snapshot-every":
                let text = try value(flag)
                options.snapshotEvery = text == "none" ? nil : UInt64(text)
            case "--sample-every": options.sampleEvery = try int(flag)
            case "--json": options.json = try value(flag)
            case "--keep": options.keep = true
            case "--strict": options.strict = true
            case "--help", "-h":
                print(usage)
                exit(0)
            default: throw Failure(description: "unknown option \(flag)")
            }
        }
        guard options.replicas >= 1, options.rounds >= 1, options.records >= 10 * options.fileSlots else {
            throw Failure(description: "need ≥ 1 replica, ≥ 1 round, and records ≥ 10 × file slots")
        }
        return options
    }
}
