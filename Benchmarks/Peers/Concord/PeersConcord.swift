import ConcordCodec
import ConcordCore
import ConcordTesting
import Foundation

// Concord's side of `make bench-peers` (Benchmarks/Peers/peers.py runs it; see
// Benchmarks/README.md, "Peers"). The core only, in memory — ConcordCore's Replica and
// StoreState, ConcordCodec's DeltaCodec and SnapshotCodec — like the peers, which are
// in-memory documents too. No SQLite, no encryption. Beside them, the durable store
// (ConcordStore's Store, SQLite on disk, without encryption) on the same inputs:
// StoreWorkloads.swift.
//
//   PeersConcord prepare DIR            writes the inputs every workload reads, prints JSON
//   PeersConcord run WORKLOAD DIR N     one warm-up and N timed repetitions, prints JSON
//
// Workloads (the same on Loro and Yrs, in peers.py): idle, merge, merge-incremental,
// snapshot, load-read; the store's alone: store-merge, store-load-read, store-join. Each
// `run` is its own process, so its peak resident memory (VmHWM) is that workload's alone.
// PEERS_VALUES=unique (for `prepare`) writes a distinct string into every string field
// (`Values`); the default, `recycled`, writes ConcordTesting.Workload.value's.

let records = 10_000
let fields = 10
/// Writes the base state (round 0), the 100k-operation delta (round 1) and the 1% delta (round 2).
let replicaA = ReplicaID(high: 0xa, low: 1)
let replicaB = ReplicaID(high: 0xb, low: 2)
/// Holds the base state and merges the deltas.
let replicaC = ReplicaID(high: 0xc, low: 3)
/// The records of the 1% delta: every 100th (item0, item100, …, item9900), all ten fields.
let incrementalRecords = Array(stride(from: 0, to: records, by: 100))

enum Input: String, CaseIterable {
    case baseDelta = "base.delta"
    case baseSnapshot = "base.snapshot"
    case fullDelta = "full.delta"
    /// The same delta in format version 1, for `delta_bytes.py`'s comparison.
    case fullDeltaVersion1 = "full-version1.delta"
    case incrementalDelta = "incremental.delta"
    case mergedSnapshot = "merged.snapshot"
}

