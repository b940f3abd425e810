import ConcordCodec
import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

/// Reads and writes whole slots (docs/ARCHITECTURE.md §2) in the store's tables. The common paths —
/// a local scalar write, a remote write that replaces an observed value — bypass this with
/// single upserts; everything else goes through here, so the store's state is always the
/// core's `Record` slots, row for row.
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
        let rows = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT 0 AS source, hlc, replica, NULL AS field, kind, NULL AS value, NULL AS file_size, NULL AS media_type, NULL AS element
                FROM concord_dots WHERE collection = ?1 AND id = ?2
            UNION ALL
            SELECT 1, hlc, replica, field, kind, value, file_size, media_type, NULL FROM concord_fields WHERE collection = ?1 AND id = ?2
            UNION ALL
            SELECT 1, hlc, replica, field, kind, value, file_size, media_type, NULL FROM concord_field_versions WHERE collection = ?1 AND id = ?2
            UNION ALL
            SELECT 2, hlc, replica, field, 0, NULL, NULL, NULL, element FROM concord_elements WHERE collection = ?1 AND id = ?2
            """), arguments: [ref.collection, ref.id])
        // Columns by position: 0 source, 1 hlc, 2 replica, 3 field, 4 kind, 5 value,
        // 6 file_size, 7 media_type, 8 element.
        var slots: [SlotKey: ConcordCore.Slot] = [:]
        while let row = try rows.next() {
            let key: SlotKey
            let payload: Payload
            switch row[0] as Int64 {
            case 0:
                key = (row[4] as Int64) == Rows.slotLiveness ? .liveness : .tombstones
                payload = .marker
            case 1:
                key = .field(row[3])
                payload = try Rows.payload(row, kind: 4)
            default:
                key = .element(row[3], try element(row[8]))
                payload = .marker
            }
            slots[key, default: ConcordCore.Slot()].entries.append(Entry(dot: try Rows.stamp(row, hlc: 1, replica: 2), payload: payload))
        }
        guard !slots.isEmpty else { return nil }
        for key in slots.keys where slots[key]!.entries.count > 1 { slots[key]!.entries.sort { $0.dot < $1.dot } }
        return ConcordCore.Record(slots: slots)
    }

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

    // MARK: Writing

    /// Replaces a slot's entries. A local write passes its hlc as `dirty`, marking the slot
    /// in the outbox; remote changes pass 0 and leave an existing mark as it is.
    static func replace(_ db: Database, _ ref: RecordRef, _ key: SlotKey, with entries: [Entry], dirty: UInt64) throws {
        switch key {
        case .liveness, .tombstones:
            let kind = key == .liveness ? Rows.slotLiveness : Rows.slotTombstones
            try db.cachedStatement(sql: "DELETE FROM concord_dots WHERE collection = ? AND id = ? AND kind = ?")
                .execute(arguments: [ref.collection, ref.id, kind])
            let insert = try db.cachedStatement(sql: "INSERT INTO concord_dots (collection, id, kind, hlc, replica) VALUES (?, ?, ?, ?, ?)")
            for entry in entries {
                try insert.execute(arguments: [ref.collection, ref.id, kind, Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica)])
            }
            if dirty > 0 { try markOutbox(db, ref, kind: kind, field: "", element: Data(), hlc: dirty) }
        case let .element(name, element):
            let encoded = Data(ScalarCodec.encode(element))
            try db.cachedStatement(sql: "DELETE FROM concord_elements WHERE collection = ? AND id = ? AND field = ? AND element = ?")
                .execute(arguments: [ref.collection, ref.id, name, encoded])
            let insert = try db.cachedStatement(sql: """
                INSERT INTO concord_elements (collection, id, field, element, hlc, replica) VALUES (?, ?, ?, ?, ?, ?)
                """)
            for entry in entries {
                try insert.execute(arguments: [ref.collection, ref.id, name, encoded, Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica)])
            }
            if dirty > 0 { try markOutbox(db, ref, kind: Rows.slotElement, field: name, element: encoded, hlc: dirty) }
        case let .field(name):
            try db.cachedStatement(sql: "DELETE FROM concord_field_versions WHERE collection = ? AND id = ? AND field = ?")
                .execute(arguments: [ref.collection, ref.id, name])
            guard let winner = entries.last else {
                try db.cachedStatement(sql: "DELETE FROM concord_fields WHERE collection = ? AND id = ? AND field = ?")
                    .execute(arguments: [ref.collection, ref.id, name])
                if dirty > 0 { try markOutbox(db, ref, kind: Rows.slotField, field: name, element: Data(), hlc: dirty) }
                return
            }
            // The seal finds dirty fields through their record's liveness row in the outbox.
            if dirty > 0 { try markOutbox(db, ref, kind: Rows.slotLiveness, field: "", element: Data(), hlc: dirty) }
            let columns = Rows.columns(winner.payload)
            try db.cachedStatement(sql: """
                INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                ON CONFLICT (collection, id, field) DO UPDATE SET
                    kind = ?4, value = ?5, file_size = ?6, media_type = ?7, hlc = ?8, replica = ?9, versions = ?10,
                    dirty = max(concord_fields.dirty, ?11)
                """).execute(arguments: [
                    ref.collection, ref.id, name, columns.kind, columns.value, columns.size, columns.type,
                    Rows.hlc(winner.dot.hlc), Rows.replicaBlob(winner.dot.replica), entries.count, Rows.hlc(dirty),
                ])
            let insert = try db.cachedStatement(sql: """
                INSERT INTO concord_field_versions (collection, id, field, hlc, replica, kind, value, file_size, media_type)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for entry in entries.dropLast() {
                let columns = Rows.columns(entry.payload)
                try insert.execute(arguments: [
                    ref.collection, ref.id, name, Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica),
                    columns.kind, columns.value, columns.size, columns.type,
                ])
            }
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
    /// Marks a slot in the outbox: parameters 1 to 5 the row's key, 6 the write's hlc. A new
    /// row's `low` is that hlc; an existing row keeps its own, which is no later (the clock
    /// only moves forward).
    static let markOutboxSQL = """
        INSERT INTO concord_outbox (collection, id, kind, field, element, hlc, low) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
        ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc)
        """

    static func markOutbox(_ db: Database, _ ref: RecordRef, kind: Int64, field: String, element: Data, hlc: UInt64) throws {
        try db.cachedStatement(sql: markOutboxSQL).execute(arguments: [ref.collection, ref.id, kind, field, element, Rows.hlc(hlc)])
    }

    /// Every slot key of a record.
    static func slotKeys(_ db: Database, _ ref: RecordRef) throws -> [SlotKey] {
        guard let record = try record(db, ref) else { return [] }
        return Array(record.slots.keys)
    }

    /// The slots touched locally since the last seal — with `upTo`, only those whose last
    /// local write has hlc ≤ `upTo`. Every such slot's outbox row has `low` ≤ `upTo`, so only
    /// those rows are read (through their index), not the whole outbox.
    static func outbox(_ db: Database, upTo: UInt64 = .max) throws -> [RecordRef: Set<SlotKey>] {
        try outbox(db, upTo: upTo, readingFields: false).slots
    }

    /// ``outbox(_:upTo:)``, and with `readingFields` the entry of each dirty field it lists
    /// that holds exactly one (`versions` = 1), read by the same query: nearly every slot a
    /// seal carries, which then needs no query of its own (``entries(_:_:_:)``).
    static func outbox(
        _ db: Database, upTo: UInt64, readingFields: Bool
    ) throws -> (slots: [RecordRef: Set<SlotKey>], fields: [RecordRef: [String: Entry]]) {
        var slots: [RecordRef: Set<SlotKey>] = [:]
        var fields: [RecordRef: [String: Entry]] = [:]
        let limit = Rows.hlc(upTo)
        // Columns by position: 0 collection, 1 id, 2 field, then with `readingFields` 3
        // versions, 4 kind, 5 value, 6 file_size, 7 media_type, 8 hlc, 9 replica.
        let dirty = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT f.collection, f.id, f.field\(readingFields ? ", f.versions, f.kind, f.value, f.file_size, f.media_type, f.hlc, f.replica" : "")
                FROM concord_outbox o JOIN concord_fields f ON f.collection = o.collection AND f.id = o.id
                WHERE o.low <= ?1 AND o.kind = \(Rows.slotLiveness) AND f.dirty > \(Rows.cleanSQL) AND f.dirty <= ?1
            """), arguments: [limit])
        while let row = try dirty.next() {
            let ref = RecordRef(collection: row[0], id: row[1])
            let name: String = row[2]
            slots[ref, default: []].insert(.field(name))
            if readingFields, (row[3] as Int64) == 1 {
                fields[ref, default: [:]][name] = Entry(dot: try Rows.stamp(row, hlc: 8, replica: 9), payload: try Rows.payload(row, kind: 4))
            }
        }
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT collection, id, kind, field, element FROM concord_outbox WHERE low <= ?1 AND hlc <= ?1"),
                                       arguments: [limit])
        while let row = try rows.next() {
            let ref = RecordRef(collection: row[0], id: row[1])
            let key: SlotKey
            switch row[2] as Int64 {
            case Rows.slotLiveness: key = .liveness
            case Rows.slotTombstones: key = .tombstones
            case Rows.slotField: key = .field(row[3])
            case Rows.slotElement: key = .element(row[3], try element(row[4]))
            case Rows.wholeRecord:
                // A purge: the record is listed even if no slot of it is.
                slots[ref, default: []].formUnion([])
                continue
            default: throw ConcordError(.corrupt, "the outbox holds an unknown slot kind")
            }
            slots[ref, default: []].insert(key)
        }
        return (slots, fields)
    }

    /// Whether nothing waits to be sealed: a record with a dirty field has its liveness in
    /// the outbox, so one probe of the outbox says.
    static func outboxIsEmpty(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT NOT EXISTS (SELECT 1 FROM concord_outbox)")) ?? false
    }

    /// The records purged since the last seal (up to `upTo`): the next delta ships them whole.
    static func wholeRecords(_ db: Database, upTo: UInt64 = .max) throws -> Set<RecordRef> {
        let rows = try Row.fetchAll(db.cachedStatement(sql: "SELECT collection, id FROM concord_outbox WHERE low <= ?2 AND kind = ?1 AND hlc <= ?2"),
                                    arguments: [Rows.wholeRecord, Rows.hlc(upTo)])
        return Set(rows.map { RecordRef(collection: $0["collection"], id: $0["id"]) })
    }

    /// The hlcs of the slots in the outbox, each of the stored form (``Rows/hlc(_:)``), in
    /// ascending order, from the first up to past the `count`th: all of them below some hlc
    /// that more than `count` slots are below, or all of them if there are not that many.
    /// The rows are read in `low` order, and every slot a row stands for is at least its
    /// `low`: a slot is known for sure to be among the first once the rows still unread
    /// start past it.
    static func earliestSlotStamps(_ db: Database, count: Int) throws -> [Int64] {
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT low, hlc, kind, collection, id FROM concord_outbox ORDER BY low"))
        let dirtyFields = try db.cachedStatement(sql: """
            SELECT dirty FROM concord_fields WHERE collection = ? AND id = ? AND dirty > \(Rows.cleanSQL)
            """)
        var settled: [Int64] = []
        var waiting = StampHeap()
        while let row = try rows.next() {
            let low: Int64 = row[0]
            while let next = waiting.min, next < low { settled.append(waiting.removeMin()) }
            if settled.count > count { return settled }
            waiting.insert(row[1])
            if row[2] as Int64 == Rows.slotLiveness {
                let marks = try Int64.fetchCursor(dirtyFields, arguments: [row[3] as String, row[4] as String])
                while let mark = try marks.next() { waiting.insert(mark) }
            }
        }
        while waiting.min != nil { settled.append(waiting.removeMin()) }
        return settled
    }

    /// Clears the sealed part of the outbox — every slot last written at or before `upTo` —
    /// and gives each row that stays, of `low` ≤ `upTo`, its new `low`: the earliest of its
    /// own hlc and its record's fields still dirty. Only rows of `low` ≤ `upTo` are touched.
    static func clearOutbox(_ db: Database, upTo: UInt64) throws {
        let arguments: StatementArguments = [Rows.hlc(upTo)]
        try db.cachedStatement(sql: """
            UPDATE concord_fields SET dirty = \(Rows.cleanSQL)
                FROM (SELECT collection, id FROM concord_outbox WHERE low <= ?1 AND kind = \(Rows.slotLiveness)) o
                WHERE concord_fields.collection = o.collection AND concord_fields.id = o.id
                    AND concord_fields.dirty > \(Rows.cleanSQL) AND concord_fields.dirty <= ?1
            """).execute(arguments: arguments)
        try db.cachedStatement(sql: "DELETE FROM concord_outbox WHERE low <= ?1 AND hlc <= ?1").execute(arguments: arguments)
        try db.cachedStatement(sql: """
            UPDATE concord_outbox SET low = CASE WHEN kind = \(Rows.slotLiveness) THEN min(hlc, coalesce(
                (SELECT min(f.dirty) FROM concord_fields f WHERE f.collection = concord_outbox.collection AND f.id = concord_outbox.id
                    AND f.dirty > \(Rows.cleanSQL)), hlc)) ELSE hlc END
                WHERE low <= ?1
            """).execute(arguments: arguments)
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
            guard var record = current else { return }
            for key in record.slots.keys where record.slots[key]!.entries.count > 1 { record.slots[key]!.entries.sort { $0.dot < $1.dot } }
            try body(record.ref, ConcordCore.Record(slots: record.slots))
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
            let key: SlotKey
            let payload: Payload
            switch columns.int64(2) {
            case 0:
                key = columns.int64(3) == Rows.slotLiveness ? .liveness : .tombstones
                payload = .marker
            case 1:
                key = .field(columns.text(9))
                payload = try Rows.payload(columns, kind: 3)
            default:
                key = .element(columns.text(9), try element(Data(columns.blob(4) ?? [])))
                payload = .marker
            }
            current!.slots[key, default: ConcordCore.Slot()].entries.append(Entry(dot: try columns.stamp(hlc: 7, replica: 8), payload: payload))
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

    static func setContext(_ db: Database, _ replica: ReplicaID, _ hlc: UInt64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO concord_context (replica, hlc) VALUES (?, ?)
            ON CONFLICT (replica) DO UPDATE SET hlc = max(hlc, excluded.hlc)
            """).execute(arguments: [Rows.replicaBlob(replica), Rows.hlc(hlc)])
    }
}

