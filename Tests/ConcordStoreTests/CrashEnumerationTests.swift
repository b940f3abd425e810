import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import Testing

/// Crash enumeration: the crash child runs a canned workload — local writes, puts, set
/// changes, deletes, file attaches, seals and remote deltas applied (`CrashScript`) — and is
/// killed at each of its I/O calls in turn (every fourth in `make test`, every one in
/// `make crash-enum`) (`write`, `pwrite64`, `fsync`, `fdatasync`,
/// `rename`, `unlink`), by the fault library `ConcordFaultInjection` (loaded with
/// `LD_PRELOAD`; it counts the calls of every thread of the process). After every kill the store passes the crash test's
/// check (`CrashTests.checkAfterKill`): integrity, and exactly the state, outbox, seals,
/// clock and file history of the step before or after the interrupted one, with every file
/// whole and the declared table (the child declares the script's collection before its
/// first step) equal to that state. `make test` runs 20 steps; `make crash-enum` 60 (`CONCORD_CRASH_ENUM_STEPS`).
///
/// Part of the serialized `CrashTests` suite, and they await each child without holding a
/// thread: run for a minute or more beside other tests that block, they held both threads
/// of a 2-core machine's concurrency pool and starved the async tests (AutoSyncTests timed
/// out).
extension CrashTests {
    static let calls = ["write", "pwrite64", "fsync", "fdatasync", "rename", "unlink"]

    @Test func aKillAtEveryIOCallLosesNothing() async throws {
        let environment = ProcessInfo.processInfo.environment
        let steps = Int(environment["CONCORD_CRASH_ENUM_STEPS"] ?? "") ?? 20
        let every = Int(environment["CONCORD_CRASH_ENUM_STRIDE"] ?? "") ?? 4
        let seed: UInt64 = 5
        // 1. Count every I/O call of one whole run.
        let counts = try await Self.countCalls(seed: seed, steps: steps)
        // The workload reaches every kind of call: a file attach renames and fsyncs.
        #expect(Self.calls.allSatisfy { counts[$0, default: 0] > 0 }, "\(counts)")
        // 2. Kill the workload at each of them in turn.
        var visited = 0
        var recovered = 0
        var interrupted = 0
        for call in Self.calls {
            for point in stride(from: 1, through: counts[call, default: 0], by: every) {
                let directory = TemporaryDirectory("enum")
                let path = directory.file("store.db")
                let log = directory.file("log")
                _ = try await Self.runChild(["crash", path, log, String(seed), String(steps)], fault: "\(call):\(point):kill")
                visited += 1
                let label = "\(call) #\(point)"
                let outcome = try CrashTests.recovery(path: path, log: log, seed: seed, count: steps, label: label)
                if outcome.matched { recovered += 1 }
                if outcome.interrupted { interrupted += 1 }
            }
        }
        let total = counts.values.reduce(0, +)
        #expect(visited == counts.values.map { ($0 + every - 1) / every }.reduce(0, +) && recovered == visited, "\(recovered) of \(visited) kills recovered (\(total) I/O calls, every \(every))")
        #expect(interrupted > 0, "no kill landed inside a step")
        print("crash enumeration: \(steps) steps, \(total) I/O calls (\(counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))), \(visited) killed (every \(every)), \(recovered) recovered, \(interrupted) inside a step")
    }

