import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

extension SlotIO {
    // MARK: Reading a batch to seal

    /// One record of a batch being sealed, as read with the outbox.
    struct SealRecord {
        let ref: RecordRef
        /// Purged since the last seal: the batch ships it whole, with whatever it holds now.
        var whole = false
        /// Its slots in canonical order, each with its entries where they were read with the
        /// outbox (nil: ``entries(_:_:_:)`` reads them).
        var slots: [(key: SlotKey, entries: [Entry]?)] = []
        /// Whether `slots` may be out of canonical order or hold a key twice, until
        /// ``sealBatch(_:upTo:)`` puts them in order: the liveness slot goes first and the
        /// dirty fields come in name order, so only a record with other slots, or whose
        /// fields came otherwise, needs sorting.
        fileprivate var unordered = false
    }

    /// The batch of every slot last written locally at or before `upTo`: its records sorted
    /// by ref, each with its slots in canonical order — the slots ``outbox(_:upTo:)`` lists,
    /// with the entries of nearly all of them — and the rowids of the dirty field rows it
    /// carries, for ``clearOutbox(_:upTo:fieldRows:)``.
    ///
    /// Two statements, stepped through SQLite's C API, read it all: the dirty fields of the
    /// records whose liveness row is of `low` ≤ `upTo`, with their entry when they hold one
    /// (`versions` = 1), and the outbox rows up to `upTo`, a liveness row with its record's
    /// liveness dots. A record's rows come one after another, so it is looked up once per
    /// run of rows, not once per row. Only a field of several entries, tombstones, set
    /// elements and a record shipped whole are read apart.
    static func sealBatch(_ db: Database, upTo: UInt64) throws -> (records: [SealRecord], fieldRows: [Int64]) {
        let limit = Rows.hlc(upTo)
        var records: [SealRecord] = []
        var indexes: [RecordRef: Int] = [:]
        var fieldRows: [Int64] = []
        /// The index in `records` of the record in columns 0 and 1, the last one's when the
        /// same.
        func record(_ columns: Columns, last: inout Int) -> Int {
            if last >= 0, columns.text(0, equals: records[last].ref.collection), columns.text(1, equals: records[last].ref.id) {
                return last
            }
            let ref = RecordRef(collection: columns.text(0), id: columns.text(1))
            if let index = indexes[ref] {
                last = index
                return index
            }
            records.append(SealRecord(ref: ref))
            indexes[ref] = records.count - 1
            last = records.count - 1
            return last
        }

        let fields = try db.cachedStatement(sql: sealFieldsSQL)
        try step(fields, sql: sealFieldsSQL, limit: limit) { columns in
            var last = -1
            try columns.forEachRow(sql: sealFieldsSQL) {
                let index = record(columns, last: &last)
                let entry: [Entry]? = columns.int64(3) == 1
                    ? [Entry(dot: try columns.stamp(hlc: 8, replica: 9), payload: try Rows.payload(columns, kind: 4))]
                    : nil
                if let previous = records[index].slots.last, case let .field(name) = previous.key, !columns.text(2, greaterThan: name) {
                    records[index].unordered = true
                }
                records[index].slots.append((key: .field(columns.text(2)), entries: entry))
                fieldRows.append(columns.int64(10))
            }
        }

        let rows = try db.cachedStatement(sql: sealOutboxSQL)
        try step(rows, sql: sealOutboxSQL, limit: limit) { columns in
            var last = -1
            try columns.forEachRow(sql: sealOutboxSQL) {
                let index = record(columns, last: &last)
                let key: SlotKey
                switch columns.int64(2) {
                case Rows.slotLiveness:
                    // One row per liveness dot (none: an empty slot), in dot order.
                    let dot = columns.isNull(5) ? nil : Entry(dot: try columns.stamp(hlc: 5, replica: 6), payload: .marker)
                    if case .liveness = records[index].slots.first?.key {
                        if let dot { records[index].slots[0].entries!.append(dot) }
                    } else {
                        records[index].slots.insert((key: .liveness, entries: dot.map { [$0] } ?? []), at: 0)
                    }
                    return
                case Rows.slotTombstones: key = .tombstones
                case Rows.slotField: key = .field(columns.text(3))
                case Rows.slotElement: key = .element(columns.text(3), try element(Data(columns.blob(4) ?? [])))
                case Rows.wholeRecord:
                    records[index].whole = true
                    return
                default: throw ConcordError(.corrupt, "the outbox holds an unknown slot kind")
                }
                records[index].slots.append((key: key, entries: nil))
                records[index].unordered = true
            }
        }

        for index in records.indices {
            if let liveness = records[index].slots.first?.entries, records[index].slots[0].key == .liveness, liveness.count > 1 {
                records[index].slots[0].entries = liveness.sorted { $0.dot < $1.dot }
            }
            guard records[index].unordered else { continue }
            // Keys in canonical order, each once (a field both dirty and in the outbox keeps
            // the entry read with it).
            var slots: [(key: SlotKey, entries: [Entry]?)] = []
            for slot in records[index].slots.sorted(by: { SlotKey.canonicalOrder($0.key, $1.key) }) {
                if let previous = slots.last, previous.key == slot.key {
                    if previous.entries == nil { slots[slots.count - 1].entries = slot.entries }
                } else {
                    slots.append(slot)
                }
            }
            records[index].slots = slots
            records[index].unordered = false
        }
        records.sort { $0.ref < $1.ref }
        return (records, fieldRows)
    }

