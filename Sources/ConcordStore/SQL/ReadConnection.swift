import GRDBSQLite

/// A connection of its own to a store file, beside the store's `DatabasePool`, that only
/// reads, with one statement prepared once and driven through SQLite's C API; closed when
/// dropped. The point reads (``PointReader``) and the commit poll (``CommitPoller``) each
/// hold one.
///
/// It is opened read-write (a WAL reader must be able to write the shared-memory index)
/// with `query_only` set, and never writes.
final class ReadConnection {
    let handle: OpaquePointer
    /// The statement, prepared persistent: reset it after each use.
    let statement: OpaquePointer
    /// A second statement (`also`), prepared the same way, if asked for.
    let second: OpaquePointer?

    /// The connection to `path` with `sql` (and `also`) prepared, waiting up to
    /// `busyTimeout` milliseconds on a locked file; nil if SQLite could not open it or
    /// prepare a statement.
    init?(path: String, busyTimeout: Int32, sql: String, also: String? = nil) {
        var handle: OpaquePointer?
        guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
            sqlite3_close(handle)
            return nil
        }
        var statement: OpaquePointer?
        guard sqlite3_busy_timeout(handle, busyTimeout) == SQLITE_OK,
              sqlite3_exec(handle, "PRAGMA query_only = 1", nil, nil, nil) == SQLITE_OK,
              sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
              let statement
        else {
            sqlite3_close(handle)
            return nil
        }
        var second: OpaquePointer?
        if let also {
            guard sqlite3_prepare_v3(handle, also, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &second, nil) == SQLITE_OK, second != nil else {
                sqlite3_finalize(statement)
                sqlite3_close(handle)
                return nil
            }
        }
        self.handle = handle
        self.statement = statement
        self.second = second
    }

    deinit {
        sqlite3_finalize(second)
        sqlite3_finalize(statement)
        sqlite3_close(handle)
    }
}
