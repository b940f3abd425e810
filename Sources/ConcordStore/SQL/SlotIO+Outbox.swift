import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

extension SlotIO {
    // MARK: The outbox

    /// The slots touched locally since the last seal — with `upTo`, only those whose last
    /// local write has hlc ≤ `upTo`. Every such slot's outbox row has `low` ≤ `upTo`, so only
    /// those rows are read (through their index), not the whole outbox. (A seal reads its
    /// batch with the entries, ``sealBatch(_:upTo:)``.)
    static func outbox(_ db: Database, upTo: UInt64 = .max) throws -> [RecordRef: Set<SlotKey>] {
        var slots: [RecordRef: Set<SlotKey>] = [:]
        let limit = Rows.hlc(upTo)
        let dirty = try Row.fetchCursor(db.cachedStatement(sql: """
            SELECT f.collection, f.id, f.field
                FROM concord_outbox o JOIN concord_fields f ON f.collection = o.collection AND f.id = o.id
                WHERE o.low <= ?1 AND o.kind = \(Rows.slotLiveness) AND f.dirty > \(Rows.cleanSQL) AND f.dirty <= ?1
            """), arguments: [limit])
        while let row = try dirty.next() {
            slots[RecordRef(collection: row[0], id: row[1]), default: []].insert(.field(row[2]))
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
        return slots
    }

    /// Whether nothing waits to be sealed: a record with a dirty field has its liveness in
    /// the outbox, so one probe of the outbox says.
    static func outboxIsEmpty(_ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT NOT EXISTS (SELECT 1 FROM concord_outbox)")) ?? false
    }

    /// The hlcs of the slots in the outbox, each of the stored form (``Rows/hlc(_:)``), in
    /// ascending order, from the first up to past the `count`th: all of them below some hlc
    /// that more than `count` slots are below, or all of them if there are not that many.
    /// The rows are read in `low` order, and every slot a row stands for is at least its
    /// `low`: a slot is known for sure to be among the first once the rows still unread
    /// start past it.
    ///
    /// Both statements are stepped through SQLite's C API: through GRDB's cursors and
    /// arguments, the query of each liveness row's fields cost more than SQLite's work.
    static func earliestSlotStamps(_ db: Database, count: Int) throws -> [Int64] {
        let rowsSQL = BoundStatement.marked("SELECT low, hlc, kind, collection, id FROM concord_outbox ORDER BY low")
        let dirtySQL = BoundStatement.marked("""
            SELECT dirty FROM concord_fields WHERE collection = ?1 AND id = ?2 AND dirty > \(Rows.cleanSQL)
            """)
        let rows = try db.cachedStatement(sql: rowsSQL).sqliteStatement
        let dirtyFields = try db.cachedStatement(sql: dirtySQL).sqliteStatement
        sqlite3_reset(rows)
        defer { sqlite3_reset(rows) }
        let columns = Columns(rows)
        let marks = Columns(dirtyFields)
        var settled: [Int64] = []
        var waiting = StampHeap()
        while true {
            let code = sqlite3_step(rows)
            if code == SQLITE_DONE { break }
            guard code == SQLITE_ROW else { throw DatabaseError(code: code, on: sqlite3_db_handle(rows), sql: rowsSQL) }
            let low = columns.int64(0)
            while let next = waiting.min, next < low { settled.append(waiting.removeMin()) }
            if settled.count > count { return settled }
            waiting.insert(columns.int64(1))
            if columns.int64(2) == Rows.slotLiveness {
                // The record's key, bound as the row holds it (SQLite copies it).
                sqlite3_reset(dirtyFields)
                for column: Int32 in 3...4 {
                    sqlite3_bind_text(dirtyFields, column - 2, sqlite3_column_text(rows, column), sqlite3_column_bytes(rows, column), transient)
                }
                defer { sqlite3_reset(dirtyFields) }
                try marks.forEachRow(sql: dirtySQL) { waiting.insert(marks.int64(0)) }
            }
        }
        while waiting.min != nil { settled.append(waiting.removeMin()) }
        return settled
    }

    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    /// Clears the sealed part of the outbox — every slot last written at or before `upTo` —
    /// and gives each row that stays, of `low` ≤ `upTo`, its new `low`: the earliest of its
    /// own hlc and its record's fields still dirty. Only rows of `low` ≤ `upTo` are touched.
    ///
    /// `fieldRows` are the rowids of the dirty fields sealed (``sealBatch(_:upTo:)``), every
    /// field of a liveness row of `low` ≤ `upTo` marked at or before `upTo`: they are cleared
    /// by rowid, a run of consecutive rowids (a record's fields, written together) by one
    /// statement, where finding them again by key through the outbox cost more than reading
    /// them.
    static func clearOutbox(_ db: Database, upTo: UInt64, fieldRows: [Int64]) throws {
        let clear = try BoundStatement.cached(db, sql: "UPDATE concord_fields SET dirty = \(Rows.cleanSQL) WHERE rowid BETWEEN ?1 AND ?2")
        var index = 0
        let rowids = fieldRows.sorted()
        while index < rowids.count {
            let first = rowids[index]
            var last = first
            index += 1
            while index < rowids.count, rowids[index] <= last + 1 {
                last = rowids[index]
                index += 1
            }
            try clear.execute { binder in
                binder.bind(first, at: 1)
                binder.bind(last, at: 2)
            }
        }
        let arguments: StatementArguments = [Rows.hlc(upTo)]
        try db.cachedStatement(sql: "DELETE FROM concord_outbox WHERE low <= ?1 AND hlc <= ?1").execute(arguments: arguments)
        try db.cachedStatement(sql: """
            UPDATE concord_outbox SET low = CASE WHEN kind = \(Rows.slotLiveness) THEN min(hlc, coalesce(
                (SELECT min(f.dirty) FROM concord_fields f WHERE f.collection = concord_outbox.collection AND f.id = concord_outbox.id
                    AND f.dirty > \(Rows.cleanSQL)), hlc)) ELSE hlc END
                WHERE low <= ?1
            """).execute(arguments: arguments)
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
