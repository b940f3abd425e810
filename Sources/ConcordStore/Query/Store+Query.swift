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
        try read { db in
            let declaration = try Self.declared(db, query.collection)
            if let after = query.after { try Self.requireRow(db, declaration, after) }
            let compiled = try QueryCompiler.ids(query, declaration)
            return try Self.ids(db, compiled).compactMap { id in
                guard let record = try SlotIO.record(db, RecordRef(collection: query.collection, id: id)), record.isVisible else { return nil }
                return (id: id, fields: declaration.renamed(record.sortedFields))
            }
        }
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
        let declaration = try declaration(of: T.collection)
        return try self.query(query).map { (record) throws(ConcordError) -> T in
            try TypedEvolution.decode(T.self, id: record.id, stored: record.fields, declaration: declaration).loaded.value
        }
    }

    /// How many records `query` keeps, its limit, offset and cursor aside.
    public func count(_ query: Query) throws(ConcordError) -> Int {
        try read { db in
            var count = 0
            try Self.eachRow(db, QueryCompiler.count(query, try Self.declared(db, query.collection))) { count = Int($0.int64(0)) }
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

    static func declared(_ db: Database, _ collection: String) throws -> CollectionDeclaration {
        guard let declaration = try DeclaredTables.declaration(db, collection) else {
            throw ConcordError(.unknownField, "collection \"\(collection)\" is not declared: declare it to query it")
        }
        return declaration
    }

    /// Runs `compiled`, its arguments bound through SQLite's C API (so a string holding NUL
    /// is bound whole), and hands `row` each row's columns.
    static func eachRow(_ db: Database, _ compiled: CompiledQuery, _ row: (Columns) throws -> Void) throws {
        let statement = try db.makeStatement(sql: compiled.sql)
        let binder = BoundStatement.Binder(handle: statement.sqliteStatement)
        for (index, value) in compiled.arguments.enumerated() { binder.bind(value, at: Int32(index + 1)) }
        defer { sqlite3_reset(statement.sqliteStatement) }
        let columns = Columns(statement.sqliteStatement)
        try searching(compiled) { try columns.forEachRow(sql: compiled.sql) { try row(columns) } }
    }

    static func ids(_ db: Database, _ compiled: CompiledQuery) throws -> [String] {
        var ids: [String] = []
        try eachRow(db, compiled) { ids.append($0.text(0)) }
        return ids
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
