import Benchmark
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDBSQLite

/// The store against raw SQLite doing the same rows in the same run, through the C API
/// (issue: "each as a ratio against raw SQLite"). Every iteration measures both and records
/// `raw ms`, `store ms` and `ratio ×100` (raw time ÷ store time × 100: 100 = as fast as
/// raw SQLite, 50 = half its throughput).
///
/// Workload: 10,000 records × 10 fields (integers and short strings), 100,000 field writes
/// (into new records, then again as updates of the same records).
/// Each baseline does exactly the work the store must do, no more: local writes are 1,000
/// rows per transaction on both sides (the store: 1,000 fields per `write {}`); the remote
/// delta is applied in one transaction on both sides; a point read uses a prepared statement
/// kept across reads on both sides, and the raw side reads each value by its type into an
/// array of (name, value), as the store's result holds them (no text formatting, no
/// dictionary).
///
/// The files go to `$CONCORD_BENCH_DIR` (default: the temporary folder): run once with
/// `/dev/shm` (tmpfs, the CPU-bound worst case) and once on the ordinary disk.
let benchmarks: @Sendable () -> Void = {
    let records = 10_000
    let fields = 10
    let configuration = Benchmark.Configuration(
        metrics: [.custom("raw ms"), .custom("store ms"), .custom("ratio ×100", polarity: .prefersLarger)],
        scalingFactor: .one,
        maxDuration: .seconds(60),
        maxIterations: 5
    )

    let names = (0..<fields).map { "field\($0)" }
    /// Every field of every record set through the store, 1,000 fields per `write {}`.
    @Sendable func writeAll(_ store: Store, round: Int) throws {
        for batch in stride(from: 0, to: records, by: 100) {
            try store.write { tx throws(ConcordError) in
                for record in batch..<(batch + 100) {
                    let ref = RecordRef(collection: "items", id: "item\(record)")
                    for field in 0..<fields {
                        try tx.set(ref, names[field], Workload.value(record: record, field: field, round: round))
                    }
                }
            }
        }
    }

    Benchmark("local field writes vs raw SQLite upsert", configuration: configuration) { benchmark in
        let directory = Scratch()
        let raw = try RawSQLite(path: directory.file("raw.db"))
        let rawTime = try time { try raw.upsertRows(records: records, fields: fields, round: 0, merge: false, rowsPerTransaction: 1_000) }
        let store = try Store(path: directory.file("store.db"))
        let storeTime = try time { try writeAll(store, round: 0) }
        report(benchmark, raw: rawTime, store: storeTime)
    }

    // The same writes again, over the records the first round wrote: an app's common write
    // is an update.
    Benchmark("local field updates vs raw SQLite upsert", configuration: configuration) { benchmark in
        let directory = Scratch()
        let raw = try RawSQLite(path: directory.file("raw.db"))
        try raw.upsertRows(records: records, fields: fields, round: 0, merge: false, rowsPerTransaction: 1_000)
        let rawTime = try time { try raw.upsertRows(records: records, fields: fields, round: 1, merge: false, rowsPerTransaction: 1_000) }
        let store = try Store(path: directory.file("store.db"))
        try writeAll(store, round: 0)
        let storeTime = try time { try writeAll(store, round: 1) }
        report(benchmark, raw: rawTime, store: storeTime)
    }

    Benchmark("apply 100k-op remote delta vs raw SQLite LWW merge upsert", configuration: configuration) { benchmark in
        let directory = Scratch()
        var writer = Replica(id: ReplicaID(high: 0xa, low: 1))
        let first = Workload.fieldWrites(on: &writer, records: records, fields: fields, round: 0)
        let second = Workload.fieldWrites(on: &writer, records: records, fields: fields, round: 1)
        let raw = try RawSQLite(path: directory.file("raw.db"))
        try raw.upsertRows(records: records, fields: fields, round: 0, merge: true, rowsPerTransaction: records * fields)
        let rawTime = try time { try raw.upsertRows(records: records, fields: fields, round: 1, merge: true, rowsPerTransaction: records * fields) }
        let store = try Store(path: directory.file("store.db"))
        try store.apply(first)
        let storeTime = try time { try store.apply(second) }
        report(benchmark, raw: rawTime, store: storeTime)
    }

    Benchmark("point read of a whole record vs raw SQLite", configuration: configuration) { benchmark in
        let directory = Scratch()
        var writer = Replica(id: ReplicaID(high: 0xa, low: 1))
        let delta = Workload.fieldWrites(on: &writer, records: records, fields: fields, round: 0)
        let raw = try RawSQLite(path: directory.file("raw.db"))
        try raw.upsertRows(records: records, fields: fields, round: 0, merge: false, rowsPerTransaction: records * fields)
        let store = try Store(path: directory.file("store.db"))
        try store.apply(delta)
        let reads = 10_000
        let rawTime = try time { for index in 0..<reads { try raw.readRecord(id: "item\((index * 7_919) % records)") } }
        let storeTime = try time {
            for index in 0..<reads {
                blackHole(try store.record(RecordRef(collection: "items", id: "item\((index * 7_919) % records)")))
            }
        }
        // Per-read latency in microseconds ×100 as well as the ratio.
        benchmark.measurement(.custom("raw µs/read ×100"), Int(rawTime * 1e8 / Double(reads)))
        benchmark.measurement(.custom("store µs/read ×100"), Int(storeTime * 1e8 / Double(reads)))
        report(benchmark, raw: rawTime, store: storeTime)
    }
}