    /// Binds `limit` to `statement`'s `?1` and runs `body` over its columns, the statement
    /// reset again after.
    private static func step(_ statement: Statement, sql: String, limit: Int64, _ body: (Columns) throws -> Void) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        sqlite3_bind_int64(handle, 1, limit)
        try body(Columns(handle))
    }

    /// The dirty fields of a batch (``sealBatch(_:upTo:)``). Columns: 0 collection, 1 id,
    /// 2 field, 3 versions, 4 kind, 5 value, 6 file_size, 7 media_type, 8 hlc, 9 replica,
    /// 10 rowid.
    private static let sealFieldsSQL = BoundStatement.marked("""
        SELECT f.collection, f.id, f.field, f.versions, f.kind, f.value, f.file_size, f.media_type, f.hlc, f.replica, f.rowid
            FROM concord_outbox o JOIN concord_fields f ON f.collection = o.collection AND f.id = o.id
            WHERE o.low <= ?1 AND o.kind = \(Rows.slotLiveness) AND f.dirty > \(Rows.cleanSQL) AND f.dirty <= ?1
        """)

    /// The outbox rows of a batch (``sealBatch(_:upTo:)``), a liveness row with its record's
    /// liveness dots (a row each). Columns: 0 collection, 1 id, 2 kind, 3 field, 4 element,
    /// 5 hlc, 6 replica (NULL but for a liveness dot).
    private static let sealOutboxSQL = BoundStatement.marked("""
        SELECT o.collection, o.id, o.kind, o.field, o.element, d.hlc, d.replica
            FROM concord_outbox o LEFT JOIN concord_dots d
                ON o.kind = \(Rows.slotLiveness) AND d.collection = o.collection AND d.id = o.id AND d.kind = \(Rows.slotLiveness)
            WHERE o.low <= ?1 AND o.hlc <= ?1
        """)
}

extension Columns {
    /// Whether the text in `column` is `string`, byte for byte, read in place.
    func text(_ column: Int32, equals string: String) -> Bool {
        var string = string
        return string.withUTF8 { utf8 in
            let count = Int(sqlite3_column_bytes(statement, column))
            guard count == utf8.count else { return false }
            guard count > 0 else { return true }
            guard let base = sqlite3_column_text(statement, column), let other = utf8.baseAddress else { return false }
            return memcmp(base, other, count) == 0
        }
    }

    /// Whether the text in `column` sorts after `string`, bytewise (as SQLite's BINARY
    /// collation and ``Bytewise`` order them), read in place.
    func text(_ column: Int32, greaterThan string: String) -> Bool {
        var string = string
        return string.withUTF8 { utf8 in
            let count = Int(sqlite3_column_bytes(statement, column))
            let base = sqlite3_column_text(statement, column)
            let shared = min(count, utf8.count)
            if shared > 0, let base, let other = utf8.baseAddress {
                let order = memcmp(base, other, shared)
                if order != 0 { return order > 0 }
            }
            return count > utf8.count
        }
    }
}
