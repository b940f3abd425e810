import ConcordCore
import GRDB
import GRDBSQLite

/// Declaring again in place: a declaration that only adds fields, or adds or removes
/// indexes, alters the declared table (`ALTER TABLE … ADD COLUMN`, `CREATE INDEX`, `DROP
/// INDEX`) instead of making it anew, and pivots again only the records that hold an added
/// field, a page of ids at a time. Any other change (a field's type, search or collation
/// changed, a field removed, a searchable field added, a change of schema version or of
/// what the declaration's evolution says — a rename, a default or a conversion changes
/// what records it reads, not only the ones holding an added field) makes the table anew.
extension DeclaredTables {
    /// What `new` adds to `old`, or nil when the table must be made anew.
    static func alteration(from old: CollectionDeclaration, to new: CollectionDeclaration)
        -> (added: [CollectionDeclaration.Field], indexed: [CollectionDeclaration.Field], unindexed: [CollectionDeclaration.Field])? {
        guard Bytewise.equal(old.collection, new.collection), old.evolution == new.evolution else { return nil }
        var indexed: [CollectionDeclaration.Field] = []
        var unindexed: [CollectionDeclaration.Field] = []
        for field in old.fields {
            guard let kept = new.field(field.name), kept.type == field.type, kept.searchable == field.searchable,
                  kept.collation == field.collation else { return nil }
            if kept.indexed && !field.indexed { indexed.append(kept) }
            if !kept.indexed && field.indexed { unindexed.append(kept) }
        }
        let added = new.fields.filter { old.field($0.name) == nil }
        guard !added.contains(where: \.searchable) else { return nil }
        return (added, indexed + added.filter(\.indexed), unindexed)
    }

    /// Alters `old`'s tables into `new`'s (``alteration(from:to:)`` said how) and fills the
    /// added columns: the records holding an added field pivoted again, 512 ids at a time.
    static func alter(_ db: Database, from old: CollectionDeclaration, to new: CollectionDeclaration,
                      _ change: (added: [CollectionDeclaration.Field], indexed: [CollectionDeclaration.Field], unindexed: [CollectionDeclaration.Field])) throws {
        let table = Rows.quoted(new.tableName)
        for field in change.added {
            for column in new.columns(of: field) {
                try db.execute(sql: "ALTER TABLE \(table) ADD COLUMN \(Rows.quoted(column.name)) \(column.type)")
            }
        }
        for field in change.unindexed {
            try db.execute(sql: "DROP INDEX IF EXISTS \(Rows.quoted(new.indexName(CollectionDeclaration.column(field.name))))")
        }
        for field in change.indexed {
            try db.execute(sql: new.createIndexSQL(field))
        }
        try store(db, new)
        guard !change.added.isEmpty else { return }
        // The records that hold an added field (as a register or as a set); the others'
        // added columns are rightly NULL, and their rows stay whole or not as they were.
        let pivot = try Pivot(db, new)
        let names = (0..<change.added.count).map { "?\($0 + 3)" }.joined(separator: ", ")
        var last: String?
        while true {
            let after = last == nil ? "" : " AND id > ?2"
            let sql = """
                SELECT id FROM concord_fields WHERE collection = ?1\(after) AND field IN (\(names))
                UNION SELECT id FROM concord_elements WHERE collection = ?1\(after) AND field IN (\(names))
                ORDER BY id LIMIT 512
                """
            let handle = try db.cachedStatement(sql: BoundStatement.marked(sql)).sqliteStatement
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            let binder = BoundStatement.Binder(handle: handle)
            binder.bind(new.collection, at: 1)
            if let last { binder.bind(last, at: 2) }
            for (index, field) in change.added.enumerated() { binder.bind(field.name, at: Int32(index + 3)) }
            var ids: [String] = []
            let columns = Columns(handle)
            try columns.forEachRow(sql: sql) { ids.append(columns.text(0)) }
            sqlite3_reset(handle)
            guard let end = ids.last else { return }
            for id in ids { try pivot.run(RecordRef(collection: new.collection, id: id)) }
            last = end
        }
    }
}
