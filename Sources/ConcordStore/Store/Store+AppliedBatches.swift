import ConcordCore
import GRDB

/// What tells one batch from another under the same name: a keyed digest of its contents
/// (the sync's `EncryptedObject.fingerprint(of:path:key:)`) and its size
/// as the remote holds it.
public struct BatchFingerprint: Hashable, Sendable {
    /// A keyed digest of the batch's contents.
    public let digest: UInt64
    /// The size of the encrypted object, in bytes.
    public let size: UInt64

    public init(digest: UInt64, size: UInt64) {
        self.digest = digest
        self.size = size
    }
}

/// The newest batch of a remote replica that this store applied as a batch (not through a
/// snapshot): its seq, the stamp it ended at, and its fingerprint when the sync gave one.
public struct AppliedBatch: Hashable, Sendable {
    /// Its seq.
    public let seq: UInt64
    /// The stamp it ended at (the delta's `upTo`): the origin's next batch depends
    /// on the origin up to exactly this stamp.
    public let upTo: UInt64
    /// Its fingerprint, if the sync recorded one.
    public let fingerprint: BatchFingerprint?
}

/// Two histories under one replica id. A name `(replica, seq)` is written once, with one
/// content, so the batch a store applied under a name is the batch that is there, and the
/// next batch of that replica depends on it up to its end. A device restored from a backup
/// while the storage was rolled back to the same moment has nothing that tells it the name
/// of its next batch was used already; its batch under that name, or a next batch that
/// follows another end, is a *fork* of the replica's history, which the sync names instead
/// of applying (docs/ARCHITECTURE.md §4, "A fork of a replica's history").
extension Store {
    /// Per remote replica, the newest batch applied here as a batch.
    public func appliedBatches() throws(ConcordError) -> [ReplicaID: AppliedBatch] {
        try read { db in
            var batches: [ReplicaID: AppliedBatch] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT replica, batch_seq, batch_up_to, batch_fingerprint, batch_size FROM concord_origins WHERE batch_seq IS NOT NULL
                """) {
                batches[try Rows.replica(row[0])] = Self.appliedBatch(row)
            }
            return batches
        }
    }

    /// The newest batch of `origin` applied here as a batch, if any.
    public func appliedBatch(of origin: ReplicaID) throws(ConcordError) -> AppliedBatch? {
        try read { db in
            try Row.fetchOne(db.cachedStatement(sql: """
                SELECT replica, batch_seq, batch_up_to, batch_fingerprint, batch_size FROM concord_origins WHERE replica = ? AND batch_seq IS NOT NULL
                """), arguments: [Rows.replicaBlob(origin)]).map(Self.appliedBatch)
        }
    }

    private static func appliedBatch(_ row: Row) -> AppliedBatch {
        let digest = (row[3] as Int64?).map { UInt64(bitPattern: $0) }
        let size = (row[4] as Int64?).map { UInt64(bitPattern: $0) }
        return AppliedBatch(
            seq: UInt64(bitPattern: row[1]), upTo: Rows.hlc(stored: row[2]),
            fingerprint: digest.flatMap { digest in size.map { BatchFingerprint(digest: digest, size: $0) } })
    }

    /// Records `delta` as its origin's newest batch applied as a batch.
    func recordAppliedBatch(_ db: Database, _ delta: Delta, fingerprint: BatchFingerprint?) throws {
        try db.cachedStatement(sql: """
            UPDATE concord_origins SET batch_seq = ?, batch_up_to = ?, batch_fingerprint = ?, batch_size = ? WHERE replica = ?
            """).execute(arguments: [
                Int64(bitPattern: delta.seq), Rows.hlc(delta.upTo), fingerprint.map { Int64(bitPattern: $0.digest) },
                fingerprint.map { Int64(bitPattern: $0.size) }, Rows.replicaBlob(delta.origin),
            ])
    }
}
