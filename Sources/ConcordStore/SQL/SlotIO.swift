import ConcordCodec
import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

/// Reads and writes whole slots (docs/ARCHITECTURE.md §2) in the store's tables. The common paths —
/// a local scalar write, a remote write that replaces an observed value — bypass this with
/// single upserts; everything else goes through here, so the store's state is always the
/// core's `Record` slots, row for row.
///
/// Reading is here; writing slots (and inserting a first snapshot) is in `SlotIO+Write.swift`,
/// the outbox's queries in `SlotIO+Outbox.swift`.
enum SlotIO {
    // MARK: Reading

    /// The entries of one slot, sorted by dot.
    static func entries(_ db: Database, _ ref: RecordRef, _ key: SlotKey) throws -> [Entry] {
        var entries: [Entry] = []
        switch key {
        case .liveness, .tombstones:
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT hlc, replica FROM concord_dots WHERE collection = ? AND id = ? AND kind = ?
                """), arguments: [ref.collection, ref.id, key == .liveness ? Rows.slotLiveness : Rows.slotTombstones])
            while let row = try rows.next() { entries.append(Entry(dot: try Rows.stamp(row), payload: .marker)) }
        case let .field(name):
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT hlc, replica, kind, value, file_size, media_type FROM concord_fields
                    WHERE collection = ? AND id = ? AND field = ?
                UNION ALL
                SELECT hlc, replica, kind, value, file_size, media_type FROM concord_field_versions
                    WHERE collection = ? AND id = ? AND field = ?
                """), arguments: [ref.collection, ref.id, name, ref.collection, ref.id, name])
            while let row = try rows.next() { entries.append(Entry(dot: try Rows.stamp(row), payload: try Rows.payload(row, kind: 2))) }
        case let .element(name, element):
            let rows = try Row.fetchCursor(db.cachedStatement(sql: """
                SELECT hlc, replica FROM concord_elements WHERE collection = ? AND id = ? AND field = ? AND element = ?
                """), arguments: [ref.collection, ref.id, name, Data(ScalarCodec.encode(element))])
            while let row = try rows.next() { entries.append(Entry(dot: try Rows.stamp(row), payload: .marker)) }
        }
        entries.sort { $0.dot < $1.dot }
        return entries
    }

    /// Every slot of one record, or nil if it has none: one cached query over the three
    /// tables that hold a record's entries.
    static func record(_ db: Database, _ ref: RecordRef) throws -> ConcordCore.Record? {
        try record(db.cachedStatement(sql: BoundStatement.marked(recordSQL)), ref)
    }

    /// Every slot of `ref`, or nil if it has none, read with `statement`: ``recordSQL``
    /// (``BoundStatement/marked(_:)``) stepped through SQLite's C API with its columns read
    /// in place — GRDB's rows and cursors would cost as much as SQLite's work. The one walk
    /// of a record's rows: ``record(_:_:)`` and the pivot's reads (``PivotReader``).
    static func record(_ statement: Statement, _ ref: RecordRef) throws -> ConcordCore.Record? {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        BoundStatement.Binder(handle: handle).bind(ref)
        let columns = Columns(handle)
        // Columns by position: 0 source, 1 hlc, 2 replica, 3 field, 4 kind, 5 value,
        // 6 file_size, 7 media_type, 8 element.
        var slots: [SlotKey: ConcordCore.Slot] = [:]
        try columns.forEachRow(sql: recordSQL) {
            let (key, entry) = try slotEntry(columns, RowLayout(source: 0, hlc: 1, replica: 2, field: 3, kind: 4, element: 8))
            slots[key, default: ConcordCore.Slot()].entries.append(entry)
        }
        guard !slots.isEmpty else { return nil }
        return sortedRecord(slots)
    }

    /// Where a record walk's query holds the columns ``slotEntry(_:_:)`` reads; the value
    /// follows `kind` (``Rows/payload(_:kind:)``).
    private struct RowLayout {
        let source, hlc, replica, field, kind, element: Int32
    }

    /// One row of a record walk (``record(_:_:)``, ``forEachRecord(_:_:)``): the slot it
    /// belongs to and its entry. The row's source is 0 for a dot (liveness or tombstone, by
    /// its kind), 1 for a field entry, 2 for a set element.
    private static func slotEntry(_ columns: Columns, _ at: RowLayout) throws -> (SlotKey, Entry) {
        let key: SlotKey
        let payload: Payload
        switch columns.int64(at.source) {
        case 0:
            key = columns.int64(at.kind) == Rows.slotLiveness ? .liveness : .tombstones
            payload = .marker
        case 1:
            key = .field(columns.text(at.field))
            payload = try Rows.payload(columns, kind: at.kind)
        default:
            key = .element(columns.text(at.field), try element(columns.bytes(at.element) { Data($0) }))
            payload = .marker
        }
        return (key, Entry(dot: try columns.stamp(hlc: at.hlc, replica: at.replica), payload: payload))
    }

    /// The record of `slots` walked, each slot's entries sorted by dot.
    private static func sortedRecord(_ slots: [SlotKey: ConcordCore.Slot]) -> ConcordCore.Record {
        var slots = slots
        for key in slots.keys where slots[key]!.entries.count > 1 { slots[key]!.entries.sort { $0.dot < $1.dot } }
        return ConcordCore.Record(slots: slots)
    }

    /// The query of ``record(_:_:)``: every row of one record, `?1` its collection and `?2`
    /// its id.
    static let recordSQL = """
        SELECT 0 AS source, hlc, replica, NULL AS field, kind, NULL AS value, NULL AS file_size, NULL AS media_type, NULL AS element
            FROM concord_dots WHERE collection = ?1 AND id = ?2
        UNION ALL
        SELECT 1, hlc, replica, field, kind, value, file_size, media_type, NULL FROM concord_fields WHERE collection = ?1 AND id = ?2
        UNION ALL
        SELECT 1, hlc, replica, field, kind, value, file_size, media_type, NULL FROM concord_field_versions WHERE collection = ?1 AND id = ?2
        UNION ALL
        SELECT 2, hlc, replica, field, 0, NULL, NULL, NULL, element FROM concord_elements WHERE collection = ?1 AND id = ?2
        """

    /// A record's liveness dots, whether it has any row at all, and whether it has set
    /// elements: the first write of a record in a transaction asks this. `statement` is
    /// ``livenessAndExistenceSQL`` prepared on the writer's connection, stepped through
    /// SQLite's C API (a read: GRDB has nothing to observe).
    static func livenessAndExistence(
        _ statement: Statement, _ ref: RecordRef
    ) throws -> (liveness: [Entry], exists: Bool, hasElements: Bool) {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        BoundStatement.Binder(handle: handle).bind(ref)
        let columns = Columns(handle)
        var liveness: [Entry] = []
        var exists = false
        var hasElements = false
        try columns.forEachRow(sql: livenessAndExistenceSQL) {
            exists = true
            switch columns.int64(0) {
            case Rows.slotLiveness: liveness.append(Entry(dot: try columns.stamp(hlc: 1, replica: 2), payload: .marker))
            case -2: hasElements = true
            default: break  // a tombstone, or the record's fields
            }
        }
        liveness.sort { $0.dot < $1.dot }
        return (liveness, exists, hasElements)
    }

    static func element(_ data: Data) throws -> ScalarValue {
        do {
            return try ScalarCodec.decode([UInt8](data))
        } catch {
            throw ConcordError(.corrupt, "a set element is stored in an unreadable form: \(error.message)")
        }
    }

    /// The query of ``livenessAndExistence(_:_:)``: the record's dots (liveness and
    /// tombstones: one range of one index), then a row of kind -1 if it has fields and one of
    /// kind -2 if it has set elements. Three descents, whether the record is new or not.
    static let livenessAndExistenceSQL = """
        SELECT kind, hlc, replica FROM concord_dots WHERE collection = ?1 AND id = ?2
        UNION ALL
        SELECT -1, NULL, NULL WHERE EXISTS (SELECT 1 FROM concord_fields WHERE collection = ?1 AND id = ?2)
        UNION ALL
        SELECT -2, NULL, NULL WHERE EXISTS (SELECT 1 FROM concord_elements WHERE collection = ?1 AND id = ?2)
        """

    /// Every slot key of a record.
    static func slotKeys(_ db: Database, _ ref: RecordRef) throws -> [SlotKey] {
        guard let record = try record(db, ref) else { return [] }
        return Array(record.slots.keys)
    }

    /// Loads the whole state (every record and the context).
    static func state(_ db: Database) throws -> StoreState {
        var records: [RecordRef: ConcordCore.Record] = [:]
        func add(_ ref: RecordRef, _ key: SlotKey, _ entry: Entry) {
            records[ref, default: ConcordCore.Record()].slots[key, default: ConcordCore.Slot()].entries.append(entry)
        }
        let dots = try Row.fetchCursor(db.cachedStatement(sql: "SELECT collection, id, kind, hlc, replica FROM concord_dots"))
        while let row = try dots.next() {
            add(RecordRef(collection: row["collection"], id: row["id"]),
                (row["kind"] as Int64) == Rows.slotLiveness ? .liveness : .tombstones,
                Entry(dot: try Rows.stamp(row), payload: .marker))
        }
        let fields = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT collection, id, field, hlc, replica, kind, value, file_size, media_type FROM concord_fields
            UNION ALL
            SELECT collection, id, field, hlc, replica, kind, value, file_size, media_type FROM concord_field_versions
            """))
        while let row = try fields.next() {
            add(RecordRef(collection: row["collection"], id: row["id"]), .field(row["field"]),
                Entry(dot: try Rows.stamp(row), payload: try Rows.payload(row, kind: 5)))
        }
        let elements = try Row.fetchCursor(db.cachedStatement(sql: "SELECT collection, id, field, element, hlc, replica FROM concord_elements"))
        while let row = try elements.next() {
            add(RecordRef(collection: row["collection"], id: row["id"]), .element(row["field"], try element(row["element"])),
                Entry(dot: try Rows.stamp(row), payload: .marker))
        }
        for ref in records.keys {
            for key in records[ref]!.slots.keys { records[ref]!.slots[key]!.entries.sort { $0.dot < $1.dot } }
        }
        return StoreState(context: CausalContext(try context(db)), records: records)
    }

    /// Every record of the store, each whole, one at a time, in ascending order (collection,
    /// then id, bytewise: SQLite's BINARY order on UTF-8 text), each slot's entries sorted:
    /// what ``state(_:)`` holds, without holding it (a snapshot written as it is read).
    ///
    /// One statement merges the four tables by their primary keys, so no row is sorted and
    /// only the current record is in memory; it is stepped through SQLite's C API.
    static func forEachRecord(_ db: Database, _ body: (RecordRef, ConcordCore.Record) throws -> Void) throws {
        guard let connection = db.sqliteConnection else { throw ConcordError(.storage, "the database connection is closed") }
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v2(connection, allRecordsSQL, -1, &prepared, nil)
        guard code == SQLITE_OK, let statement = prepared else {
            sqlite3_finalize(prepared)
            throw DatabaseError(code: code, on: connection, sql: allRecordsSQL)
        }
        defer { sqlite3_finalize(statement) }
        let columns = Columns(statement)
        var current: (ref: RecordRef, slots: [SlotKey: ConcordCore.Slot])?
        func flush() throws {
            guard let record = current else { return }
            try body(record.ref, sortedRecord(record.slots))
        }
        try columns.forEachRow(sql: allRecordsSQL) {
            let collection = columns.text(0)
            let id = columns.text(1)
            if let ref = current?.ref, Bytewise.equal(ref.id, id), Bytewise.equal(ref.collection, collection) {
                // the same record
            } else {
                try flush()
                current = (RecordRef(collection: collection, id: id), [:])
            }
            let (key, entry) = try slotEntry(columns, RowLayout(source: 2, hlc: 7, replica: 8, field: 9, kind: 3, element: 4))
            current!.slots[key, default: ConcordCore.Slot()].entries.append(entry)
        }
        try flush()
    }

    /// The rows of ``forEachRecord(_:_:)``. Columns: 0 collection, 1 id, 2 source (0 dots,
    /// 1 field entries, 2 set elements), 3 kind, 4 value or element, 5 file_size,
    /// 6 media_type, 7 hlc, 8 replica, 9 field.
    static let allRecordsSQL = """
        SELECT collection, id, 0, kind, NULL, NULL, NULL, hlc, replica, NULL FROM concord_dots
        UNION ALL
        SELECT collection, id, 1, kind, value, file_size, media_type, hlc, replica, field FROM concord_fields
        UNION ALL
        SELECT collection, id, 1, kind, value, file_size, media_type, hlc, replica, field FROM concord_field_versions
        UNION ALL
        SELECT collection, id, 2, NULL, element, NULL, NULL, hlc, replica, field FROM concord_elements
        ORDER BY 1, 2
        """

    /// The version vector of everything applied.
    static func context(_ db: Database) throws -> VersionVector {
        var vector = VersionVector()
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT replica, hlc FROM concord_context")) {
            vector[try Rows.replica(row["replica"])] = Rows.hlc(stored: row["hlc"])
        }
        return vector
    }
}
