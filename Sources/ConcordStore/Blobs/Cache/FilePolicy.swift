import ConcordCore
import Foundation
import GRDB

/// When a replica fetches the content of the files its records reference (README, "Large
/// files and small devices").
///
/// - ``Mode-swift.enum/eager`` (the default): a pull fetches every file a batch or snapshot
///   references before it applies it, so a record appears with its files, and every file a
///   record references is local (a replica switched back from on demand fetches what it
///   lacks in its next syncs).
/// - ``Mode-swift.enum/onDemand``: a pull applies records at once, each file field's hash,
///   size and media type known and its content not local; reading the content
///   (`SyncEngine.localFile(_:)`, `concord export`) fetches it, checks it against its hash and
///   keeps it. Contents nobody pinned are a cache: over ``budget`` the least recently read
///   are evicted (``Store/evictFiles(toFit:keeping:)``).
///
/// A declared collection, or one of its file fields, may have a mode of its own
/// (``FilePolicyScope``); what a sync fetches ahead of reading is ``FilePrefetch``.
///
/// The policy is this replica's own: it changes what this replica keeps, never what it
/// syncs or how records merge.
public struct FilePolicy: Hashable, Sendable {
    public enum Mode: String, Hashable, Sendable {
        case eager
        case onDemand = "on-demand"
    }

    public var mode: Mode
    /// The most bytes of cached (evictable) contents to keep; nil for no limit. Pinned
    /// contents, contents this replica wrote and has not pushed, and those a fork or history
    /// version holds count toward the total but are never evicted. Only meaningful on demand
    /// (of the store, or of a collection or field).
    public var budget: UInt64?

    public init(_ mode: Mode, budget: UInt64? = nil) {
        self.mode = mode
        self.budget = budget
    }

    public static let eager = FilePolicy(.eager)
}

extension Store {
    /// This replica's file policy (default ``FilePolicy/eager``).
    public func filePolicy() throws(ConcordError) -> FilePolicy {
        try read { db in try Self.filePolicy(db) }
    }

    /// Sets this replica's file policy (its scopes and prefetch threshold stay). A budget is
    /// refused in eager mode unless a collection or field is on demand (every file is kept
    /// otherwise): `invalidOperation`.
    public func setFilePolicy(_ policy: FilePolicy) throws(ConcordError) {
        if let budget = policy.budget, budget > UInt64(Int64.max) {
            throw ConcordError(.invalidOperation, "a budget of \(budget) bytes is past the largest the store records (2^63 − 1)")
        }
        try writeDatabase { db in
            if policy.mode == .eager, policy.budget != nil, try !Bool.fetchAll(db, sql: "SELECT on_demand = 1 FROM concord_file_policy_scopes").contains(true) {
                throw ConcordError(.invalidOperation, "a byte budget needs the on-demand policy (for the store, or a collection or field): an eager replica keeps every file")
            }
            // Back to eager from on demand: the next syncs fetch what is not local.
            let wasOnDemand = try Self.filePolicy(db).mode == .onDemand
            let fill = policy.mode == .eager && wasOnDemand
            try db.execute(sql: """
                INSERT INTO concord_file_policy (singleton, on_demand, budget, fill_pending) VALUES (1, ?, ?, ?)
                ON CONFLICT (singleton) DO UPDATE SET on_demand = excluded.on_demand, budget = excluded.budget,
                    fill_pending = max(fill_pending, excluded.fill_pending)
                """, arguments: [policy.mode == .onDemand ? 1 : 0, policy.budget.map { Int64($0) }, fill ? 1 : 0])
        }
    }

    /// Whether an eager replica still has contents to fetch since it left on demand.
    package func eagerFillPending() throws(ConcordError) -> Bool {
        try read { db in try Bool.fetchOne(db, sql: "SELECT fill_pending FROM concord_file_policy WHERE singleton = 1") ?? false }
    }

    /// Notes that an eager replica holds every content it references again.
    package func eagerFillDone() throws(ConcordError) {
        try writeDatabase { db in try db.execute(sql: "UPDATE concord_file_policy SET fill_pending = 0") }
    }

    static func filePolicy(_ db: Database) throws -> FilePolicy {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT on_demand, budget FROM concord_file_policy WHERE singleton = 1")) else {
            return .eager
        }
        let budget: Int64? = row["budget"]
        return FilePolicy((row["on_demand"] as Int64) == 1 ? .onDemand : .eager, budget: budget.map { UInt64($0) })
    }
}

extension Schema {
    /// Migration "v10-files-on-demand": the file policy (one row), the contents held locally
    /// (``Store/localFiles()``: size, last read, whether the remote is known to hold it),
    /// pins, and the contents found gone from the remote.
    static func migrateToFilesOnDemand(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE concord_file_policy (
                singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1),
                on_demand INTEGER NOT NULL, budget INTEGER,
                fill_pending INTEGER NOT NULL DEFAULT 0  -- eager again: fetch what is not local
            ) STRICT;
            CREATE TABLE concord_local_files (
                hash BLOB PRIMARY KEY NOT NULL, size INTEGER NOT NULL,
                last_read INTEGER NOT NULL, on_remote INTEGER NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX concord_local_files_read ON concord_local_files (last_read);
            CREATE TABLE concord_file_pins (
                collection TEXT NOT NULL, scope INTEGER NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
                PRIMARY KEY (collection, scope, id, field)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_unavailable_files (hash BLOB PRIMARY KEY NOT NULL, reason TEXT NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_local_files_pending (singleton INTEGER PRIMARY KEY NOT NULL CHECK (singleton = 1)) STRICT;
            INSERT INTO concord_local_files_pending (singleton) VALUES (1);
            """)
        try addDeclaredLocalColumns(db)
    }
}