extension SlotIO {
    /// Writes `state` into a store whose record tables are empty — a new replica joining its
    /// first snapshot — and returns, per record, the fields written (``FreshInsert``).
    static func insertAll(_ db: Database, _ state: StoreState) throws -> [RecordRef: Set<String>] {
        var insert = try FreshInsert(db)
        var changes: [RecordRef: Set<String>] = [:]
        changes.reserveCapacity(state.records.count)
        // In key order: the tables' keys start with (collection, id), so each insert lands
        // beside the last instead of on a random page of a table larger than the page cache.
        for (ref, record) in state.records.sorted(by: { $0.key < $1.key }) {
            try insert.insert(ref, record.slots.map { (key: $0.key, entries: $0.value.entries) })
            changes[ref] = Set(record.slots.keys.compactMap(\.fieldName))
        }
        return changes
    }

    /// Inserts records, one at a time, into a store whose record tables hold none of them.
    /// The rows are those ``replace(_:_:_:with:dirty:)`` writes slot by slot from nothing
    /// (dirty 0), but inserted straight away: nothing to read, compare or delete first, and
    /// the arguments bound through SQLite's C API (``BoundStatement``). Fastest with the
    /// records in key order.
    struct FreshInsert {
        private let dots: BoundStatement
        private let elements: BoundStatement
        private let fields: BoundStatement
        private let versions: BoundStatement
        private var replicas: [ReplicaID: Data] = [:]
        private let clean = Rows.hlc(0)

