import ConcordCore
import Foundation
import GRDB

/// One value of the sync engine's own state: a column of the one-row table
/// `concord_sync_state`, of one type. A value never set reads as 0, nil or false.
///
/// Numbers (seqs, and times in milliseconds since the epoch) are stored as their 64-bit
/// pattern; ids and digests as their bytes.
public struct SyncStateValue<Value: Sendable>: Sendable {
    let column: String
    let decode: @Sendable (DatabaseValue) -> Value
    let encode: @Sendable (Value) -> DatabaseValue
}

extension SyncStateValue where Value == UInt64 {
    private static func number(_ column: String) -> Self {
        Self(column: column, decode: { UInt64(bitPattern: Int64.fromDatabaseValue($0) ?? 0) }, encode: { Int64(bitPattern: $0).databaseValue })
    }

    /// The newest own batch confirmed on the remote (0 before the first).
    public static var pushedSeq: Self { number("pushed_seq") }
    /// The newest own seq a readable snapshot on the remote covered at the last compaction.
    public static var snapshotCovered: Self { number("snapshot_covered") }
    /// When the newest own head was written.
    public static var headWrittenAt: Self { number("head_written_at") }
    /// When the sync last listed every replica's batches for ones that vanished.
    public static var lossCheckedAt: Self { number("loss_checked_at") }
}

extension SyncStateValue where Value == UInt64? {
    private static func number(_ column: String) -> Self {
        Self(column: column, decode: { Int64.fromDatabaseValue($0).map { UInt64(bitPattern: $0) } },
             encode: { $0.map { Int64(bitPattern: $0).databaseValue } ?? .null })
    }

    /// The pushed seq at which the remote was found to have lost the head of this store's
    /// newest batch: its next new batch goes under a new id.
    public static var ownLoss: Self { number("own_loss") }
    /// The seq named by the newest own snapshot; nil before the first.
    public static var snapshotSeq: Self { number("snapshot_seq") }
    /// The seq of the last snapshot put attempted: if it failed, the put may still have
    /// landed (a lost reply), so the next one under that name first reads what is there.
    public static var snapshotAttempt: Self { number("snapshot_attempt") }
}

extension SyncStateValue where Value == [UInt8]? {
    private static func bytes(_ column: String) -> Self {
        Self(column: column, decode: { Data.fromDatabaseValue($0).map { [UInt8]($0) } }, encode: { $0.map { Data($0).databaseValue } ?? .null })
    }

    /// The id of the remote store this store synced with (its 16 bytes).
    public static var remoteStoreID: Self { bytes("remote_store_id") }
    /// The `concord.json` this store unlocked, byte for byte.
    public static var manifest: Self { bytes("manifest") }
    /// The BLAKE2b hash of the sealed bytes of the newest own snapshot.
    public static var snapshotDigest: Self { bytes("snapshot_digest") }
    /// The key objects of the store's key generations this replica knows, each as its
    /// length (4 bytes, big-endian) and its bytes as read from the remote.
    public static var keyObjects: Self { bytes("key_objects") }
}

extension SyncStateValue where Value == String? {
    /// Set when this replica found it was removed from the store (a key generation it
    /// cannot open): the one line that says so. While set, local writes are refused.
    public static var removedFromStore: Self {
        Self(column: "removed_from_store", decode: { String.fromDatabaseValue($0) }, encode: { $0.map(\.databaseValue) ?? .null })
    }

    /// What the newest own head written says: its JSON without its time.
    public static var headAdvertised: Self {
        Self(column: "head_advertised", decode: { String.fromDatabaseValue($0) }, encode: { $0.map(\.databaseValue) ?? .null })
    }
}

extension SyncStateValue where Value == ReplicaID? {
    /// The old id of a restored copy, while its unannounced batches wait to be announced.
    public static var orphansOf: Self {
        Self(column: "orphans_of", decode: { Data.fromDatabaseValue($0).flatMap { ReplicaID(bytes: [UInt8]($0)) } },
             encode: { $0.map { Rows.replicaBlob($0).databaseValue } ?? .null })
    }
}

extension SyncStateValue where Value == Bool {
    /// Set while something the remote lost waits for a snapshot under a new name.
    public static var republishPending: Self {
        Self(column: "republish_pending", decode: { (Int64.fromDatabaseValue($0) ?? 0) != 0 }, encode: { ($0 ? 1 : 0 as Int64).databaseValue })
    }
}

