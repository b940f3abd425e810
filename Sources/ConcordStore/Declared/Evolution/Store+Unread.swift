import ConcordCore
import GRDB

extension Store {
    /// Per declared scalar field of `collection`, how many visible records hold a value its
    /// column does not: a value of another type, or one that fails its declared conversion.
    /// Each is kept as written (``record(_:)`` reads it back), is NULL in its column, and a
    /// typed load reports it (``UnreadField``). Fields with none are left out. One count per
    /// field over the declared table: memory does not grow with the collection.
    ///
    /// - Throws: `unknownField` when the collection is not declared.
    public func unreadValues(in collection: String) throws(ConcordError) -> [String: Int] {
        try read { db in
            let declaration = try declared(db, collection)
            var counts: [String: Int] = [:]
            for field in declaration.fields {
                guard case .scalar = field.type else { continue }
                let column = Rows.quoted(CollectionDeclaration.column(field.name))
                let sql = """
                    SELECT count(*) FROM \(Rows.quoted(declaration.tableName)) AS t JOIN concord_fields AS f
                    ON f.collection = ? AND f.id = t.id AND f.field = ? AND f.kind != 0
                    WHERE t.\(column) IS NULL
                    """
                let count = try Int.fetchOne(db, sql: sql, arguments: [collection, declaration.storedName(of: field)]) ?? 0
                if count > 0 { counts[field.name] = count }
            }
            return counts
        }
    }
}