func report(_ benchmark: Benchmark, raw: Double, store: Double) {
    benchmark.measurement(.custom("raw ms"), Int(raw * 1_000))
    benchmark.measurement(.custom("store ms"), Int(store * 1_000))
    benchmark.measurement(.custom("ratio ×100", polarity: .prefersLarger), Int(raw / store * 100))
}

func time(_ body: () throws -> Void) throws -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

final class Scratch {
    let path = (ProcessInfo.processInfo.environment["CONCORD_BENCH_DIR"] ?? NSTemporaryDirectory()) + "/concord-bench-\(UInt64.random(in: 0...UInt64.max))"
    init() { try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

/// Raw SQLite through the C API: the baseline. WAL mode and synchronous = FULL, as the store.
final class RawSQLite {
    var db: OpaquePointer?

    init(path: String) throws {
        guard sqlite3_open(path, &db) == SQLITE_OK else { throw BenchError("open") }
        try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
        try exec("""
            CREATE TABLE fields (collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL, value ANY,
                stamp INTEGER NOT NULL, PRIMARY KEY (collection, id, field)) STRICT, WITHOUT ROWID
            """)
    }

    deinit {
        sqlite3_finalize(read)
        sqlite3_close(db)
    }

    /// The point read's statement, prepared once (as the store caches its statements).
    private var read: OpaquePointer?

    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
    }

    /// Upserts records × fields rows, `rowsPerTransaction` per transaction; `merge` uses the
    /// LWW upsert `ON CONFLICT … DO UPDATE … WHERE excluded.stamp > stamp`.
    func upsertRows(records: Int, fields: Int, round: Int, merge: Bool, rowsPerTransaction: Int) throws {
        let sql = merge
            ? "INSERT INTO fields VALUES (?, ?, ?, ?, ?) ON CONFLICT (collection, id, field) DO UPDATE SET value = excluded.value, stamp = excluded.stamp WHERE excluded.stamp > stamp"
            : "INSERT INTO fields VALUES (?, ?, ?, ?, ?) ON CONFLICT (collection, id, field) DO UPDATE SET value = excluded.value, stamp = excluded.stamp"
        var statement: OpaquePointer?
        guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw BenchError("prepare") }
        defer { sqlite3_finalize(statement) }
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        let names = (0..<fields).map { "field\($0)" }
        var row = 0
        try exec("BEGIN")
        for record in 0..<records {
            let id = "item\(record)"
            for field in 0..<fields {
                sqlite3_bind_text(statement, 1, "items", -1, transient)
                sqlite3_bind_text(statement, 2, id, -1, transient)
                sqlite3_bind_text(statement, 3, names[field], -1, transient)
                switch Workload.value(record: record, field: field, round: round) {
                case let .int(value): sqlite3_bind_int64(statement, 4, value)
                case let .string(value): sqlite3_bind_text(statement, 4, value, -1, transient)
                default: sqlite3_bind_null(statement, 4)
                }
                sqlite3_bind_int64(statement, 5, Int64(round * 1_000_000 + row))
                guard sqlite3_step(statement) == SQLITE_DONE else { throw BenchError(String(cString: sqlite3_errmsg(db))) }
                sqlite3_reset(statement)
                row += 1
                if row % rowsPerTransaction == 0 {
                    try exec("COMMIT")
                    try exec("BEGIN")
                }
            }
        }
        try exec("COMMIT")
    }

    func readRecord(id: String) throws {
        if read == nil, sqlite3_prepare_v3(db, "SELECT field, value FROM fields WHERE collection = 'items' AND id = ?", -1, UInt32(SQLITE_PREPARE_PERSISTENT), &read, nil) != SQLITE_OK {
            throw BenchError("prepare")
        }
        let statement = read
        defer { sqlite3_reset(statement) }
        sqlite3_bind_text(statement, 1, id, -1, unsafeBitCast(-1, to: sqlite3_destructor_type.self))
        // What the store's result needs and no more: each field's name and its value read by
        // its type, appended to an array in the index's order (the store returns
        // `[(name, FieldValue)]` sorted by name).
        var fields: [(name: String, value: ScalarValue)] = []
        while sqlite3_step(statement) == SQLITE_ROW {
            let name = String(cString: sqlite3_column_text(statement, 0))
            switch sqlite3_column_type(statement, 1) {
            case SQLITE_INTEGER: fields.append((name, .int(sqlite3_column_int64(statement, 1))))
            case SQLITE_TEXT: fields.append((name, .string(String(cString: sqlite3_column_text(statement, 1)))))
            default: fields.append((name, .null))
            }
        }
        blackHole(fields)
    }
}

struct BenchError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}
