import ConcordCore
import GRDB

/// Reads a record for the pivot (``Pivot``): ``SlotIO/record(_:_:)``'s walk on a statement
/// taken once for the pivot, stepped through SQLite's C API with its columns read in place.
/// The pivot reads back every record a transaction changed, and GRDB's rows and cursors
/// cost as much as SQLite's work there.
struct PivotReader {
    private let statement: Statement

    init(_ db: Database) throws {
        statement = try db.cachedStatement(sql: BoundStatement.marked(SlotIO.recordSQL))
    }

    /// Every slot of `ref`, or nil if it has none: what ``SlotIO/record(_:_:)`` returns.
    func record(_ ref: RecordRef) throws -> ConcordCore.Record? {
        try SlotIO.record(statement, ref)
    }
}
