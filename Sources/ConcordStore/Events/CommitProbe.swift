import ConcordCore
import GRDBSQLite
import Synchronization

/// Tells, cheaply, whether anyone committed to a store file since the last look — this
/// process's other connections or another process altogether (a `concord put` in another
/// terminal, an app extension).
///
/// ``Store/changes()`` publishes the commits made through one `Store` instance; commits made
/// through another instance of the same file, in this process or another, reach no stream.
/// The probe finds them with SQLite's `PRAGMA data_version` on a connection of its own: the
/// value changes exactly when another connection committed to the file since the pragma
/// last ran, and reading it touches only the WAL index in shared memory, never the database
/// pages — about a microsecond, so it can run every few hundred milliseconds all day.
///
/// The probe only says "something committed"; whether that left anything to push is the
/// caller's question (``Store/hasPendingChanges()``). A probe that cannot open its
/// connection answers `true` on every look, so a caller that relies on it does more work,
/// never less.
public final class CommitProbe: Sendable {
    private let state: Mutex<State>

    private struct State: ~Copyable {
        let handle: OpaquePointer?
        var last: Int64?

        deinit { if let handle { sqlite3_close(handle) } }
    }

    /// A probe of the store file at `path`: its first ``committedSinceLastLook()`` answers
    /// whether anything committed since this call.
    public init(path: String) {
        var handle: OpaquePointer?
        if sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) != SQLITE_OK
            || sqlite3_busy_timeout(handle, 1_000) != SQLITE_OK
            || sqlite3_exec(handle, "PRAGMA query_only = 1", nil, nil, nil) != SQLITE_OK {
            sqlite3_close(handle)
            handle = nil
        }
        var state = State(handle: handle)
        state.last = Self.dataVersion(handle)
        self.state = Mutex(state)
    }

    /// Whether a commit of another connection landed since the last call (or since the
    /// probe was made); true as well when the probe cannot tell.
    public func committedSinceLastLook() -> Bool {
        state.withLock { state in
            guard let current = Self.dataVersion(state.handle) else { return true }
            defer { state.last = current }
            return state.last != current
        }
    }

    private static func dataVersion(_ handle: OpaquePointer?) -> Int64? {
        guard let handle else { return nil }
        var statement: OpaquePointer?
        defer { sqlite3_finalize(statement) }
        guard sqlite3_prepare_v2(handle, "PRAGMA data_version", -1, &statement, nil) == SQLITE_OK,
              sqlite3_step(statement) == SQLITE_ROW
        else { return nil }
        return sqlite3_column_int64(statement, 0)
    }
}

extension Store {
    /// A ``CommitProbe`` of this store's file: finds commits made by other processes (and
    /// by other `Store` instances of the same file), which ``changes()`` does not publish.
    public func commitProbe() -> CommitProbe {
        CommitProbe(path: path)
    }
}
