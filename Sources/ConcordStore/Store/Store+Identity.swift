import ConcordCodec
import ConcordCore
import Foundation
import GRDB

extension Store {
    /// Continues this store under a new replica id, after it was found to be an older copy
    /// of itself (a device restored from a backup) — so that no batch name of the old id
    /// ever gets other contents, and no write is lost.
    ///
    /// `sharedThrough` is the newest own seq the remote held before the copy was taken
    /// (the pushed seq the copy remembers). Every own write past it — writes made after the
    /// restore, and writes the copy had not pushed — is re-stamped under `newID` and goes
    /// back to the outbox. The old id becomes an ordinary remote origin: its context here
    /// is what the copy really saw of it (through `sharedThrough`), and its applied seq is
    /// `sharedThrough`, so the next pull fetches the history the copy lacks from the remote,
    /// like any other replica's. The merge rules hold because a re-stamped write is new to
    /// every replica: nothing claims to have seen it, and it claims to have seen nothing of
    /// the old id past `sharedThrough`.
    ///
    /// Everything happens in one transaction; the store's ``replicaID`` changes with it.
    /// Returns the old id.
    @discardableResult
    public func adoptIdentity(_ newID: ReplicaID, sharedThrough seq: UInt64) throws(ConcordError) -> ReplicaID {
        let before = replicaID
        do {
            return try adoptIdentityTransaction(newID, sharedThrough: seq)
        } catch {
            identity.withLock { $0 = before }  // the transaction rolled back
            throw error
        }
    }

    private func adoptIdentityTransaction(_ newID: ReplicaID, sharedThrough seq: UInt64) throws(ConcordError) -> ReplicaID {
        try writeDatabase { db -> ReplicaID in
            let old = replicaID
            guard newID != old else { throw ConcordError(.invalidOperation, "the new replica id is the store's own") }
            let shared = try sharedUpTo(db, seq: seq)
            let oldBlob = Rows.replicaBlob(old)
            let context = try SlotIO.context(db)
            let ownTop = context[old]

            // The slots to ship again: those holding an own write past `shared`, and those
            // sealed after `seq` (a removal leaves no dot behind, only the slot).
            var slots: [RecordRef: Set<SlotKey>] = [:]
            var whole: Set<RecordRef> = []
            let past = Rows.hlc(shared)
            for row in try Row.fetchAll(db, sql: "SELECT collection, id, kind FROM concord_dots WHERE replica = ? AND hlc > ?", arguments: [oldBlob, past]) {
                slots[RecordRef(collection: row["collection"], id: row["id"]), default: []].insert((row["kind"] as Int64) == Rows.slotLiveness ? .liveness : .tombstones)
            }
            for table in ["concord_fields", "concord_field_versions"] {
                for row in try Row.fetchAll(db, sql: "SELECT collection, id, field FROM \(table) WHERE replica = ? AND hlc > ?", arguments: [oldBlob, past]) {
                    slots[RecordRef(collection: row["collection"], id: row["id"]), default: []].insert(.field(row["field"]))
                }
            }
            for row in try Row.fetchAll(db, sql: "SELECT collection, id, field, element FROM concord_elements WHERE replica = ? AND hlc > ?", arguments: [oldBlob, past]) {
                slots[RecordRef(collection: row["collection"], id: row["id"]), default: []].insert(.element(row["field"], try SlotIO.element(row["element"])))
            }
            for row in try Row.fetchAll(db, sql: "SELECT bytes FROM concord_sealed WHERE seq > ?", arguments: [Int64(clamping: seq)]) {
                let delta = try DeltaCodec.decode([UInt8](row["bytes"] as Data))
                for change in delta.records {
                    if change.whole { whole.insert(change.ref) }
                    for slot in change.slots { slots[change.ref, default: []].insert(slot.key) }
                }
            }

            // Re-stamp: every own dot past `shared` becomes the new id's, same hlc.
            for (ref, keys) in slots {
                for key in keys {
                    var entries = try SlotIO.entries(db, ref, key).map { entry in
                        entry.dot.replica == old && entry.dot.hlc > shared ? Entry(dot: Stamp(hlc: entry.dot.hlc, replica: newID), payload: entry.payload) : entry
                    }
                    entries.sort { $0.dot < $1.dot }
                    try SlotIO.replace(db, ref, key, with: entries, dirty: max(ownTop, 1))
                }
            }
            for ref in whole {
                try SlotIO.markOutbox(db, ref, kind: Rows.wholeRecord, field: "", element: Data(), hlc: max(ownTop, 1))
            }
            try db.execute(sql: "UPDATE concord_history SET replica = ? WHERE replica = ? AND hlc > ?", arguments: [Rows.replicaBlob(newID), oldBlob, past])

            // The old id is now another replica: seen through `shared`, applied through `seq`.
            try db.execute(sql: "DELETE FROM concord_context WHERE replica = ?", arguments: [oldBlob])
            if shared > 0 { try SlotIO.setContext(db, old, shared) }
            if ownTop > 0 { try SlotIO.setContext(db, newID, ownTop) }
            try db.execute(sql: "DELETE FROM concord_origins WHERE replica = ?", arguments: [oldBlob])
            if seq > 0 { try setAppliedSeq(db, old, seq) }
            // The new id has sealed nothing; the old id's sealed bytes are the remote's now.
            try db.execute(sql: "DELETE FROM concord_sealed")
            try setMeta(db, "sealed_seq", 0)
            try setMeta(db, "sealed_up_to", 0)
            try resetOwnBatches(db)
            // The new id's context starts at the re-stamped writes' top: a snapshot taken
            // before its first batch (none, when nothing was left to ship) shows others that.
            if ownTop > 0 { try recordOwnBatch(db, seq: 0, endingAt: ownTop) }
            try db.execute(sql: "UPDATE concord_meta SET value = ? WHERE key = 'replica'", arguments: [Rows.replicaBlob(newID)])
            // Inside the transaction, so no write can stamp under the old id after it.
            identity.withLock { $0 = newID }
            return old
        }
    }

    /// The own hlc the remote held through own seq `seq`: the start of sealed batch
    /// `seq + 1`, or the end of batch `seq`.
    private func sharedUpTo(_ db: Database, seq: UInt64) throws -> UInt64 {
        guard seq > 0 else { return 0 }
        let sealed = try meta(db, "sealed_seq")
        if let bytes = try Data.fetchOne(db, sql: "SELECT bytes FROM concord_sealed WHERE seq = ?", arguments: [Int64(clamping: seq + 1)]) {
            return try DeltaCodec.decode([UInt8](bytes)).dependencies[replicaID]
        }
        if sealed == seq { return try meta(db, "sealed_up_to") }
        if let bytes = try Data.fetchOne(db, sql: "SELECT bytes FROM concord_sealed WHERE seq = ?", arguments: [Int64(clamping: seq)]) {
            return try DeltaCodec.decode([UInt8](bytes)).upTo
        }
        throw ConcordError(.corrupt, "this store no longer holds its batch \(seq) or the one after it, so it cannot tell which of its own writes the remote holds; nothing was changed")
    }
}