/// A fact the sync engine keeps per replica, in `concord_replica_state`.
public enum ReplicaFact: Sendable {
    /// The newest sync time any head of the replica said, for every replica whose head was
    /// ever read — listed or not now, it exists until retired.
    case seen
    /// A replica this one forgot, with the time of its newest head.
    case retired
    /// How far (in milliseconds) the replica's clock was found ahead of this one's, at most.
    case clockSkew

    var column: String {
        switch self {
        case .seen: "seen_at"
        case .retired: "retired_at"
        case .clockSkew: "clock_skew"
        }
    }
}

/// What a listing said of a remote object: its size and its modification time, either of
/// which a listing may leave out.
public struct ListingSignature: Hashable, Sendable {
    /// The size in bytes the listing gave, if it gave one.
    public var size: UInt64?
    /// The modification time the listing gave (milliseconds since the epoch), if it gave one.
    public var modified: UInt64?

    /// What a listing said: `size` and `modified`, either nil where it said nothing.
    public init(size: UInt64?, modified: UInt64?) {
        self.size = size
        self.modified = modified
    }
}

/// The sync engine's own state (docs/ARCHITECTURE.md §3, "Persistence"): single values in
/// `concord_sync_state` (``SyncStateValue``), and one table per kind of fact it keeps per
/// replica, per file, per remote object and per record, each column of one type.
extension Store {
    /// A value of the sync engine's own state.
    public func syncState<Value>(_ value: SyncStateValue<Value>) throws(ConcordError) -> Value {
        try read { db in
            let row = try Row.fetchOne(db, sql: "SELECT \(value.column) FROM concord_sync_state WHERE id = 0")
            return value.decode(row?[0] ?? .null)
        }
    }

