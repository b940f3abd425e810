import ConcordCore
import Foundation
import GRDB

/// A fork of a replica's history as this store knows it (docs/ARCHITECTURE.md §4, "Merging a
/// fork"): the replica, the seq `k` where its two histories part, the last stamp of their
/// common prefix, the fingerprints of the two sides' batches at `k`, and the side this
/// store holds.
public struct HistoryForkRecord: Hashable, Sendable {
    /// The replica whose history forked.
    public var replica: ReplicaID
    /// The seq where the two histories part.
    public var seq: UInt64
    /// The last stamp of the common prefix (the end of batch `seq − 1`).
    public var after: UInt64
    /// The fingerprints of the two sides' batches at `seq` known here (one or two).
    public var sides: Set<UInt64>
    /// The side this store holds (applied, or sealed itself), nil for neither.
    public var held: UInt64?
    /// The newest own seq sealed before this store merged the fork: its own batches up to
    /// it that depend on `replica` past `after` saw `held`. Nil until it merged.
    public var through: UInt64?
    /// Whether this store merged it.
    public var merged: Bool
    /// The fingerprint of the remote's batch at `seq` when this store read it (0: none was
    /// there), nil before.
    public var remoteSide: UInt64?

    public init(replica: ReplicaID, seq: UInt64, after: UInt64, sides: Set<UInt64>, held: UInt64?, through: UInt64? = nil, merged: Bool = false, remoteSide: UInt64? = nil) {
        self.replica = replica
        self.seq = seq
        self.after = after
        self.sides = sides
        self.held = held
        self.through = through
        self.merged = merged
        self.remoteSide = remoteSide
    }

    /// The side that keeps the replica's name, once both are known: the smaller fingerprint.
    public var kept: UInt64? { sides.count == 2 ? sides.min() : nil }
    /// The side whose dots past `after` move to a fresh id, once both are known.
    public var renamed: UInt64? { sides.count == 2 ? sides.max() : nil }
}

/// Which side of a fork another replica held when it merged it, and through which of its
/// own seqs its batches saw that side (what its head said).
public struct HistoryForkHolder: Hashable, Sendable {
    public let holder: ReplicaID
    public let held: UInt64
    public let through: UInt64

    public init(holder: ReplicaID, held: UInt64, through: UInt64) {
        self.holder = holder
        self.held = held
        self.through = through
    }
}

