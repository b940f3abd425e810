import ConcordTesting
import GRDBSQLite

/// Raw SQLite through the C API, the baseline the scale tools measure the store against:
/// `records` records × `fields` fields (`Workload.value`, round 0, fields named `field0`…)
/// inserted into a table of (collection, id, field, value, stamp) at `path`, in WAL mode
/// with `synchronous = FULL` as the store, `recordsPerTransaction` records per transaction.
/// Returns the rows inserted.
public func rawInsert(path: String, records: Int, fields: Int, recordsPerTransaction: Int) -> Int64 {
    var db: OpaquePointer?
    func exec(_ sql: String) {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { fatalError(String(cString: sqlite3_errmsg(db))) }
    }
    guard sqlite3_open(path, &db) == SQLITE_OK else { fatalError("open \(path)") }
    defer { sqlite3_close(db) }
    exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
    exec("""
        CREATE TABLE fields (collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL, value ANY,
            stamp INTEGER NOT NULL, PRIMARY KEY (collection, id, field)) STRICT, WITHOUT ROWID
        """)
    var statement: OpaquePointer?
    guard sqlite3_prepare_v2(db, "INSERT INTO fields VALUES (?, ?, ?, ?, ?)", -1, &statement, nil) == SQLITE_OK else { fatalError("prepare") }
    defer { sqlite3_finalize(statement) }
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    let names = (0..<fields).map { "field\($0)" }
    var row: Int64 = 0
    for first in stride(from: 0, to: records, by: max(recordsPerTransaction, 1)) {
        exec("BEGIN")
        for record in first..<min(records, first + max(recordsPerTransaction, 1)) {
            let id = "item\(record)"
            for field in 0..<fields {
                sqlite3_bind_text(statement, 1, "items", -1, transient)
                sqlite3_bind_text(statement, 2, id, -1, transient)
                sqlite3_bind_text(statement, 3, names[field], -1, transient)
                switch Workload.value(record: record, field: field, round: 0) {
                case let .int(value): sqlite3_bind_int64(statement, 4, value)
                case let .string(value): sqlite3_bind_text(statement, 4, value, -1, transient)
                default: sqlite3_bind_null(statement, 4)
                }
                sqlite3_bind_int64(statement, 5, row)
                guard sqlite3_step(statement) == SQLITE_DONE else { fatalError(String(cString: sqlite3_errmsg(db))) }
                sqlite3_reset(statement)
                row += 1
            }
        }
        exec("COMMIT")
    }
    return row
}
