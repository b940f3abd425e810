import ConcordCodec
import ConcordCore
import Foundation
import GRDB
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The system clock: milliseconds since the epoch.
public struct SystemClock: PhysicalClock {
    public init() {}
    public func millisecondsSinceEpoch() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
    }
}

/// A replica's database: one SQLite file (WAL mode) holding current values, CRDT metadata,
/// the outbox and the clock, and a directory of content-addressed files beside it
/// (docs/ARCHITECTURE.md §3).
///
/// Every write is one SQLite transaction that updates values, metadata and the outbox
/// together, so a crash leaves the store as before or after it. Remote deltas are applied
/// one transaction each and never enter the outbox.
public final class Store: Sendable {
    /// How a store behaves.
    public struct Configuration: Sendable {
        /// Where physical time comes from (the HLC's physical part).
        public var clock: any PhysicalClock
        /// How long superseded file versions are kept, in milliseconds (default 30 days).
        public var historyRetention: UInt64
        /// The directory of content-addressed files; default: the store path + ".blobs".
        public var blobDirectory: String?
        /// Where a new replica id comes from: when the store file is created, and when it
        /// continues under a new id (a restored copy). Default: 128 random bits from the
        /// system's generator. Tests that replay from a seed draw them from it.
        public var newReplicaID: @Sendable () -> ReplicaID

        public init(
            clock: any PhysicalClock = SystemClock(), historyRetention: UInt64 = 30 * 86_400_000, blobDirectory: String? = nil,
            newReplicaID: @escaping @Sendable () -> ReplicaID = Configuration.randomReplicaID
        ) {
            self.clock = clock
            self.historyRetention = historyRetention
            self.blobDirectory = blobDirectory
            self.newReplicaID = newReplicaID
        }

        /// A replica id of 128 bits from the system's random generator.
        @Sendable public static func randomReplicaID() -> ReplicaID {
            var generator = SystemRandomNumberGenerator()
            return ReplicaID.random(using: &generator)
        }
    }

    /// This replica's id, chosen when the store file was created (and changed only by
    /// ``adoptIdentity(_:sharedThrough:)``, when the store turns out to be a restored copy).
    public var replicaID: ReplicaID { identity.withLock { $0 } }
    let identity: Mutex<ReplicaID>
    /// The store file's path.
    public let path: String
    /// The content-addressed files.
    public let blobs: BlobStore
    let database: DatabasePool
    /// The connection of point reads (``record(_:)``).
    let pointReader: PointReader
    /// What the store was opened with.
    public let configuration: Configuration
    let events: Broadcaster<ChangeEvent>
    /// What observed queries wait on: which declared collections changed (``observe(_:)``).
    let declaredChanges = DeclaredChanges()
    /// The declarations last read, kept while the schema does not change.
    let declarationCache = DeclarationCache()
    /// The one poll for other connections' commits: observed queries (``observe(_:)``),
    /// live sync and the ``commitProbe()``s share it.
    let commitPoller: CommitPoller
    /// The fleet's schema-version events (``schemaEvents()``).
    let schemaEventStream = Broadcaster<SchemaEvent>(bufferingPolicy: .unbounded)

