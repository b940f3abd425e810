import ConcordCore
import GRDB
import GRDBSQLite

/// The columns of the current row of a statement stepped through SQLite's C API, read in
/// place: the point read (``PointReader``) and the snapshot writer's scan of every record
/// (`SlotIO.forEachRecord`), where GRDB's rows and cursors cost more than SQLite's work.
struct Columns: StoredColumns {
    let statement: OpaquePointer

    init(_ statement: OpaquePointer) {
        self.statement = statement
    }

    /// Steps the statement to its end, calling `body` for each row (whose columns this
    /// reads). A step that fails throws SQLite's error, naming `sql`.
    func forEachRow(sql: String, _ body: () throws -> Void) throws {
        while true {
            let code = sqlite3_step(statement)
            if code == SQLITE_DONE { return }
            guard code == SQLITE_ROW else { throw DatabaseError(code: code, on: sqlite3_db_handle(statement), sql: sql) }
            try body()
        }
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(statement, column)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(statement, column) == SQLITE_NULL
    }

    /// Text as UTF-8 (the empty string for NULL).
    func text(_ column: Int32) -> String {
        guard let base = sqlite3_column_text(statement, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: base, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }

    func double(_ column: Int32) -> Double {
        sqlite3_column_double(statement, column)
    }

    func blob(_ column: Int32) -> [UInt8]? {
        guard sqlite3_column_type(statement, column) == SQLITE_BLOB else { return nil }
        return bytes(column) { Array($0) }
    }

    /// `body` over a blob's bytes in SQLite's memory, valid only during the call.
    func bytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let base = sqlite3_column_blob(statement, column)
        return body(UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : Int(sqlite3_column_bytes(statement, column))))
    }

    /// The stamp in an hlc column (stored with its top bit flipped, ``Rows/hlc(_:)``) and a
    /// replica column.
    func stamp(hlc: Int32, replica: Int32) throws -> Stamp {
        let id = bytes(replica) { ReplicaID(bytes: $0) }
        guard let id else { throw ConcordError(.corrupt, "a replica id is not 16 bytes") }
        return Stamp(hlc: Rows.hlc(stored: sqlite3_column_int64(statement, hlc)), replica: id)
    }
}

extension DatabaseError {
    /// The error a call of SQLite's C API returned on `connection`, as GRDB reports its own:
    /// the result code, SQLite's message and the statement.
    init(code: Int32, on connection: OpaquePointer?, sql: String) {
        self.init(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(connection)), sql: sql)
    }
}
