import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

/// Reads a record for the pivot (``Pivot``): ``SlotIO/record(_:_:)``'s query, stepped
/// through SQLite's C API with its columns read in place. The pivot reads back every record
/// a transaction changed, and GRDB's rows and cursors cost as much as SQLite's work there.
struct PivotReader {
    private let statement: Statement

    init(_ db: Database) throws {
        statement = try db.cachedStatement(sql: BoundStatement.marked(SlotIO.recordSQL))
    }

    /// Every slot of `ref`, or nil if it has none: what ``SlotIO/record(_:_:)`` returns.
    func record(_ ref: RecordRef) throws -> ConcordCore.Record? {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)
        defer { sqlite3_reset(handle) }
        BoundStatement.Binder(handle: handle).bind(ref)
        let columns = Columns(handle)
        // Columns by position: 0 source, 1 hlc, 2 replica, 3 field, 4 kind, 5 value,
        // 6 file_size, 7 media_type, 8 element.
        var slots: [SlotKey: ConcordCore.Slot] = [:]
        try columns.forEachRow(sql: SlotIO.recordSQL) {
            let key: SlotKey
            let payload: Payload
            switch columns.int64(0) {
            case 0:
                key = columns.int64(4) == Rows.slotLiveness ? .liveness : .tombstones
                payload = .marker
            case 1:
                key = .field(columns.text(3))
                payload = try Rows.payload(columns, kind: 4)
            default:
                key = .element(columns.text(3), try SlotIO.element(columns.bytes(8) { Data($0) }))
                payload = .marker
            }
            slots[key, default: ConcordCore.Slot()].entries.append(Entry(dot: try columns.stamp(hlc: 1, replica: 2), payload: payload))
        }
        guard !slots.isEmpty else { return nil }
        for key in slots.keys where slots[key]!.entries.count > 1 { slots[key]!.entries.sort { $0.dot < $1.dot } }
        return ConcordCore.Record(slots: slots)
    }
}