@main
struct PeersConcord {
    static func main() {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            switch (arguments.first, arguments.count) {
            case ("prepare", 2):
                try prepare(in: arguments[1])
            case ("run", 4):
                guard let repeats = Int(arguments[3]), repeats > 0 else { usage() }
                try run(arguments[1], in: arguments[2], repeats: repeats)
            default:
                usage()
            }
        } catch {
            FileHandle.standardError.write(Data("PeersConcord: \(error)\n".utf8))
            exit(1)
        }
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("usage: [PEERS_VALUES=recycled|unique] PeersConcord prepare DIR | PeersConcord run idle|merge|merge-incremental|snapshot|load-read|store-merge|store-load-read|store-join DIR REPEATS\n".utf8))
        exit(64)
    }

    // MARK: Inputs

    /// Replica A writes 10,000 records × 10 fields (round 0): the base state and its delta.
    /// Replica B joins that state and overwrites every field (round 1: the 100k-operation
    /// delta); another B, from the same base, overwrites every field of every 100th record
    /// (round 2: the 1% delta). `merged` is the base with the 100k delta applied.
    static func prepare(in directory: String) throws {
        guard let values = Values(rawValue: ProcessInfo.processInfo.environment["PEERS_VALUES"] ?? Values.recycled.rawValue) else {
            throw Failure(message: "PEERS_VALUES must be recycled or unique")
        }
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let all = Array(0..<records)
        var a = Replica(id: replicaA)
        let baseDelta = writes(on: &a, records: all, round: 0, values: values)
        let base = a.snapshot!

        var b = Replica(id: replicaB)
        b.join(snapshot: base)
        let fullDelta = writes(on: &b, records: all, round: 1, values: values)

        var b2 = Replica(id: replicaB)
        b2.join(snapshot: base)
        let incrementalDelta = writes(on: &b2, records: incrementalRecords, round: 2, values: values)

        var merged = base
        try merged.apply(fullDelta)

        let files: [Input: [UInt8]] = [
            .baseDelta: DeltaCodec.encode(baseDelta),
            .baseSnapshot: try SnapshotCodec.encode(base),
            .fullDelta: DeltaCodec.encode(fullDelta),
            .fullDeltaVersion1: DeltaCodec.encode(fullDelta, version: 1),
            .incrementalDelta: DeltaCodec.encode(incrementalDelta),
            .mergedSnapshot: try SnapshotCodec.encode(merged),
        ]
        for (input, bytes) in files {
            try Data(bytes).write(to: URL(fileURLWithPath: directory + "/" + input.rawValue))
        }
        let sizes = Input.allCases.map { "\"\($0.rawValue)\": \(files[$0]!.count)" }.joined(separator: ", ")
        print("{\"sizes\": {\(sizes)}, \"entries\": {\"full.delta\": \(fullDelta.entryCount), \"incremental.delta\": \(incrementalDelta.entryCount)}}")
    }

    /// Every field of each of `records`, in the order and with the stamps
    /// `Workload.fieldWrites` uses (ten writes per millisecond), sealed into one delta: the
    /// same delta as `Workload.fieldWrites` for all records and recycled values.
    static func writes(
        on writer: inout Replica, records: [Int], round: Int, values: Values, startMillis: UInt64 = 1_767_225_600_000
    ) -> Delta {
        var now = startMillis + UInt64(round) * 10_000_000
        var count = 0
        for record in records {
            let ref = RecordRef(collection: "items", id: "item\(record)")
            for field in 0..<fields {
                if count % 10 == 0 { now += 1 }
                count += 1
                try! writer.set(ref, "field\(field)", values.value(record: record, field: field, round: round), now: now)
            }
        }
        return writer.seal()!
    }

    static func read(_ input: Input, in directory: String) throws -> [UInt8] {
        guard let data = FileManager.default.contents(atPath: directory + "/" + input.rawValue) else {
            throw Failure(message: "cannot read \(directory)/\(input.rawValue)")
        }
        return [UInt8](data)
    }

    // MARK: Workloads

    /// Each iteration builds its input state untimed, times the workload, and drops it all
    /// before the next. The peak resident set is read before the last iteration's state is
    /// read back to check it, so the check's read does not count (except in load-read, whose
    /// read is the workload).
    static func run(_ workload: String, in directory: String, repeats: Int) throws {
        var times: [Double] = []
        var last: StoreState?
        var extra = ""
        switch workload {
        case "idle":
            break
        case "merge", "merge-incremental":
            // A replica holding the base state, loaded from its snapshot before the timer
            // starts; timed: decode the delta's bytes and apply them.
            let snapshot = try read(.baseSnapshot, in: directory)
            let bytes = try read(workload == "merge" ? .fullDelta : .incrementalDelta, in: directory)
            for iteration in 0...repeats {
                last = nil
                var replica = Replica(
                    id: replicaC, state: try SnapshotCodec.decode(snapshot), clock: HybridLogicalClock(),
                    outbox: [], sealedSeq: 0, sealedUpTo: 0)
                let start = now()
                let outcome = try replica.apply(try DeltaCodec.decode(bytes))
                let elapsed = now() - start
                precondition(outcome == .applied)
                if iteration > 0 { times.append(elapsed) }
                last = replica.state
            }
        case "snapshot":
            // A replica holding the 100k-operation state (built from replica A's delta, before
            // the timer starts); timed: encode its snapshot.
            let delta = try read(.baseDelta, in: directory)
            var size = 0
            for iteration in 0...repeats {
                last = nil
                var state = StoreState()
                try state.apply(try DeltaCodec.decode(delta))
                let start = now()
                let bytes = try SnapshotCodec.encode(state)
                let elapsed = now() - start
                size = bytes.count
                if iteration > 0 { times.append(elapsed) }
                last = state
            }
            extra = ", \"size\": \(size)"
        case "load-read":
            // Timed: decode the snapshot's bytes into a state, then read every visible record
            // with its fields (names and values) into an array.
            let snapshot = try read(.baseSnapshot, in: directory)
            var rows: [(ref: RecordRef, fields: [(name: String, value: FieldValue)])] = []
            for iteration in 0...repeats {
                rows = []
                let start = now()
                let state = try SnapshotCodec.decode(snapshot)
                rows = state.visibleRecords
                let elapsed = now() - start
                if iteration > 0 { times.append(elapsed) }
            }
            let peak = peakResidentKiB()
            report(times: times, peak: peak, checksum: Checksum(rows), extra: extra)
            return
        case "store-merge", "store-load-read", "store-join":
            let outcome = try runStore(workload, in: directory, repeats: repeats)
            report(times: outcome.times, peak: outcome.peak, checksum: outcome.checksum, extra: outcome.extra)
            return
        default:
            usage()
        }
        let peak = peakResidentKiB()
        report(times: times, peak: peak, checksum: last.map { Checksum($0.visibleRecords) }, extra: extra)
    }

    static func report(times: [Double], peak: Int, checksum: Checksum?, extra: String) {
        let timesJSON = times.map { String($0) }.joined(separator: ", ")
        let checksumJSON = checksum.map { "[\($0.values), \($0.intSum), \($0.stringHash)]" } ?? "null"
        print("{\"times\": [\(timesJSON)], \"peak_rss_kib\": \(peak), \"checksum\": \(checksumJSON)\(extra)}")
    }

    // MARK: Measuring

    /// Seconds on the monotonic clock.
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }

    /// The process's peak resident set (VmHWM in /proc/self/status), in KiB. Read from the
    /// process's own memory map rather than getrusage, whose ru_maxrss can carry the parent's
    /// peak across exec.
    static func peakResidentKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmHWM:") })
        else { return -1 }
        return Int(line.split(separator: " ", omittingEmptySubsequences: true)[1]) ?? -1
    }
}

struct Failure: Error, CustomStringConvertible {
    let message: String
    var description: String { message }
}

/// What every system's read must agree on (peers.py computes the same from its reads, and
/// the expected one from the workload's formula): the number of values, the sum of the
/// integers, and Σ over strings of Σ (position + 1) × byte.
struct Checksum {
    var values = 0
    var intSum: Int64 = 0
    var stringHash: Int64 = 0

    init(_ rows: [(ref: RecordRef, fields: [(name: String, value: FieldValue)])]) {
        for row in rows {
            for field in row.fields {
                values += 1
                switch field.value {
                case let .scalar(.int(value)):
                    intSum += value
                case let .scalar(.string(value)):
                    for (index, byte) in value.utf8.enumerated() { stringHash += Int64(index + 1) * Int64(byte) }
                default:
                    preconditionFailure("unexpected value \(field.value)")
                }
            }
        }
    }
}