        init(_ db: Database) throws {
            dots = try BoundStatement.cached(db, sql: "INSERT INTO concord_dots (collection, id, kind, hlc, replica) VALUES (?1, ?2, ?3, ?4, ?5)")
            elements = try BoundStatement.cached(db, sql: """
                INSERT INTO concord_elements (collection, id, field, element, hlc, replica) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                """)
            fields = try BoundStatement.cached(db, sql: """
                INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                """)
            versions = try BoundStatement.cached(db, sql: """
                INSERT INTO concord_field_versions (collection, id, field, hlc, replica, kind, value, file_size, media_type)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """)
        }

        private mutating func blob(_ replica: ReplicaID) -> Data {
            if let known = replicas[replica] { return known }
            let made = Rows.replicaBlob(replica)
            replicas[replica] = made
            return made
        }

        /// Inserts the record `ref` of `slots` (each key once).
        mutating func insert(_ ref: RecordRef, _ slots: [(key: SlotKey, entries: [Entry])]) throws {
            for (key, entries) in slots where !entries.isEmpty {
                switch key {
                case .liveness, .tombstones:
                    let kind = key == .liveness ? Rows.slotLiveness : Rows.slotTombstones
                    for entry in entries {
                        try dots.execute { binder in
                            binder.bind(ref)
                            binder.bind(kind, at: 3)
                            binder.bind(Rows.hlc(entry.dot.hlc), at: 4)
                            binder.bind(blob(entry.dot.replica), at: 5)
                        }
                    }
                case let .element(name, element):
                    let encoded = ScalarCodec.encode(element)
                    for entry in entries {
                        try elements.execute { binder in
                            binder.bind(ref)
                            binder.bind(name, at: 3)
                            binder.bind(encoded, at: 4)
                            binder.bind(Rows.hlc(entry.dot.hlc), at: 5)
                            binder.bind(blob(entry.dot.replica), at: 6)
                        }
                    }
                case let .field(name):
                    let winner = entries[entries.count - 1]
                    try fields.execute { binder in
                        binder.bind(ref)
                        binder.bind(name, at: 3)
                        binder.bind(winner.payload, at: 4)
                        binder.bind(Rows.hlc(winner.dot.hlc), at: 8)
                        binder.bind(blob(winner.dot.replica), at: 9)
                        binder.bind(Int64(entries.count), at: 10)
                        binder.bind(clean, at: 11)
                    }
                    for entry in entries.dropLast() {
                        try versions.execute { binder in
                            binder.bind(ref)
                            binder.bind(name, at: 3)
                            binder.bind(Rows.hlc(entry.dot.hlc), at: 4)
                            binder.bind(blob(entry.dot.replica), at: 5)
                            binder.bind(entry.payload, at: 6)
                        }
                    }
                }
            }
        }
    }
}

/// A binary min-heap of stored hlcs: the slots ``SlotIO/earliestSlotStamps(_:count:)`` has
/// read but cannot place yet.
private struct StampHeap {
    private var items: [Int64] = []

    var min: Int64? { items.first }

    mutating func insert(_ value: Int64) {
        items.append(value)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    /// Removes and returns the least value; the heap must not be empty.
    mutating func removeMin() -> Int64 {
        let least = items[0]
        let last = items.removeLast()
        guard !items.isEmpty else { return least }
        items[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            guard left < items.count else { break }
            let right = left + 1
            let child = right < items.count && items[right] < items[left] ? right : left
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            parent = child
        }
        return least
    }
}
