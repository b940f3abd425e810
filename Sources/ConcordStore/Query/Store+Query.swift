import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

extension Store {
    /// The records of a declared collection that `query` keeps, in its order: each one's id
    /// and visible fields, read as ``record(_:)`` reads them (a value that does not fit its
    /// declared type reads back as written), but for a renamed field, which is under its new
    /// name.
    ///
    /// ```swift
    /// let strong = try store.query(Query("games").filter(.field("level", .greater, .int(3))).order(by: "level", descending: true))
    /// ```
    ///
    /// One read transaction: the ids come from the declared table, the fields from the
    /// merged state, both of one committed state.
    ///
    /// - Throws: `unknownField` when the collection is not declared or a field is not in
    ///   its declaration; `typeMismatch` when a value or operator does not fit a field's
    ///   type; `notFound` when the cursor's record (``Query/after``) is not visible.
    public func query(_ query: Query) throws(ConcordError) -> [(id: String, fields: [(name: String, value: FieldValue)])] {
        try read { db in try records(db, query, declared(db, query.collection)) }
    }

    /// The records `query` keeps, read in `db` under `declaration`, its collection's.
    private func records(_ db: Database, _ query: Query, _ declaration: CollectionDeclaration) throws -> [(id: String, fields: [(name: String, value: FieldValue)])] {
        var floor: DeclaredValue?
        if let after = query.after {
            try Self.requireRow(db, declaration, after)
            floor = try Self.floor(db, declaration, query, after)
        }
        // A whole row's record is read from its columns; any other from the merged state.
        let columns = declarationCache.resultColumns(declaration)
        let elements = columns.hasSets ? try ResultColumns.ElementReader(db, declaration) : nil
        let compiled = try QueryCompiler.rows(query, declaration, select: columns.selectList, floor: floor)
        var results: [(id: String, fields: [(name: String, value: FieldValue)])?] = []
        var partial: [(index: Int, id: String)] = []
        try Self.eachRow(db, compiled) { row in
            if row.int64(1) == 1 {
                results.append((id: row.text(0), fields: try columns.fields(row, elements)))
            } else {
                partial.append((results.count, row.text(0)))
                results.append(nil)
            }
        }
        for (index, id) in partial {
            guard let record = try SlotIO.record(db, RecordRef(collection: query.collection, id: id)), record.isVisible else {
                throw ConcordError(.corrupt, "\"\(id)\" has a row in the declared table of \"\(query.collection)\" but is not visible")
            }
            results[index] = (id: id, fields: declaration.renamed(record.sortedFields))
        }
        return results.compactMap(\.self)
    }

    /// The records `query` keeps, as `T` (whose ``StoredRecord/collection`` the query must
    /// be of).
    ///
    /// ```swift
    /// let games = try store.query(Game.self, Query(Game.collection).order(by: "title"))
    /// ```
    public func query<T: StoredRecord>(_ type: T.Type, _ query: Query) throws(ConcordError) -> [T] {
        guard Bytewise.equal(query.collection, T.collection) else {
            throw ConcordError(.typeMismatch, "\(T.self) is stored in \"\(T.collection)\", not in \"\(query.collection)\"")
        }
        // The declaration read with the records, in one read.
        let read: (declaration: CollectionDeclaration, records: [(id: String, fields: [(name: String, value: FieldValue)])]) = try read { db in
            let declaration = try declared(db, query.collection)
            return (declaration, try records(db, query, declaration))
        }
        let declaration = read.declaration
        return try read.records.map { (record) throws(ConcordError) -> T in
            try TypedEvolution.decode(T.self, id: record.id, stored: record.fields, declaration: declaration).loaded.value
        }
    }

    /// How many records `query` keeps, its limit, offset and cursor aside.
    public func count(_ query: Query) throws(ConcordError) -> Int {
        try read { db in
            var count = 0
            try Self.eachRow(db, QueryCompiler.count(query, try declared(db, query.collection))) { count = Int($0.int64(0)) }
            return count
        }
    }

    /// A cursor's record must have a row: `notFound` otherwise.
    static func requireRow(_ db: Database, _ declaration: CollectionDeclaration, _ id: String) throws {
        var found = false
        try eachRow(db, CompiledQuery(sql: "SELECT count(*) FROM \(Rows.quoted(declaration.tableName)) WHERE id = ?", arguments: [.text(id)])) {
            found = $0.int64(0) > 0
        }
        if !found {
            throw ConcordError(.notFound, "the cursor's record \"\(id)\" is not in \"\(declaration.collection)\" (deleted since the page was read?)")
        }
    }

    /// The cursor's row's value of the query's first order key, when that key is ascending
    /// and the value not NULL (``QueryCompiler/rows(_:_:select:floor:)``).
    static func floor(_ db: Database, _ declaration: CollectionDeclaration, _ query: Query, _ id: String) throws -> DeclaredValue? {
        guard let first = query.orders.first, !first.descending, let field = declaration.field(first.field),
              case let .scalar(type) = field.type else { return nil }
        let column = Rows.quoted(CollectionDeclaration.column(field.name))
        var floor: DeclaredValue?
        try eachRow(db, CompiledQuery(sql: "SELECT \(column) FROM \(Rows.quoted(declaration.tableName)) WHERE id = ?", arguments: [.text(id)])) { row in
            guard !row.isNull(0) else { return }
            switch type {
            case .string: floor = .text(row.text(0))
            case .int, .bool: floor = .int(row.int64(0))
            case .double, .date: floor = .double(row.double(0))
            case .bytes: floor = .blob(row.blob(0) ?? [])
            }
        }
        return floor
    }

    func declared(_ db: Database, _ collection: String) throws -> CollectionDeclaration {
        guard let declaration = try declarationCache.declaration(db, collection) else {
            throw ConcordError(.unknownField, "collection \"\(collection)\" is not declared: declare it to query it")
        }
        return declaration
    }

    /// Runs `compiled`, its arguments bound through SQLite's C API (so a string holding NUL
    /// is bound whole), and hands `row` each row's columns.
    static func eachRow(_ db: Database, _ compiled: CompiledQuery, _ row: (Columns) throws -> Void) throws {
        // From the connection's cache: a query of one shape has one text, whatever its values.
        let statement = try db.cachedStatement(sql: BoundStatement.marked(compiled.sql))
        let binder = BoundStatement.Binder(handle: statement.sqliteStatement)
        for (index, value) in compiled.arguments.enumerated() { binder.bind(value, at: Int32(index + 1)) }
        defer { sqlite3_reset(statement.sqliteStatement) }
        let columns = Columns(statement.sqliteStatement)
        try searching(compiled) { try columns.forEachRow(sql: compiled.sql) { try row(columns) } }
    }

    /// Runs `body`; an error of a full-text search SQLite could not read is `invalidQuery`.
    static func searching(_ compiled: CompiledQuery, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as DatabaseError {
            guard compiled.sql.contains(" MATCH ") else { throw error }
            throw ConcordError(.invalidQuery, "a search is not a full-text query SQLite reads (\(error.message ?? "\(error.resultCode)")): see FTS5's query syntax", cause: error)
        }
    }
}
