import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

/// A query's results read from its declared rows (``WholeRow``): the columns a query
/// selects after `id` and `concord_whole`, and each whole row's fields read back from them.
struct ResultColumns: Sendable {
    let declaration: CollectionDeclaration
    /// Each field with the index of its first selected column.
    private let layout: [(field: CollectionDeclaration.Field, column: Int32)]
    /// The SQL list of the selected columns, of table alias `t`.
    let selectList: String
    /// Whether a field is a set: its elements are then read from the elements table.
    let hasSets: Bool

    init(_ declaration: CollectionDeclaration) {
        self.declaration = declaration
        var layout: [(field: CollectionDeclaration.Field, column: Int32)] = []
        var names = ["id", CollectionDeclaration.wholeColumn]
        for field in declaration.fields {
            layout.append((field, Int32(names.count)))
            names += declaration.columns(of: field).map(\.name)
        }
        self.layout = layout
        selectList = names.map { "t." + Rows.quoted($0) }.joined(separator: ", ")
        hasSets = declaration.fields.contains { if case .set = $0.type { true } else { false } }
    }

    /// The record's fields from the current row of a whole row (sorted by name, as the
    /// declaration's fields are); `elements` reads a record's set elements.
    func fields(_ columns: Columns, _ elements: ElementReader?) throws -> [(name: String, value: FieldValue)] {
        var fields: [(name: String, value: FieldValue)] = []
        fields.reserveCapacity(layout.count)
        var sets: [String: [ScalarValue]] = [:]
        if hasSets, let elements { sets = try elements.read(columns.text(0), declaration) }
        for (field, index) in layout where !columns.isNull(index) {
            switch field.type {
            case let .scalar(type):
                fields.append((field.name, .scalar(Self.scalar(columns, index, type))))
            case .file:
                guard let hash = ContentHash(bytes: columns.blob(index) ?? []) else {
                    throw ConcordError(.corrupt, "a file column of \"\(declaration.collection)\" holds no content hash")
                }
                let type = columns.isNull(index + 2) ? nil : columns.text(index + 2)
                fields.append((field.name, .file(FileRef(hash: hash, size: UInt64(clamping: columns.int64(index + 1)), mediaType: type))))
            case .set:
                fields.append((field.name, .set((sets[CollectionDeclaration.column(field.name)] ?? []).sorted(by: ScalarValue.canonicalOrder))))
            }
        }
        return fields
    }

    /// A column's value as a field of `type` wrote it (``WholeRow/exact(_:_:)``).
    static func scalar(_ columns: Columns, _ index: Int32, _ type: CollectionDeclaration.ScalarType) -> ScalarValue {
        switch type {
        case .string: .string(columns.text(index))
        case .int: .int(columns.int64(index))
        case .bool: .bool(columns.int64(index) != 0)
        case .double, .date: .double(columns.double(index))
        case .bytes: .bytes(columns.blob(index) ?? [])
        }
    }

    /// Reads a record's set elements from the elements table, one prepared statement.
    struct ElementReader {
        let statement: Statement
        let sql: String

        init(_ db: Database, _ declaration: CollectionDeclaration) throws {
            sql = "SELECT field, element FROM \(Rows.quoted(declaration.elementsTableName)) WHERE id = ?1"
            statement = try db.cachedStatement(sql: BoundStatement.marked(sql))
        }

        /// The elements of record `id`, by the set's column name.
        func read(_ id: String, _ declaration: CollectionDeclaration) throws -> [String: [ScalarValue]] {
            let handle = statement.sqliteStatement
            sqlite3_reset(handle)
            defer { sqlite3_reset(handle) }
            BoundStatement.Binder(handle: handle).bind(id, at: 1)
            let columns = Columns(handle)
            var types: [String: CollectionDeclaration.ScalarType] = [:]
            for field in declaration.fields { if case let .set(type) = field.type { types[CollectionDeclaration.column(field.name)] = type } }
            var sets: [String: [ScalarValue]] = [:]
            try columns.forEachRow(sql: sql) {
                let column = columns.text(0)
                guard let type = types[column] else { return }
                sets[column, default: []].append(ResultColumns.scalar(columns, 1, type))
            }
            return sets
        }
    }
}