    /// Sets a value of the sync engine's own state (nil, 0 or false: to what it reads as when
    /// never set).
    public func setSyncState<Value>(_ value: SyncStateValue<Value>, _ new: Value) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(
                sql: "INSERT INTO concord_sync_state (id, \(value.column)) VALUES (0, ?) ON CONFLICT (id) DO UPDATE SET \(value.column) = excluded.\(value.column)",
                arguments: [value.encode(new)])
        }
    }

    // MARK: Per replica

    /// `fact` of every replica it is known of.
    public func replicaFacts(_ fact: ReplicaFact) throws(ConcordError) -> [ReplicaID: UInt64] {
        try read { db in
            var facts: [ReplicaID: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT replica, \(fact.column) FROM concord_replica_state WHERE \(fact.column) IS NOT NULL") {
                facts[try Rows.replica(row[0])] = UInt64(bitPattern: row[1])
            }
            return facts
        }
    }

    /// `fact` of `replica`, if it is known.
    public func replicaFact(_ fact: ReplicaFact, of replica: ReplicaID) throws(ConcordError) -> UInt64? {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT \(fact.column) FROM concord_replica_state WHERE replica = ?", arguments: [Rows.replicaBlob(replica)])
                .map { UInt64(bitPattern: $0) }
        }
    }

    /// Sets (or, with nil, forgets) `fact` of `replica`.
    public func setReplicaFact(_ fact: ReplicaFact, of replica: ReplicaID, _ value: UInt64?) throws(ConcordError) {
        try writeDatabase { db in
            let blob = Rows.replicaBlob(replica)
            if let value {
                try db.execute(
                    sql: "INSERT INTO concord_replica_state (replica, \(fact.column)) VALUES (?, ?) ON CONFLICT (replica) DO UPDATE SET \(fact.column) = excluded.\(fact.column)",
                    arguments: [blob, Int64(bitPattern: value)])
            } else {
                try db.execute(sql: "UPDATE concord_replica_state SET \(fact.column) = NULL WHERE replica = ?", arguments: [blob])
                try db.execute(
                    sql: "DELETE FROM concord_replica_state WHERE replica = ? AND seen_at IS NULL AND retired_at IS NULL AND clock_skew IS NULL",
                    arguments: [blob])
            }
        }
    }

    // MARK: Per file

    /// When this replica last uploaded each file it remembers uploading.
    public func uploadTimes() throws(ConcordError) -> [ContentHash: UInt64] {
        try read { db in
            var times: [ContentHash: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT hash, uploaded_at FROM concord_uploaded_files") {
                guard let hash = ContentHash(bytes: [UInt8](row[0] as Data)) else { continue }
                times[hash] = UInt64(bitPattern: row[1])
            }
            return times
        }
    }

    /// When this replica last uploaded the file `hash`, if it remembers.
    public func uploadedAt(_ hash: ContentHash) throws(ConcordError) -> UInt64? {
        try read { db in
            try Int64.fetchOne(db, sql: "SELECT uploaded_at FROM concord_uploaded_files WHERE hash = ?", arguments: [Data(hash.bytes)])
                .map { UInt64(bitPattern: $0) }
        }
    }

    /// Remembers (or, with nil, forgets) when this replica last uploaded the file `hash`.
    public func setUploadedAt(_ hash: ContentHash, _ at: UInt64?) throws(ConcordError) {
        try writeDatabase { db in
            if let at {
                try db.execute(sql: "INSERT OR REPLACE INTO concord_uploaded_files (hash, uploaded_at) VALUES (?, ?)",
                               arguments: [Data(hash.bytes), Int64(bitPattern: at)])
            } else {
                try db.execute(sql: "DELETE FROM concord_uploaded_files WHERE hash = ?", arguments: [Data(hash.bytes)])
            }
        }
    }

    /// The files whose re-upload has not succeeded yet, in order.
    public func pendingReuploads() throws(ConcordError) -> [ContentHash] {
        try read { db in
            try Data.fetchAll(db, sql: "SELECT hash FROM concord_pending_reuploads ORDER BY hash").compactMap { ContentHash(bytes: [UInt8]($0)) }
        }
    }

    /// Marks the re-upload of `hash` as pending, or as done.
    public func setReuploadPending(_ hash: ContentHash, _ pending: Bool) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: pending ? "INSERT OR IGNORE INTO concord_pending_reuploads (hash) VALUES (?)" : "DELETE FROM concord_pending_reuploads WHERE hash = ?",
                           arguments: [Data(hash.bytes)])
        }
    }

    // MARK: Per remote object

    /// Per remote batch or snapshot read before, the keyed names of the files it references.
    public func knownReferences() throws(ConcordError) -> [String: Set<String>] {
        try read { db in
            var references: [String: Set<String>] = [:]
            for path in try String.fetchAll(db, sql: "SELECT path FROM concord_object_references") { references[path] = [] }
            for row in try Row.fetchAll(db, sql: "SELECT path, name FROM concord_object_reference_names") {
                references[row[0], default: []].insert(row[1])
            }
            return references
        }
    }

    /// Remembers (or, with nil, forgets) the keyed names of the files the batch or snapshot
    /// at `path` references: a name never gets other bytes.
    public func setKnownReferences(_ names: Set<String>?, of path: String) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "DELETE FROM concord_object_reference_names WHERE path = ?", arguments: [path])
            guard let names else {
                try db.execute(sql: "DELETE FROM concord_object_references WHERE path = ?", arguments: [path])
                return
            }
            try db.execute(sql: "INSERT OR IGNORE INTO concord_object_references (path) VALUES (?)", arguments: [path])
            let insert = try db.cachedStatement(sql: "INSERT INTO concord_object_reference_names (path, name) VALUES (?, ?)")
            for name in names.sorted() { try insert.execute(arguments: [path, name]) }
        }
    }

    /// The snapshots whose coverage is remembered (``knownCoverage(of:)``).
    public func snapshotsOfKnownCoverage() throws(ConcordError) -> [String] {
        try read { db in try String.fetchAll(db, sql: "SELECT path FROM concord_snapshot_covers") }
    }

    /// Per origin, the newest seq the snapshot at `path` contains, if it was read before.
    public func knownCoverage(of path: String) throws(ConcordError) -> [ReplicaID: UInt64]? {
        try read { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM concord_snapshot_covers WHERE path = ?", arguments: [path]) == true else { return nil }
            var covers: [ReplicaID: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT replica, seq FROM concord_snapshot_cover_seqs WHERE path = ?", arguments: [path]) {
                covers[try Rows.replica(row[0])] = UInt64(bitPattern: row[1])
            }
            return covers
        }
    }

    /// Remembers (or, with nil, forgets) what the snapshot at `path` covers.
    public func setKnownCoverage(_ covers: [ReplicaID: UInt64]?, of path: String) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "DELETE FROM concord_snapshot_cover_seqs WHERE path = ?", arguments: [path])
            guard let covers else {
                try db.execute(sql: "DELETE FROM concord_snapshot_covers WHERE path = ?", arguments: [path])
                return
            }
            try db.execute(sql: "INSERT OR IGNORE INTO concord_snapshot_covers (path) VALUES (?)", arguments: [path])
            let insert = try db.cachedStatement(sql: "INSERT INTO concord_snapshot_cover_seqs (path, replica, seq) VALUES (?, ?, ?)")
            for (replica, seq) in covers.sorted(by: { $0.key < $1.key }) {
                try insert.execute(arguments: [path, Rows.replicaBlob(replica), Int64(bitPattern: seq)])
            }
        }
    }

    /// The head names whose object did not open, with what the listing said of each then.
    public func unopenedHeads() throws(ConcordError) -> [String: ListingSignature] {
        try read { db in
            var heads: [String: ListingSignature] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT path, size, modified FROM concord_unopened_heads") {
                heads[row[0]] = ListingSignature(size: (row[1] as Int64?).map { UInt64(bitPattern: $0) },
                                                 modified: (row[2] as Int64?).map { UInt64(bitPattern: $0) })
            }
            return heads
        }
    }

    /// Remembers (or, with nil, forgets) head names that did not open, in one transaction:
    /// one durable commit for all of them, however many.
    public func setUnopenedHeads(_ changes: [(path: String, signature: ListingSignature?)]) throws(ConcordError) {
        guard !changes.isEmpty else { return }
        try writeDatabase { db in
            let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO concord_unopened_heads (path, size, modified) VALUES (?, ?, ?)")
            let delete = try db.cachedStatement(sql: "DELETE FROM concord_unopened_heads WHERE path = ?")
            for (path, signature) in changes {
                if let signature {
                    try insert.execute(arguments: [path, signature.size.map { Int64(bitPattern: $0) }, signature.modified.map { Int64(bitPattern: $0) }])
                } else {
                    try delete.execute(arguments: [path])
                }
            }
        }
    }

    /// Per keyed file name, when this replica first found the remote file unreferenced.
    public func unreferencedSince() throws(ConcordError) -> [String: UInt64] {
        try read { db in
            var since: [String: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, since FROM concord_unreferenced_files") { since[row[0]] = UInt64(bitPattern: row[1]) }
            return since
        }
    }

    /// Remembers (or, with nil, forgets) when this replica first found the remote file
    /// `name` unreferenced.
    public func setUnreferencedSince(_ name: String, _ at: UInt64?) throws(ConcordError) {
        try writeDatabase { db in
            if let at {
                try db.execute(sql: "INSERT OR REPLACE INTO concord_unreferenced_files (name, since) VALUES (?, ?)", arguments: [name, Int64(bitPattern: at)])
            } else {
                try db.execute(sql: "DELETE FROM concord_unreferenced_files WHERE name = ?", arguments: [name])
            }
        }
    }

    // MARK: Per record

    /// Per deleted record, when this replica first found its deletion causally stable.
    public func stableSince() throws(ConcordError) -> [RecordRef: UInt64] {
        try read { db in
            var since: [RecordRef: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT collection, id, since FROM concord_stable_since") {
                since[RecordRef(collection: row[0], id: row[1])] = UInt64(bitPattern: row[2])
            }
            return since
        }
    }

    /// Remembers (or, with nil, forgets) when this replica first found the deletion of `ref`
    /// causally stable.
    public func setStableSince(_ ref: RecordRef, _ at: UInt64?) throws(ConcordError) {
        try writeDatabase { db in
            if let at {
                try db.execute(sql: "INSERT OR REPLACE INTO concord_stable_since (collection, id, since) VALUES (?, ?, ?)",
                               arguments: [ref.collection, ref.id, Int64(bitPattern: at)])
            } else {
                try db.execute(sql: "DELETE FROM concord_stable_since WHERE collection = ? AND id = ?", arguments: [ref.collection, ref.id])
            }
        }
    }

    // MARK: Left by a previous release

    /// Own batches whose sealed bytes a compaction of a previous release left to forget.
    public func sealedLeftToForget() throws(ConcordError) -> [UInt64] {
        try read { db in try Int64.fetchAll(db, sql: "SELECT seq FROM concord_sealed_to_forget ORDER BY seq").map { UInt64(bitPattern: $0) } }
    }

    /// Clears ``sealedLeftToForget()``, once they are forgotten.
    public func clearSealedLeftToForget() throws(ConcordError) {
        try writeDatabase { db in try db.execute(sql: "DELETE FROM concord_sealed_to_forget") }
    }
}
