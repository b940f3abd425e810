// Sealing a backlog at scale (see README.md, "Scale"): a store writes RECORDS records × 10
// fields, 1,000 records per `write {}`, then seals its whole outbox in bounded batches of at
// most MAX_SLOTS slots (50,000, as a push does), each batch one `seal(maxSlots:)`. Then, in
// the same run, raw SQLite (the C API; WAL, synchronous = FULL, a (collection, id, field,
// value, stamp) WITHOUT ROWID table, as StoreBenchmarks' baseline) inserts the same records ×
// 10 fields, as many records per transaction as the seal's first batch held: what a seal
// of each batch is measured against.
//
//   SealBenchmark DIR RECORDS [MAX_SLOTS]
//
// Prints the writes' time, every tenth batch's time (and the first and last five), and one
// summary line: `seal records=… batches=… ms=… records_per_s=… first_batch_ms=…
// last_batch_ms=… peak_rss_mib=…`, where first and last are the medians of the first and
// last five batches (the peak is the seal's, taken before the raw side runs); then
// `raw records=… rows_per_transaction=… ms=… records_per_s=…` and `ratio seal/raw=…`, the
// seal's throughput over raw SQLite's (the target is at least 0.5). The store is
// DIR/seal.db and the raw database DIR/raw.db, both removed at the end.
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import RawSQLiteBaseline
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let arguments = CommandLine.arguments
guard arguments.count == 3 || arguments.count == 4, let records = Int(arguments[2]),
      let maxSlots = arguments.count == 4 ? Int(arguments[3]) : 50_000
else {
    FileHandle.standardError.write(Data("usage: SealBenchmark DIR RECORDS [MAX_SLOTS]\n".utf8))
    exit(2)
}
let fields = 10
let names = (0..<fields).map { "field\($0)" }
try FileManager.default.createDirectory(atPath: arguments[1], withIntermediateDirectories: true)
let path = arguments[1] + "/seal.db"
let rawPath = arguments[1] + "/raw.db"
func remove() {
    for suffix in ["", "-wal", "-shm", ".blobs"] {
        try? FileManager.default.removeItem(atPath: path + suffix)
        try? FileManager.default.removeItem(atPath: rawPath + suffix)
    }
}
remove()
defer { remove() }

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
}

/// This process's peak resident set, in MiB.
func peakResidentMiB() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss / 1_024
}

let store = try Store(path: path)
let writeStart = ContinuousClock.now
for batch in stride(from: 0, to: records, by: 1_000) {
    try store.write { tx throws(ConcordError) in
        for record in batch..<min(records, batch + 1_000) {
            let ref = RecordRef(collection: "items", id: "item\(record)")
            for field in 0..<fields { try tx.set(ref, names[field], Workload.value(record: record, field: field, round: 0)) }
        }
    }
}
let written = milliseconds(ContinuousClock.now - writeStart)
print(String(format: "writes records=%d fields=%d ms=%.0f records_per_s=%.0f", records, records * fields, written, Double(records) / written * 1_000))

var batches: [Double] = []
var firstBatchRecords = 0
var sealedRecords = 0
var sealedSlots = 0
let sealStart = ContinuousClock.now
while true {
    let start = ContinuousClock.now
    guard let delta = try store.seal(maxSlots: maxSlots)?.delta else { break }
    let elapsed = milliseconds(ContinuousClock.now - start)
    batches.append(elapsed)
    if batches.count == 1 { firstBatchRecords = delta.records.count }
    sealedRecords += delta.records.count
    sealedSlots += delta.records.reduce(0) { $0 + $1.slots.count }
    let index = batches.count
    if index <= 5 || index % 10 == 0 {
        print(String(format: "batch %d: %d records, %d slots, %.1f ms", index, delta.records.count, delta.records.reduce(0) { $0 + $1.slots.count }, elapsed))
    }
}
let sealed = milliseconds(ContinuousClock.now - sealStart)
for (index, elapsed) in batches.enumerated().suffix(5) where index >= 5 && (index + 1) % 10 != 0 {
    print(String(format: "batch %d: %.1f ms", index + 1, elapsed))
}
func median(_ values: ArraySlice<Double>) -> Double { values.sorted()[values.count / 2] }
guard !batches.isEmpty, sealedRecords == records, try store.pendingChangeCount() == 0 else {
    FileHandle.standardError.write(Data("sealed \(sealedRecords) of \(records) records in \(batches.count) batches\n".utf8))
    exit(1)
}
print(String(format: "seal records=%d slots=%d batches=%d ms=%.0f records_per_s=%.0f first_batch_ms=%.1f last_batch_ms=%.1f peak_rss_mib=%d",
             records, sealedSlots, batches.count, sealed, Double(records) / sealed * 1_000,
             median(batches.prefix(5)), median(batches.suffix(5)), peakResidentMiB()))

let rawStart = ContinuousClock.now
_ = rawInsert(path: rawPath, records: records, fields: fields, recordsPerTransaction: max(firstBatchRecords, 1))
let raw = milliseconds(ContinuousClock.now - rawStart)
print(String(format: "raw records=%d rows_per_transaction=%d ms=%.0f records_per_s=%.0f",
             records, max(firstBatchRecords, 1) * fields, raw, Double(records) / raw * 1_000))
print(String(format: "ratio seal/raw=%.3f (target >= 0.5)", raw / sealed))