    /// Error enumeration: the same workload with `ENOSPC`, then `EIO`, returned by each of its
    /// writes and syncs in turn (every fifteenth in `make test`, every one in `make crash-enum`).
    /// Each fault either is absorbed (the run finishes) or fails the step with a typed,
    /// one-line error; either way the store then holds exactly the state of the step before
    /// or after (nothing acknowledged is lost), and once the fault is gone the next write and
    /// seal succeed.
    @Test func aFullOrFailingDiskAtEveryWriteAndSyncLosesNothing() async throws {
        let environment = ProcessInfo.processInfo.environment
        let steps = Int(environment["CONCORD_CRASH_ENUM_STEPS"] ?? "") ?? 20
        let every = Int(environment["CONCORD_ERROR_ENUM_STRIDE"] ?? "") ?? 15
        let seed: UInt64 = 5
        let counts = try await Self.countCalls(seed: seed, steps: steps)
        var visited = 0
        var failed = 0
        var recovered = 0
        for errno in ["ENOSPC", "EIO"] {
            for call in ["write", "pwrite64", "fsync", "fdatasync"] {
                for point in stride(from: 1, through: counts[call, default: 0], by: every) {
                    let directory = TemporaryDirectory("enum-error")
                    let path = directory.file("store.db")
                    let log = directory.file("log")
                    let status = try await Self.runChild(["crash", path, log, String(seed), String(steps)], fault: "\(call):\(point):\(errno)")
                    visited += 1
                    let label = "\(errno) at \(call) #\(point)"
                    let lines = Child.lines(log)
                    if status != 0 {
                        failed += 1
                        // A typed error, on one line, naming what could not be done.
                        #expect(["storage", "corrupt"].contains(Self.errorCode(lines)), "\(label): \(lines.suffix(2))")
                    } else {
                        #expect(lines.last == "finished", "\(label): exit 0 without finishing: \(lines.suffix(2))")
                    }
                    if let outcome = try CrashTests.checkAfterKill(path: path, log: log, seed: seed, count: steps, label: label), !outcome.matched {
                        continue
                    }
                    // The fault is gone: the next write and seal succeed.
                    let store = try Store(path: path, configuration: .init(clock: ManualClock(millis: CrashScript.now(step: steps + 1))))
                    try store.set(RecordRef(collection: "t", id: "after"), "f", .int(1))
                    #expect(try store.seal() != nil, "\(label)")
                    recovered += 1
                }
            }
        }
        #expect(failed > 0, "no injected fault failed a step")
        #expect(recovered == visited, "\(recovered) of \(visited) faults recovered")
        print("error enumeration: \(steps) steps, \(visited) faults (ENOSPC and EIO, every \(every) of the writes and syncs), \(failed) failed a step with a typed error, \(recovered) recovered")
    }

    /// The I/O calls, per kind, of one whole run of the crash workload of `seed` and `steps`.
    static func countCalls(seed: UInt64, steps: Int) async throws -> [String: Int] {
        let counting = TemporaryDirectory("enum-count")
        let (status, counts) = try await countingChild(["crash", counting.file("store.db"), counting.file("log"), String(seed), String(steps)])
        #expect(status == 0)
        #expect(Child.lines(counting.file("log")).last == "finished")
        return counts
    }

    /// The code of the one-line typed error (`error CODE: message`) the crash child logged
    /// last, or nil if it logged none.
    static func errorCode(_ lines: [String]) -> String? {
        lines.last(where: { $0.hasPrefix("error ") }).map { String($0.dropFirst(6).prefix { $0 != ":" }) }
    }

    /// The fault library, built beside the crash child.
    static var faultLibrary: String {
        URL(fileURLWithPath: Child.executable).deletingLastPathComponent().appendingPathComponent("libConcordFaultInjection.so").path
    }

    /// Runs the crash child with `arguments`, the fault library loaded: `fault` (`CALL:N:ACTION`,
    /// ACTION `kill`, `ENOSPC` or `EIO`) fails the Nth call of that kind in the whole process;
    /// `counts` names a file for the calls made. Returns its exit status.
    static func runChild(_ arguments: [String], fault: String?, counts: String? = nil) async throws -> Int32 {
        try #require(FileManager.default.fileExists(atPath: faultLibrary), "\(faultLibrary) is missing: `swift build` builds it")
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = faultLibrary
        environment["CONCORD_FAULT"] = fault
        environment["CONCORD_FAULT_COUNTS"] = counts
        return try await Child.finish(Child.executable, arguments, environment: environment)
    }

    /// Runs the crash child with `arguments` to its end, counting its I/O calls; returns its
    /// exit status and the calls per kind.
    static func countingChild(_ arguments: [String]) async throws -> (Int32, [String: Int]) {
        let counting = TemporaryDirectory("enum-calls")
        let file = counting.file("counts")
        let status = try await runChild(arguments, fault: nil, counts: file)
        var counts: [String: Int] = [:]
        for line in try String(contentsOfFile: file, encoding: .utf8).split(separator: "\n") {
            let columns = line.split(separator: " ")
            if columns.count == 2, let number = Int(columns[1]), number > 0 { counts[String(columns[0])] = number }
        }
        return (status, counts)
    }
}
