import ConcordCore
import Foundation

/// A query made SQL over its collection's declared table, every value a bound parameter.
struct CompiledQuery {
    var sql: String
    var arguments: [DeclaredValue]
}

/// Compiles a ``Query`` against its collection's declaration, checking every field and value.
struct QueryCompiler {
    let declaration: CollectionDeclaration
    private var arguments: [DeclaredValue] = []
    private let table: String

    init(_ declaration: CollectionDeclaration) {
        self.declaration = declaration
        table = Rows.quoted(declaration.tableName)
    }

    /// The rows of the records `query` keeps, in its order and window: `select`, a list of
    /// columns of table alias `t` (default: the id alone).
    ///
    /// `floor`, with a cursor whose order starts ascending, is the cursor's row's value of
    /// that first key when not NULL: every row past the cursor then has at least that value,
    /// a bound an index on the key can start its scan at (the alternatives below cannot).
    static func rows(_ query: Query, _ declaration: CollectionDeclaration, select: String = "t.id", floor: DeclaredValue? = nil) throws(ConcordError) -> CompiledQuery {
        var compiler = QueryCompiler(declaration)
        // The cursor's parameter comes first in the SQL (in FROM), so it is bound first.
        let cursor = query.after.map { compiler.parameter(.text($0)) }
        let filter = try query.filter.map { (filter) throws(ConcordError) in try compiler.compile(filter) } ?? "1"
        var order: [String] = []
        var keys: [(column: String, descending: Bool)] = []
        for key in query.orders {
            let field = try compiler.field(key.field)
            switch field.type {
            case .scalar: break
            case .file, .set:
                throw ConcordError(.typeMismatch, "field \"\(key.field)\" of \"\(declaration.collection)\" is \(field.type): only scalar fields order a query")
            }
            order.append(compiler.column(field) + (key.descending ? " DESC" : " ASC"))
            keys.append((Rows.quoted(CollectionDeclaration.column(field.name)), key.descending))
        }
        order.append("t.id ASC")
        var from = "\(compiler.table) AS t"
        var condition = filter
        if let cursor {
            // The rows past the cursor's row in the order: equal on the first keys, then past
            // it on the next one (NULLs first ascending, last descending), the id last.
            from += ", (SELECT * FROM \(compiler.table) WHERE id = \(cursor)) AS c"
            var alternatives: [String] = []
            for index in 0...keys.count {
                var parts = keys[..<index].map { "t.\($0.column) IS c.\($0.column)" }
                if index == keys.count {
                    parts.append("t.id > c.id")
                } else {
                    let (column, descending) = keys[index]
                    parts.append(descending
                        ? "(t.\(column) < c.\(column) OR (t.\(column) IS NULL AND c.\(column) IS NOT NULL))"
                        : "(t.\(column) > c.\(column) OR (c.\(column) IS NULL AND t.\(column) IS NOT NULL))")
                }
                alternatives.append("(" + parts.joined(separator: " AND ") + ")")
            }
            condition = "(\(filter)) AND (\(alternatives.joined(separator: " OR ")))"
            if let floor, let first = keys.first, !first.descending {
                condition += " AND t.\(first.column) >= \(compiler.parameter(floor))"
            }
        }
        var sql = "SELECT \(select) FROM \(from) WHERE \(condition) ORDER BY \(order.joined(separator: ", "))"
        if query.limit != nil || query.offset != nil {
            guard (query.limit ?? 0) >= 0, (query.offset ?? 0) >= 0 else {
                throw ConcordError(.typeMismatch, "a query's limit and offset are not negative")
            }
            sql += " LIMIT ? OFFSET ?"
            compiler.arguments += [.int(Int64(query.limit ?? -1)), .int(Int64(query.offset ?? 0))]
        }
        return CompiledQuery(sql: sql, arguments: compiler.arguments)
    }

    /// The number of records `query` keeps, its limit and offset aside.
    static func count(_ query: Query, _ declaration: CollectionDeclaration) throws(ConcordError) -> CompiledQuery {
        var compiler = QueryCompiler(declaration)
        let filter = try query.filter.map { (filter) throws(ConcordError) in try compiler.compile(filter) } ?? "1"
        return CompiledQuery(sql: "SELECT count(*) FROM \(compiler.table) AS t WHERE \(filter)", arguments: compiler.arguments)
    }

    private func field(_ name: String) throws(ConcordError) -> CollectionDeclaration.Field {
        guard let field = declaration.field(name) else {
            throw ConcordError(.unknownField, "collection \"\(declaration.collection)\" declares no field \"\(name)\"")
        }
        return field
    }

    private func column(_ field: CollectionDeclaration.Field) -> String {
        "t." + Rows.quoted(CollectionDeclaration.column(field.name))
    }

