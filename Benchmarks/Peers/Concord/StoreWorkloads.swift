import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation

// The durable store on the peers' inputs (Benchmarks/README.md, "Peers"): ConcordStore's
// Store, SQLite in files under the run's directory, no encryption — what a sync does with a
// delta or a snapshot once it has decrypted it.
//
//   store-merge      a store holding the base state applies the 100k-operation delta's
//                    bytes (decode + apply, one transaction: `Store.apply(encoded:)`)
//   store-load-read  open a store holding the base state and read every record of the
//                    collection, typed values (`Store.records(in:)`)
//   store-join       a new, empty store joins the base snapshot as it is read
//                    (`Store.join(snapshot:)` with a `SnapshotReader`, as a sync's bootstrap)

extension PeersConcord {
    /// One warm-up and `repeats` timed repetitions of a store workload, each on a store file
    /// of its own, deleted afterwards. The peak resident set is read before the last store is
    /// read back to check it (except in store-load-read, whose read is the workload).
    static func runStore(_ workload: String, in directory: String, repeats: Int) throws
        -> (times: [Double], peak: Int, checksum: Checksum, extra: String)
    {
        let snapshot = try read(.baseSnapshot, in: directory)
        var times: [Double] = []
        switch workload {
        case "store-merge":
            // Before the timer: a new store joins the base snapshot and is closed, then
            // opened again (a store on disk holding the base state, as an app opens it).
            let delta = try read(.fullDelta, in: directory)
            return try timedOnFreshStores(workload, in: directory, repeats: repeats, prepare: { try joined(snapshot, at: $0) }) { store in
                let outcome = try store.apply(encoded: delta)
                precondition(outcome == .applied)
            }
        case "store-load-read":
            // Before the timer: one store holding the base state, closed. Timed: open it and
            // read every record; the read alone is reported too ("read_times").
            let path = storePath(workload, 0, in: directory)
            try joined(snapshot, at: path)
            defer { removeStore(at: path) }
            var readTimes: [Double] = []
            var rows: [(id: String, fields: [(name: String, value: FieldValue)])] = []
            for iteration in 0...repeats {
                rows = []
                let start = now()
                let store = try Store(path: path)
                let opened = now()
                rows = try store.records(in: "items")
                let elapsed = now() - start
                if iteration > 0 {
                    times.append(elapsed)
                    readTimes.append(now() - opened)
                }
            }
            let peak = peakResidentKiB()
            return (times, peak, Checksum(rows), ", \"read_times\": [\(readTimes.map { String($0) }.joined(separator: ", "))]")
        case "store-join":
            // Before the timer: a new, empty store. Timed: read the snapshot's bytes and join them.
            return try timedOnFreshStores(workload, in: directory, repeats: repeats) { store in
                let outcome = try store.join(snapshot: try SnapshotReader(snapshot))
                precondition(outcome == .applied)
            }
        default:
            usage()
        }
    }

    /// One warm-up and `repeats` timed runs of `timed`, each on a store of its own at a new
    /// path (`prepare`d before the store is opened), the previous one removed as the next
    /// begins; then the peak resident set, and the last store read back, checked and removed.
    static func timedOnFreshStores(
        _ workload: String, in directory: String, repeats: Int, prepare: (String) throws -> Void = { _ in }, timed: (Store) throws -> Void
    ) throws -> (times: [Double], peak: Int, checksum: Checksum, extra: String) {
        var times: [Double] = []
        var last: Store?
        for iteration in 0...repeats {
            if let previous = last?.path {
                last = nil
                removeStore(at: previous)
            }
            let path = storePath(workload, iteration, in: directory)
            try prepare(path)
            let store = try Store(path: path)
            let start = now()
            try timed(store)
            let elapsed = now() - start
            if iteration > 0 { times.append(elapsed) }
            last = store
        }
        let peak = peakResidentKiB()
        let checksum = Checksum(try last!.records(in: "items"))
        let path = last!.path
        last = nil
        removeStore(at: path)
        return (times, peak, checksum, "")
    }

    /// A new store at `path` that has joined `snapshot`, closed when this returns.
    static func joined(_ snapshot: [UInt8], at path: String) throws {
        let store = try Store(path: path)
        let outcome = try store.join(snapshot: try SnapshotReader(snapshot))
        precondition(outcome == .applied)
    }

    static func storePath(_ workload: String, _ iteration: Int, in directory: String) -> String {
        let path = "\(directory)/\(workload)-\(getpid())-\(iteration).db"
        removeStore(at: path)
        return path
    }

    static func removeStore(at path: String) {
        for suffix in ["", "-wal", "-shm", ".blobs"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }
}

/// The values the workloads write: `recycled` is `Workload.value` (integers on even fields,
/// `v{record mod 1000}-{round}` on odd ones: 1,000 distinct strings per round); `unique` has
/// the same integers and a string on each odd field that no other field, record or round
/// has: "u" and six base-32 digits of a bijective mix of (round, record, field) (peers.py's
/// `value` computes the same).
enum Values: String {
    case recycled, unique

    func value(record: Int, field: Int, round: Int) -> ScalarValue {
        switch self {
        case .recycled:
            return Workload.value(record: record, field: field, round: round)
        case .unique:
            guard field % 2 == 1 else { return Workload.value(record: record, field: field, round: round) }
            return .string(Values.uniqueString(UInt32((round * records + record) * fields + field)))
        }
    }

    /// "u" and the 30-bit mix of `n` in six base-32 digits, least significant first. An odd
    /// multiplier and an addition modulo 2^30 are bijections, so distinct `n` below 2^30
    /// give distinct strings.
    static func uniqueString(_ n: UInt32) -> String {
        let mask: UInt32 = (1 << 30) - 1
        var x = (n &* 2_654_435_761 &+ 0x9E37_79B9) & mask
        let digits = Array("0123456789abcdefghijklmnopqrstuv".utf8)
        var bytes: [UInt8] = [UInt8(ascii: "u")]
        for _ in 0..<6 {
            bytes.append(digits[Int(x & 31)])
            x >>= 5
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

extension Checksum {
    /// The checksum of a store's read (`Store.records(in:)`).
    init(_ rows: [(id: String, fields: [(name: String, value: FieldValue)])]) {
        self.init(rows.map { (ref: RecordRef(collection: "items", id: $0.id), fields: $0.fields) })
    }
}
