import ConcordCore
import Foundation
import GRDBSQLite
import Synchronization

/// Notices commits made by other processes on the store's file (`concord put` in another
/// terminal, a sync run by another app), for the observed queries (``Store/observe(_:)``).
///
/// While at least one query is observed, a connection of its own asks SQLite's
/// `PRAGMA data_version` every ``interval``: its value changes whenever another connection
/// (of this process or another) has committed since it last asked. On a change every
/// observed query reads its results again, and yields if they differ. A burst of commits
/// between two looks is seen once; none is missed, since the query then reads the state
/// after all of them. The cost while nothing changes is one cheap statement per interval
/// (it reads the WAL's shared header); the connection is closed when the last observer ends.
final class CommitWatcher: Sendable {
    /// How often the file is looked at.
    static let interval = Duration.milliseconds(50)

    private let path: String
    private let changes: DeclaredChanges
    private let state = Mutex<(observers: Int, task: Task<Void, Never>?)>((0, nil))

    init(path: String, changes: DeclaredChanges) {
        self.path = path
        self.changes = changes
    }

    /// An observer begins: the watching starts with the first.
    func begin() {
        state.withLock { state in
            state.observers += 1
            guard state.task == nil else { return }
            let path = path
            let changes = changes
            state.task = Task.detached {
                guard let version = DataVersion(path: path) else { return }
                var last = version.read()
                while !Task.isCancelled {
                    try? await Task.sleep(for: Self.interval)
                    let now = version.read()
                    if now != last {
                        last = now
                        changes.committedElsewhere()
                    }
                }
            }
        }
    }

    /// An observer ends: the watching stops with the last.
    func end() {
        state.withLock { state in
            state.observers -= 1
            if state.observers == 0 {
                state.task?.cancel()
                state.task = nil
            }
        }
    }

    /// A connection of its own with `PRAGMA data_version` prepared; closed when dropped.
    private final class DataVersion {
        let handle: OpaquePointer
        let statement: OpaquePointer

        init?(path: String) {
            var handle: OpaquePointer?
            guard sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil) == SQLITE_OK, let handle else {
                sqlite3_close(handle)
                return nil
            }
            var statement: OpaquePointer?
            guard sqlite3_busy_timeout(handle, 1_000) == SQLITE_OK,
                  sqlite3_exec(handle, "PRAGMA query_only = 1", nil, nil, nil) == SQLITE_OK,
                  sqlite3_prepare_v3(handle, "PRAGMA data_version", -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil) == SQLITE_OK,
                  let statement
            else {
                sqlite3_close(handle)
                return nil
            }
            self.handle = handle
            self.statement = statement
        }

        deinit {
            sqlite3_finalize(statement)
            sqlite3_close(handle)
        }

        /// The value now, or nil when SQLite could not read it (the file busy: read again at
        /// the next look, the change then seen).
        func read() -> Int64? {
            defer { sqlite3_reset(statement) }
            guard sqlite3_step(statement) == SQLITE_ROW else { return nil }
            return sqlite3_column_int64(statement, 0)
        }
    }
}