    /// Opens the store at `path`, creating it (with a fresh replica id) if missing.
    ///
    /// ```swift
    /// let store = try Store(path: "games.db")  // its files go to games.db.blobs/
    /// try store.setName("laptop")              // the device name other replicas see
    /// ```
    ///
    /// One instance serves every task (the store is `Sendable`); `configuration` sets the
    /// clock, the file history's retention and the file directory.
    ///
    /// - Throws: `ConcordError` with code `corrupt` (not a Concord store), `newerSchema`
    ///   (written by a newer release) or `storage` (unreadable, locked, read-only, full).
    public init(path: String, configuration: Configuration = Configuration()) throws(ConcordError) {
        self.path = path
        self.configuration = configuration
        self.events = Broadcaster(bufferingPolicy: .unbounded)
        do {
            var config = GRDB.Configuration()
            config.busyMode = .timeout(10)
            // `concord_blob_local(hash)`: whether a content is in the blob directory (the
            // declared tables' `concord_local__` columns are pivoted with it).
            let blobFunction = BlobStore.localFunction(directory: configuration.blobDirectory ?? path + ".blobs")
            config.prepareDatabase { db in db.add(function: blobFunction) }
            database = try DatabasePool(path: path, configuration: config)
            // Every commit synced to the disk: an acknowledged write survives a power cut.
            // Set on the writer once the pool is open — GRDB sets `synchronous = NORMAL` on
            // it after `prepareDatabase` runs, which syncs the WAL only at checkpoints.
            try database.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = FULL") }
            let migrator = Schema.migrator
            let known = try database.read { db in try migrator.hasBeenSuperseded(db) }
            if known {
                throw ConcordError(.newerSchema, "\(path) was written by a newer release of Concord; upgrade to open it")
            }
            try migrator.migrate(database)
            let fresh = configuration.newReplicaID()
            identity = Mutex(try database.write { db in
                try Store.recordFileIdentityIfMissing(db, path: path)
                if let data = try Data.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'replica'") {
                    return try Rows.replica(data)
                }
                try db.execute(sql: "INSERT INTO concord_meta (key, value) VALUES ('replica', ?), ('schema', ?)",
                               arguments: [Rows.replicaBlob(fresh), Schema.version])
                return fresh
            })
        } catch let error as ConcordError {
            throw error
        } catch {
            if Store.isOnReadOnlyFileSystem(path) {
                throw ConcordError(.storage, "could not open \(path): the disk is read-only (a store needs to write its journal); remount it writable or copy the store elsewhere")
            }
            throw Store.storageError(error, doing: "open \(path)")
        }
        pointReader = PointReader(path: path)
        commitPoller = CommitPoller(path: path, onCommit: { [declaredChanges] in declaredChanges.committedElsewhere() })
        blobs = BlobStore(directory: configuration.blobDirectory ?? path + ".blobs")
        do {
            try blobs.prepare()
        } catch {
            throw error
        }
        try reconcileLocalFilesIfPending()
    }

    /// Read access for apps: query the `concord_` tables with SQL, or observe them with
    /// GRDB's `ValueObservation`. Write only through the store's own API, which keeps values,
    /// metadata and the outbox together.
    public var reader: any DatabaseReader { database }

    /// The device name shown in replica listings.
    public func name() throws(ConcordError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'name'") }
    }

    /// Sets the device name shown in replica listings: the next head this replica writes
    /// carries it.
    public func setName(_ name: String) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "INSERT OR REPLACE INTO concord_meta (key, value) VALUES ('name', ?)", arguments: [name])
        }
    }

    // MARK: Database access with typed errors

    func read<T>(_ body: (Database) throws -> T) throws(ConcordError) -> T {
        try typed(doing: "read \(path)") { try database.read(body) }
    }

    /// A read whose body runs exactly one SQL statement: no transaction around it (one
    /// statement already reads one consistent snapshot in WAL mode), so a point read costs
    /// one statement, as it would in plain SQLite.
    func readStatement<T>(_ body: (Database) throws -> T) throws(ConcordError) -> T {
        try typed(doing: "read \(path)") { try database.unsafeRead(body) }
    }

    /// A write transaction. Before it commits, the declared tables take in what it changed
    /// (``DeclaredTables/maintain(_:)``), whichever write it was.
    func writeDatabase<T>(_ body: (Database) throws -> T) throws(ConcordError) -> T {
        try writeDatabase { db, _ in try body(db) }
    }

    /// A write transaction whose body may leave in `written` records it created and the
    /// values it wrote to them (``WrittenRecords``): their declared rows are made from those.
    func writeDatabase<T>(_ body: (Database, inout WrittenRecords) throws -> T) throws(ConcordError) -> T {
        try typed(doing: "write \(path)") {
            var changed: Set<String> = []
            let value = try database.write { db in
                var written = WrittenRecords()
                let value = try body(db, &written)
                changed = try DeclaredTables.maintain(db, declarationCache, written)
                return value
            }
            declaredChanges.committed(changed)
            return value
        }
    }

    /// `access`, with whatever it throws but a `ConcordError` turned into one (``storageError(_:doing:)``).
    private func typed<T>(doing what: String, _ access: () throws -> T) throws(ConcordError) -> T {
        do {
            return try access()
        } catch let error as ConcordError {
            throw error
        } catch {
            throw Store.storageError(error, doing: what)
        }
    }

    static func isOnReadOnlyFileSystem(_ path: String) -> Bool {
        var info = statvfs()
        let directory = (path as NSString).deletingLastPathComponent
        return statvfs(directory.isEmpty ? "." : directory, &info) == 0 && info.f_flag & UInt(ST_RDONLY) != 0
    }

    static func storageError(_ error: any Error, doing what: String) -> ConcordError {
        if let error = error as? DatabaseError {
            let advice: String
            switch error.resultCode {
            case .SQLITE_FULL: advice = "the disk is full; free space and retry"
            case .SQLITE_READONLY: advice = "the file or its directory is read-only"
            case .SQLITE_BUSY, .SQLITE_LOCKED: advice = "another process holds the database; retry"
            case .SQLITE_CORRUPT, .SQLITE_NOTADB: return ConcordError(.corrupt, "could not \(what): not a Concord store or damaged (\(error.message ?? "\(error.resultCode)"))", cause: error)
            case .SQLITE_CANTOPEN: advice = "the file cannot be opened; check the path and permissions"
            case .SQLITE_IOERR: advice = "an I/O error occurred (a full or failing disk?)"
            default: advice = "SQLite said: \(error.message ?? "\(error.resultCode)")"
            }
            return ConcordError(.storage, "could not \(what): \(advice); nothing was changed", cause: error)
        }
        return ConcordError(.storage, "could not \(what): \(error)", cause: error)
    }

    // MARK: Clock and context

    func tick(_ db: Database) throws -> Stamp {
        // The clock issued up to this replica's greatest own dot (its context), and
        // observed up to the stored clock value, which it follows only up to the lead.
        let own = try Int64.fetchOne(db, sql: "SELECT hlc FROM concord_context WHERE replica = ?", arguments: [Rows.replicaBlob(replicaID)])
        let observed = try meta(db, "hlc")
        var clock = HybridLogicalClock(latest: own.map { Rows.hlc(stored: $0) } ?? 0, observed: observed)
        let hlc = try clock.tick(clock: configuration.clock)
        if hlc > observed { try saveClock(db, hlc) }
        try SlotIO.setContext(db, replicaID, hlc)
        return Stamp(hlc: hlc, replica: replicaID)
    }

    /// Follows a remote stamp: the stored clock becomes at least `hlc` (compared unsigned).
    func observe(_ db: Database, _ hlc: UInt64) throws {
        if try meta(db, "hlc") < hlc { try saveClock(db, hlc) }
    }

    private func saveClock(_ db: Database, _ hlc: UInt64) throws {
        try setMeta(db, "hlc", hlc)
    }

    /// A 64-bit number in `concord_meta` (the clock, the sealed seq and its hlc), stored as
    /// its bit pattern and compared only in Swift.
    func meta(_ db: Database, _ key: String) throws -> UInt64 {
        UInt64(bitPattern: try Int64.fetchOne(db.cachedStatement(sql: "SELECT value FROM concord_meta WHERE key = ?"), arguments: [key]) ?? 0)
    }

    func setMeta(_ db: Database, _ key: String, _ value: UInt64) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO concord_meta (key, value) VALUES (?, ?)")
            .execute(arguments: [key, Int64(bitPattern: value)])
    }

    /// The version vector of everything this store has applied, its own writes included.
    public func versionVector() throws(ConcordError) -> VersionVector {
        try read { db in try SlotIO.context(db) }
    }

    /// The greatest HLC value this store has issued or observed.
    public func clockValue() throws(ConcordError) -> UInt64 {
        try read { db in try meta(db, "hlc") }
    }
}