    private mutating func parameter(_ value: DeclaredValue) -> String {
        arguments.append(value)
        return "?"
    }

    /// `value` as `type` holds it, or a typed error naming the field.
    private func value(_ value: ScalarValue, _ type: CollectionDeclaration.ScalarType, _ field: String) throws(ConcordError) -> DeclaredValue {
        let converted = DeclaredValue.of(value, as: type)
        if converted == .null {
            let why = value == .null ? ": to match a missing field, filter with isNull" : ""
            throw ConcordError(.typeMismatch, "field \"\(field)\" of \"\(declaration.collection)\" is \(type.rawValue), not compared with \(value)\(why)")
        }
        return converted
    }

    private func scalarType(_ field: CollectionDeclaration.Field, for operation: String) throws(ConcordError) -> CollectionDeclaration.ScalarType {
        guard case let .scalar(type) = field.type else {
            throw ConcordError(.typeMismatch, "field \"\(field.name)\" of \"\(declaration.collection)\" is \(field.type): \(operation) compares scalar fields only")
        }
        return type
    }

    mutating func compile(_ filter: Query.Filter) throws(ConcordError) -> String {
        switch filter {
        case let .field(name, comparison, value):
            let field = try field(name)
            let type = try scalarType(field, for: comparison.rawValue)
            return "\(column(field)) \(comparison.rawValue) \(parameter(try self.value(value, type, name)))"
        case let .isIn(name, values):
            let field = try field(name)
            let type = try scalarType(field, for: "in")
            guard !values.isEmpty else { return "0" }
            var list: [String] = []
            for value in values { list.append(parameter(try self.value(value, type, name))) }
            return "\(column(field)) IN (\(list.joined(separator: ", ")))"
        case let .prefix(name, prefix):
            let field = try field(name)
            guard field.type == .string else {
                throw ConcordError(.typeMismatch, "field \"\(name)\" of \"\(declaration.collection)\" is \(field.type): prefix matches string fields only")
            }
            // Bytes, so that a prefix holding NUL or any collation compares as written; the
            // range first lets an index narrow the scan.
            let column = column(field)
            // SQLite's substr of an empty blob is NULL, not empty: every string starts with "".
            if prefix.utf8.isEmpty { return "\(column) IS NOT NULL" }
            return "(\(column) >= \(parameter(.text(prefix))) AND substr(CAST(\(column) AS BLOB), 1, \(parameter(.int(Int64(prefix.utf8.count))))) = \(parameter(.blob(Array(prefix.utf8)))))"
        case let .contains(name, element):
            let field = try field(name)
            guard case let .set(type) = field.type else {
                throw ConcordError(.typeMismatch, "field \"\(name)\" of \"\(declaration.collection)\" is \(field.type): contains matches set fields only")
            }
            let collate = field.collation.map { " COLLATE \($0.rawValue.uppercased())" } ?? ""
            let elements = Rows.quoted(declaration.elementsTableName)
            let columnName = parameter(.text(CollectionDeclaration.column(name)))
            return "EXISTS (SELECT 1 FROM \(elements) AS e WHERE e.id = t.id AND e.field = \(columnName) AND e.element = \(parameter(try value(element, type, name)))\(collate))"
        case let .isNull(name):
            return "\(column(try field(name))) IS NULL"
        case let .matches(name, words):
            let field = try field(name)
            guard field.searchable, let search = declaration.searchTableName else {
                throw ConcordError(.typeMismatch, "field \"\(field.name)\" of \"\(declaration.collection)\" is not searchable: declare it with search")
            }
            let column = Rows.quoted(CollectionDeclaration.column(field.name))
            return "t.rowid IN (SELECT rowid FROM \(Rows.quoted(search)) WHERE \(column) MATCH \(parameter(.text(words))))"
        case let .conflict(kind):
            switch kind {
            case nil: return "(t.concord_delete_update = 1 OR t.concord_file_forks > 0)"
            case .deleteUpdate?: return "t.concord_delete_update = 1"
            case .fileFork?: return "t.concord_file_forks > 0"
            case let kind?:
                throw ConcordError(.invalidQuery, "no conflict of kind \"\(kind)\" is queried: deleteUpdate and fileFork are")
            }
        case let .and(filters):
            guard !filters.isEmpty else { return "1" }
            var parts: [String] = []
            for filter in filters { parts.append("(" + (try compile(filter)) + ")") }
            return parts.joined(separator: " AND ")
        case let .or(filters):
            guard !filters.isEmpty else { return "0" }
            var parts: [String] = []
            for filter in filters { parts.append("(" + (try compile(filter)) + ")") }
            return parts.joined(separator: " OR ")
        case let .not(filter):
            // Two-valued: a comparison with a null column is false, and its negation true.
            return "NOT coalesce((\(try compile(filter))), 0)"
        }
    }
}