extension Store {
    /// The forks of replicas' histories this store knows, by replica and seq.
    public func historyForks() throws(ConcordError) -> [HistoryForkRecord] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT replica, seq, after, side1, side2, held, through, merged, remote_side FROM concord_forks ORDER BY replica, seq").map { row in
                var sides: Set<UInt64> = [UInt64(bitPattern: row[3])]
                if let other = row[4] as Int64? { sides.insert(UInt64(bitPattern: other)) }
                return HistoryForkRecord(
                    replica: try Rows.replica(row[0]), seq: UInt64(bitPattern: row[1]), after: Rows.hlc(stored: row[2]), sides: sides,
                    held: (row[5] as Int64?).map { UInt64(bitPattern: $0) }, through: (row[6] as Int64?).map { UInt64(bitPattern: $0) },
                    merged: (row[7] as Int64) != 0, remoteSide: (row[8] as Int64?).map { UInt64(bitPattern: $0) })
            }
        }
    }

    /// Records `fork`, or what it adds to the one recorded at its replica and seq (a side
    /// learnt, the side held); a merged record keeps its sides.
    public func recordHistoryFork(_ fork: HistoryForkRecord) throws(ConcordError) {
        try writeDatabase { db in
            var record = fork
            if let row = try Row.fetchOne(db, sql: "SELECT side1, side2, held, through, merged, remote_side FROM concord_forks WHERE replica = ? AND seq = ?", arguments: [Rows.replicaBlob(fork.replica), Int64(bitPattern: fork.seq)]) {
                var sides: Set<UInt64> = [UInt64(bitPattern: row[0])]
                if let other = row[1] as Int64? { sides.insert(UInt64(bitPattern: other)) }
                let merged = (row[4] as Int64) != 0
                if merged || sides.count == 2 { record.sides = sides } else { record.sides.formUnion(sides) }
                if record.sides.count > 2 { record.sides = sides }
                record.held = (row[2] as Int64?).map { UInt64(bitPattern: $0) } ?? fork.held
                record.through = (row[3] as Int64?).map { UInt64(bitPattern: $0) } ?? fork.through
                record.merged = merged || fork.merged
                record.remoteSide = fork.remoteSide ?? (row[5] as Int64?).map { UInt64(bitPattern: $0) }
            }
            let sides = record.sides.sorted()
            guard let first = sides.first else { return }
            try db.execute(sql: """
                INSERT OR REPLACE INTO concord_forks (replica, seq, after, side1, side2, held, through, merged, remote_side)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [
                    Rows.replicaBlob(record.replica), Int64(bitPattern: record.seq), Rows.hlc(record.after), Int64(bitPattern: first),
                    sides.count > 1 ? Int64(bitPattern: sides[1]) : nil, record.held.map { Int64(bitPattern: $0) },
                    record.through.map { Int64(bitPattern: $0) }, record.merged ? 1 : 0, record.remoteSide.map { Int64(bitPattern: $0) },
                ])
        }
    }

    /// The replicas that said which side of the fork of `replica` at `seq` they held.
    public func historyForkHolders(of replica: ReplicaID, seq: UInt64) throws(ConcordError) -> [HistoryForkHolder] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT holder, held, through FROM concord_fork_holders WHERE replica = ? AND seq = ? ORDER BY holder", arguments: [Rows.replicaBlob(replica), Int64(bitPattern: seq)]).map { row in
                HistoryForkHolder(holder: try Rows.replica(row[0]), held: UInt64(bitPattern: row[1]), through: UInt64(bitPattern: row[2]))
            }
        }
    }

    /// Records what `holder`'s head said of the fork of `replica` at `seq`.
    public func recordHistoryForkHolder(_ holder: HistoryForkHolder, of replica: ReplicaID, seq: UInt64) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "INSERT OR REPLACE INTO concord_fork_holders (replica, seq, holder, held, through) VALUES (?, ?, ?, ?, ?)", arguments: [
                Rows.replicaBlob(replica), Int64(bitPattern: seq), Rows.replicaBlob(holder.holder), Int64(bitPattern: holder.held), Int64(bitPattern: holder.through),
            ])
        }
    }

    /// Renames this store's side of a forked history in one transaction
    /// (docs/ARCHITECTURE.md §4, "Merging a fork"): its state becomes
    /// `StoreState.renamingForkedSide(rename)` of what it was — every slot holding a dot of
    /// `rename.replica` or `rename.to` past `rename.after` rewritten, the context put back
    /// in version-vector form — the superseded file versions' dots swapped alike, and what
    /// it applied of `rename.replica` from `forkSeq` on becomes `rename.to`'s (its seq
    /// `s − forkSeq + 1`); `rename.replica` keeps the seqs before `forkSeq`.
    ///
    /// - Throws: `invalidOperation` when the store is the forked replica itself (it must
    ///   continue under a new id first) or has unsealed changes.
    public func renameForkedSide(_ rename: DotRename, forkSeq: UInt64) throws(ConcordError) {
        guard replicaID != rename.replica, replicaID != rename.to else {
            throw ConcordError(.invalidOperation, "a store renames its side of a fork of another replica's history only")
        }
        var changes: [RecordRef: Set<String>] = [:]
        try writeDatabase { db in
            guard try SlotIO.outboxIsEmpty(db) else {
                throw ConcordError(.invalidOperation, "local changes are not sealed yet; a fork is merged once they are")
            }
            let old = try SlotIO.state(db)
            let new = old.renamingForkedSide(rename)
            guard let vector = new.context.versionVector else {
                throw ConcordError(.corrupt, "the renamed state's context is not a version vector")
            }
            for (ref, record) in old.records {
                let after = new.records[ref]?.slots ?? [:]
                for (key, slot) in record.slots where after[key]?.entries != slot.entries {
                    try SlotIO.replace(db, ref, key, with: after[key]?.entries ?? [], dirty: 0)
                    changes[ref, default: []].formUnion(key.fieldName.map { [$0] } ?? [])
                }
            }
            let from = Rows.replicaBlob(rename.replica)
            let to = Rows.replicaBlob(rename.to)
            try db.execute(sql: "DELETE FROM concord_context WHERE replica IN (?, ?)", arguments: [from, to])
            for replica in [rename.replica, rename.to] where vector[replica] > 0 { try SlotIO.setContext(db, replica, vector[replica]) }
            try db.execute(sql: """
                UPDATE concord_history SET replica = CASE replica WHEN ? THEN ? ELSE ? END WHERE hlc > ? AND replica IN (?, ?)
                """, arguments: [from, to, from, Rows.hlc(rename.after), from, to])
            // What was applied of the forked replica from `forkSeq` on is the fresh id's.
            guard let row = try Row.fetchOne(db, sql: "SELECT seq, batch_seq, batch_up_to, batch_fingerprint, batch_size FROM concord_origins WHERE replica = ?", arguments: [from]) else { return }
            let applied = UInt64(bitPattern: row[0])
            guard applied >= forkSeq, forkSeq > 0 else { return }
            let batchSeq = (row[1] as Int64?).map { UInt64(bitPattern: $0) }
            try db.execute(sql: "DELETE FROM concord_origins WHERE replica IN (?, ?)", arguments: [from, to])
            if forkSeq > 1 { try setAppliedSeq(db, rename.replica, forkSeq - 1) }
            try setAppliedSeq(db, rename.to, applied - forkSeq + 1)
            if let batchSeq, batchSeq >= forkSeq {
                try db.execute(sql: "UPDATE concord_origins SET batch_seq = ?, batch_up_to = ?, batch_fingerprint = ?, batch_size = ? WHERE replica = ?", arguments: [
                    Int64(bitPattern: batchSeq - forkSeq + 1), row[2] as Int64?, row[3] as Int64?, row[4] as Int64?, to,
                ])
            }
        }
        publishChanges(changes.map { ChangeEvent(ref: $0.key, fields: $0.value, origin: .snapshot) })
    }
}

extension Store {
    /// The stamp own batch `seq` ended at, if this store recorded it (0 for seq 0).
    public func ownBatchEnd(seq: UInt64) throws(ConcordError) -> UInt64? {
        guard seq > 0 else { return 0 }
        guard let seq = Int64(exactly: seq) else { return nil }
        return try read { db in
            try Int64.fetchOne(db, sql: "SELECT up_to FROM concord_own_batches WHERE seq = ?", arguments: [seq]).map { Rows.hlc(stored: $0) }
        }
    }
}
