import ConcordCodec
import ConcordCore
import Foundation
import GRDB

/// The app's reads: records, raw state, the canonical dump and conflicts.
extension Store {
    /// The visible fields of a record, or nil if it is not visible.
    ///
    /// ```swift
    /// if let fields = try store.record(RecordRef(collection: "games", id: "zelda")) {
    ///     for (name, value) in fields { print(name, value) }  // sorted by name
    /// }
    /// ```
    ///
    /// Nil for a record that never existed and for a deleted one alike.
    public func record(_ ref: RecordRef) throws(ConcordError) -> [(name: String, value: FieldValue)]? {
        do {
            if case let .read(fields) = try pointReader.record(ref) { return fields }
        } catch let error as ConcordError {
            throw error
        } catch {
            throw Store.storageError(error, doing: "read \(path)")
        }
        // Another thread is reading through the point-read connection: read through the pool.
        return try readStatement { db in
            guard let record = try SlotIO.record(db, ref), record.isVisible else { return nil }
            return record.sortedFields
        }
    }

    /// The visible records of a collection, sorted by id.
    ///
    /// ```swift
    /// for (id, fields) in try store.records(in: "games") {
    ///     print(id, fields.map(\.name))  // each record's fields, sorted by name
    /// }
    /// ```
    public func records(in collection: String) throws(ConcordError) -> [(id: String, fields: [(name: String, value: FieldValue)])] {
        try read { db in
            let ids = try String.fetchAll(db, sql: """
                SELECT DISTINCT id FROM concord_dots WHERE collection = ? AND kind = \(Rows.slotLiveness)
                """, arguments: [collection])
            return try ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.compactMap { id in
                guard let record = try SlotIO.record(db, RecordRef(collection: collection, id: id)), record.isVisible else { return nil }
                return (id: id, fields: record.sortedFields)
            }
        }
    }

    /// The stored record with every slot, visible or not (for diagnosis and tests).
    public func rawRecord(_ ref: RecordRef) throws(ConcordError) -> ConcordCore.Record? {
        try read { db in try SlotIO.record(db, ref) }
    }

    /// The whole replicated state, as the core sees it.
    public func state() throws(ConcordError) -> StoreState {
        try read { db in try SlotIO.state(db) }
    }

    /// The canonical dump (docs/ARCHITECTURE.md §2): byte-identical on replicas that have seen the same
    /// changes, and equal to the core's dump of the same state.
    public func canonicalDump() throws(ConcordError) -> String {
        CanonicalDump.json(of: try state())
    }

    /// Every open conflict, in canonical order.
    ///
    /// ```swift
    /// for conflict in try store.conflicts() where conflict.kind == .deleteUpdate {
    ///     try store.keepRecord(conflict.ref)  // or delete it again
    /// }
    /// ```
    ///
    /// A `fileFork` lists the versions of a file field that replicas wrote concurrently
    /// (``keepVersion(_:_:hash:)`` keeps one); a `deleteUpdate`, a record deleted while
    /// another replica changed it (``keepRecord(_:)`` or ``delete(_:)``). The list is the same
    /// on every replica that has seen the same changes.
    public func conflicts() throws(ConcordError) -> [Conflict] {
        try read { db in
            let candidates = try Row.fetchAll(db, sql: """
                SELECT collection, id FROM concord_dots WHERE kind = \(Rows.slotTombstones)
                UNION SELECT collection, id FROM concord_fields WHERE versions > 1
                """)
            var conflicts: [Conflict] = []
            for row in candidates {
                let ref = RecordRef(collection: row["collection"], id: row["id"])
                if let record = try SlotIO.record(db, ref) { conflicts += record.conflicts(ref: ref) }
            }
            return conflicts.sorted(by: Conflict.canonicalOrder)
        }
    }
}
