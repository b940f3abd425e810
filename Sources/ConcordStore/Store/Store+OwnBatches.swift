import ConcordCore
import Foundation
import GRDB

/// Where this replica's own batches ended. Another replica's context for this replica only
/// ever advances by applying one of its batches (or a snapshot made of them), so a batch of
/// another replica depends on this one up to 0 or the end of a batch this replica sealed.
/// A store restored from a backup has not sealed what its original sealed after the
/// backup: a batch that depends on one of those ends tells it that it is an older copy of
/// itself, even when its own later writes put its stamp past that end.
extension Store {
    /// Whether another replica's batch or snapshot may depend on this replica up to `hlc`:
    /// 0, the end of a batch this store sealed, or a stamp older than the store's record
    /// reaches (a store that predates the record, or pruned it at compaction). False means
    /// this store never sealed a batch ending there: it is an older copy of itself.
    public func sealedABatchEnding(at hlc: UInt64) throws(ConcordError) -> Bool {
        guard hlc > 0 else { return true }
        return try read { db in
            if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM concord_own_batches WHERE up_to = ?"), arguments: [Rows.hlc(hlc)]) == true {
                return true
            }
            let from = try meta(db, "own_batches_from")
            guard from > 1, let seq = Int64(exactly: from) else { return false }
            // Before the first batch recorded: an end the record does not reach.
            guard let first = try Int64.fetchOne(db, sql: "SELECT up_to FROM concord_own_batches WHERE seq = ?", arguments: [seq]) else { return true }
            return hlc < Rows.hlc(stored: first)
        }
    }

    /// The newest own batch this store sealed that ended before stamp `hlc` (0 if none it
    /// recorded did).
    public func lastOwnBatch(endingBefore hlc: UInt64) throws(ConcordError) -> UInt64 {
        try read { db in
            UInt64(try Int64.fetchOne(db, sql: "SELECT max(seq) FROM concord_own_batches WHERE up_to < ?", arguments: [Rows.hlc(hlc)]) ?? 0)
        }
    }

    /// Records the end of own batch `seq`, as it is sealed.
    func recordOwnBatch(_ db: Database, seq: UInt64, endingAt hlc: UInt64) throws {
        try db.cachedStatement(sql: "INSERT OR REPLACE INTO concord_own_batches (seq, up_to) VALUES (?, ?)")
            .execute(arguments: [Int64(clamping: seq), Rows.hlc(hlc)])
    }

    /// Keeps the record from seq `seq` on: every replica applied the batches before it, so
    /// none depends on this replica short of its end any more.
    func pruneOwnBatches(_ db: Database, before seq: UInt64) throws {
        guard seq > (try meta(db, "own_batches_from")), let kept = Int64(exactly: seq),
            try Int64.fetchOne(db, sql: "SELECT 1 FROM concord_own_batches WHERE seq = ?", arguments: [kept]) != nil
        else { return }
        try db.execute(sql: "DELETE FROM concord_own_batches WHERE seq < ?", arguments: [kept])
        try setMeta(db, "own_batches_from", seq)
    }

    /// A new identity has sealed nothing: its record is complete from seq 1. (Its context
    /// may start past 0, at the writes it took over: recorded as "batch 0".)
    func resetOwnBatches(_ db: Database) throws {
        try db.execute(sql: "DELETE FROM concord_own_batches")
        try setMeta(db, "own_batches_from", 1)
    }
}
