import ConcordCore
import GRDB

/// A write the purge did not wait for (docs/ARCHITECTURE.md §2): applying a purge of a
/// record that an own, unseen write keeps alive writes back the fields the purge took.
extension Store {
    /// The records a purge in `delta` would take fields from while this replica's own write
    /// — one the purging replica had not seen — keeps them alive, with the fields they read
    /// now (docs/ARCHITECTURE.md §4, "A write the purge did not wait for").
    ///
    /// A purge ships a dead record whole and empty: every entry its origin had seen is
    /// dropped. It waits until every replica it knows of has seen the deletion, but a
    /// replica it could not know of — one that only pulled, or whose first head was lost —
    /// may have updated the record concurrently. Rule 4 keeps such a record alive with all
    /// its fields; the purge would keep only the fields that replica wrote itself.
    func fieldsHeldAgainstPurge(_ db: Database, _ delta: Delta) throws -> [(RecordRef, [String: FieldValue])] {
        let seen = delta.observed[replicaID]
        var held: [(RecordRef, [String: FieldValue])] = []
        // A purged record travels whole and empty; a re-created one carries its liveness
        // and fields (and what its creator cleared stays cleared, rule 5).
        for change in delta.records where change.whole && change.slots.allSatisfy(\.entries.isEmpty) {
            guard let record = try SlotIO.record(db, change.ref), let fields = heldByOwnWrite(record, unseenBy: { $0.hlc > seen }) else { continue }
            held.append((change.ref, fields))
        }
        return held
    }

    /// The fields `record` reads now, when it is visible through a liveness dot of this
    /// replica that the purging side had not seen.
    func heldByOwnWrite(_ record: ConcordCore.Record, unseenBy seen: (Stamp) -> Bool) -> [String: FieldValue]? {
        guard record.isVisible,
              record.slots[.liveness]?.entries.contains(where: { $0.dot.replica == replicaID && seen($0.dot) }) == true
        else { return nil }
        return record.fields
    }

    /// Writes back, as a local write of this replica, every field a purge took from records
    /// its own concurrent write keeps alive: the record ends with every field it held, as if
    /// there had been no purge (rule 4), on every replica once this write syncs.
    func writeBack(_ db: Database, _ held: [(RecordRef, [String: FieldValue])]) throws -> ChangedFields {
        let transaction = WriteTransaction(db: db, store: self)
        for (ref, before) in held {
            let after = try SlotIO.record(db, ref)?.fields ?? [:]
            var writes: [String: FieldWrite] = [:]
            for (name, value) in before where after[name] != value {
                switch value {
                case let .scalar(scalar): writes[name] = .scalar(scalar)
                case let .set(elements): writes[name] = .set(elements)
                case let .file(file): writes[name] = .file(file)
                }
            }
            if !writes.isEmpty { try transaction.put(ref, writes) }
        }
        try transaction.finish()
        return transaction.changed
    }
}
