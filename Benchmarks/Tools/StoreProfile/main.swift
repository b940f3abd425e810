// One store workload of StoreBenchmarks, run once, for a profiler (see README.md,
// "Profiles"): `StoreProfile writes|apply|read DIR` — under `perf record -e cpu-clock -g`
// or `valgrind --tool=callgrind`. The workloads are the benchmark's: 10,000 records × 10
// fields; 1,000 local field writes per `write {}` (`updates`: the same again over the
// records written, timed alone); one 100,000-operation remote delta
// applied over a first one; 5 × 10,000 point reads of whole records.
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation

let arguments = CommandLine.arguments
guard arguments.count == 3, ["writes", "updates", "apply", "read"].contains(arguments[1]) else {
    FileHandle.standardError.write(Data("usage: StoreProfile writes|updates|apply|read DIR\n".utf8))
    exit(2)
}
let records = 10_000
let fields = 10
let path = arguments[2] + "/profile-\(getpid()).db"
defer { for suffix in ["", "-wal", "-shm", ".blobs"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
let store = try Store(path: path)
let names = (0..<fields).map { "field\($0)" }
var writer = Replica(id: ReplicaID(high: 0xa, low: 1))
let start = ContinuousClock.now
/// Every field of every record written once, 1,000 fields per `write {}`.
func writeAll(round: Int) throws {
    for batch in stride(from: 0, to: records, by: 100) {
        try store.write { tx throws(ConcordError) in
            for record in batch..<(batch + 100) {
                let ref = RecordRef(collection: "items", id: "item\(record)")
                for field in 0..<fields { try tx.set(ref, names[field], Workload.value(record: record, field: field, round: round)) }
            }
        }
    }
}
switch arguments[1] {
case "writes":
    try writeAll(round: 0)
case "updates":
    try writeAll(round: 0)
    let updateStart = ContinuousClock.now
    try writeAll(round: 1)
    print("updates: \(ContinuousClock.now - updateStart)")
case "apply":
    try store.apply(Workload.fieldWrites(on: &writer, records: records, fields: fields, round: 0))
    let second = Workload.fieldWrites(on: &writer, records: records, fields: fields, round: 1)
    let applyStart = ContinuousClock.now
    try store.apply(second)
    print("apply: \(ContinuousClock.now - applyStart)")
default:
    try store.apply(Workload.fieldWrites(on: &writer, records: records, fields: fields, round: 0))
    let readStart = ContinuousClock.now
    // Five rounds of 10,000 reads, so the reads outweigh the set-up in a profile.
    for index in 0..<(5 * records) {
        _ = try store.record(RecordRef(collection: "items", id: "item\((index * 7_919) % records)"))
    }
    print("read: \(ContinuousClock.now - readStart)")
}
print("\(arguments[1]): \(ContinuousClock.now - start) in all")
