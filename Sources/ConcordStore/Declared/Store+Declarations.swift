import ConcordCore
import Foundation
import GRDB

extension Store {
    /// Declares a collection (or declares it again, changed): the store gives it a table of
    /// typed columns, ``CollectionDeclaration/tableName``, and keeps it equal to the merged
    /// state in the same transaction as every later change — local writes, remote applies,
    /// snapshot joins, purges, identity changes.
    ///
    /// ```swift
    /// try store.declare(CollectionDeclaration("games", fields: [
    ///     .init("title", .string, indexed: true), .init("level", .int, indexed: true),
    /// ]))
    /// let rows = try store.reader.read { db in
    ///     try Row.fetchAll(db, sql: "SELECT id, title FROM concord_c_games WHERE level > 3 ORDER BY title")
    /// }
    /// ```
    ///
    /// The table is made anew and filled from the records the collection holds, a page at a
    /// time, in one transaction. A declaration is this replica's own: it changes how this
    /// replica reads and indexes the records, never what it syncs.
    public func declare(_ declaration: CollectionDeclaration) throws(ConcordError) {
        defer { declarationCache.forget() }
        try writeDatabase { db in try DeclaredTables.declare(db, declaration) }
        declaredChanges.committed([declaration.collection])
    }

    /// Drops `collection`'s declaration and its tables; its records stay as they are.
    /// Returns whether it was declared.
    @discardableResult
    public func dropDeclaration(_ collection: String) throws(ConcordError) -> Bool {
        defer { declarationCache.forget() }
        let dropped = try writeDatabase { db in try DeclaredTables.drop(db, collection) }
        declaredChanges.committed([collection])
        return dropped
    }

    /// Every declared collection, sorted by name (its UTF-8 bytes).
    public func declarations() throws(ConcordError) -> [CollectionDeclaration] {
        try read { db in try declarationCache.all(db).values.sorted { Bytewise.less($0.collection, $1.collection) } }
    }

    /// The declaration of `collection`, if it is declared.
    public func declaration(of collection: String) throws(ConcordError) -> CollectionDeclaration? {
        // Kept from an earlier read: one statement (the schema's version), no transaction —
        // what a typed load pays before its point read.
        if let kept = try readStatement({ db in try declarationCache.current(db) }) { return kept[Array(collection.utf8)] }
        return try read { db in try declarationCache.declaration(db, collection) }
    }
}

extension Schema {
    /// Migration "v7": the declared collections (``Store/declare(_:)``) and the records whose
    /// declared rows wait to be pivoted before their transaction commits (always empty
    /// between transactions). The tables and triggers of a declaration come with it.
    static func migrateToDeclaredCollections(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE concord_declarations (collection TEXT PRIMARY KEY NOT NULL, declaration TEXT NOT NULL) STRICT;
            CREATE TABLE concord_declared_pending (collection TEXT NOT NULL, id TEXT NOT NULL, PRIMARY KEY (collection, id)) STRICT, WITHOUT ROWID;
            """)
    }
}
