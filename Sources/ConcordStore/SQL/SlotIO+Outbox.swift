import ConcordCore
import Foundation
import GRDB

extension SlotIO {
    // MARK: The outbox

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
