import ConcordCore
import Foundation
import GRDB

/// A deleted record that still holds metadata: field entries, set dots or tombstones.
public struct DeadRecord: Hashable, Sendable {
    public let ref: RecordRef
    /// Per replica, the greatest hlc among the record's entries. Once every active replica
    /// has seen these, the deletion is causally stable and the record can be purged.
    public let newest: VersionVector
}

extension Store {
    // MARK: Metadata purge (docs/ARCHITECTURE.md §4)

    /// Every record with no liveness dot that still holds entries, in canonical order.
    public func deadRecords() throws(ConcordError) -> [DeadRecord] {
        try read { db in
            let rows = try Row.fetchCursor(db, sql: """
                SELECT collection, id, replica, max(hlc) AS hlc, max(live) AS live FROM (
                    SELECT collection, id, replica, hlc, kind = \(Rows.slotLiveness) AS live FROM concord_dots
                    UNION ALL SELECT collection, id, replica, hlc, 0 FROM concord_fields
                    UNION ALL SELECT collection, id, replica, hlc, 0 FROM concord_field_versions
                    UNION ALL SELECT collection, id, replica, hlc, 0 FROM concord_elements)
                GROUP BY collection, id, replica
                ORDER BY collection, id
                """)
            var dead: [DeadRecord] = []
            var current: RecordRef?
            var newest = VersionVector()
            var live = false
            func finish() {
                if let current, !live { dead.append(DeadRecord(ref: current, newest: newest)) }
            }
            while let row = try rows.next() {
                let ref = RecordRef(collection: row["collection"], id: row["id"])
                if ref != current {
                    finish()
                    current = ref
                    newest = VersionVector()
                    live = false
                }
                newest[try Rows.replica(row["replica"])] = Rows.hlc(stored: row["hlc"])
                if (row["live"] as Int64) != 0 { live = true }
            }
            finish()
            return dead.sorted { $0.ref < $1.ref }
        }
    }

    /// Purges dead records whose every entry is within `stable`: what every active replica
    /// is known to have seen, and to have sealed nothing concurrent before. Each purged
    /// record's entries are dropped in one transaction — file versions go to history, kept
    /// for the retention window — and the record is marked in the outbox, so the next
    /// delta ships it whole and every replica drops what this one had seen of it. Records
    /// that came back to life or gained entries outside `stable` since ``deadRecords()``
    /// are left alone. Returns the records purged.
    @discardableResult
    public func purge(_ refs: [RecordRef], within stable: VersionVector) throws(ConcordError) -> [RecordRef] {
        guard !refs.isEmpty else { return [] }
        return try writeDatabase { db -> [RecordRef] in
            let now = configuration.clock.millisecondsSinceEpoch()
            var purged: [RecordRef] = []
            var dot: Stamp?
            for ref in refs {
                guard let record = try SlotIO.record(db, ref), !record.isVisible,
                      record.slots.values.allSatisfy({ $0.entries.allSatisfy { $0.dot.hlc <= stable[$0.dot.replica] } })
                else { continue }
                if dot == nil { dot = try tick(db) }
                for (key, slot) in record.slots {
                    if case let .field(name) = key {
                        try FileHistory.record(db, ref, name, superseded: slot.entries, by: [], at: now)
                    }
                    try SlotIO.replace(db, ref, key, with: [], dirty: 0)
                }
                try SlotIO.markOutbox(db, ref, kind: Rows.wholeRecord, field: "", element: Data(), hlc: dot!.hlc)
                purged.append(ref)
            }
            return purged
        }
    }

    /// What this replica has applied, with its own entry at its newest *sealed* write —
    /// or nil while local changes wait to be sealed, or when the newest sealed delta is
    /// not `pushedSeq`. Every write this replica made before it had applied this much is
    /// in a delta up to `pushedSeq`: a head that carries it lets other replicas tell
    /// when a deletion is causally stable.
    public func stableVector(pushedSeq: UInt64) throws(ConcordError) -> VersionVector? {
        try read { db in
            guard try SlotIO.outboxIsEmpty(db), try meta(db, "sealed_seq") == pushedSeq else { return nil }
            var vector = try SlotIO.context(db)
            vector[replicaID] = try meta(db, "sealed_up_to")
            return vector
        }
    }
}
