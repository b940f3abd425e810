import ConcordCore
import Foundation

/// The SQLite names of a declared collection (``CollectionDeclaration``): its table, its
/// elements table and each field's columns. Collection and field names are any strings, so
/// names are mapped, never pasted into SQL:
///
/// - The table is `concord_c_<collection>` when the collection's name is 1 to 64 of
///   `a-z 0-9 _`, else `concord_x_<hex of its UTF-8 bytes>` (SQLite's names ignore case,
///   so no two collections share a table). Its elements table (one row per set element,
///   columns `id`, `field` — the set's column name — and `element`, of no affinity, so a
///   string stays a string) is the same name
///   with `concord_elements_` in front of `c_`/`x_`.
/// - A field's column is its name when that is 1 to 64 of `a-z 0-9 _`, starting with a
///   letter or `_`, not `id`, `rowid`, `oid`, `_rowid_` nor starting with `concord_`; else
///   `concord_f_<hex of its UTF-8 bytes>`. A file field's column holds the content hash;
///   `concord_size__<column>` and `concord_media_type__<column>` its size and media type,
///   `concord_local__<column>` whether the content is on this device (1 or 0).
/// - Every row also has `concord_delete_update` (1 while the record has an open
///   `deleteUpdate` conflict) and `concord_file_forks` (how many of its file fields are
///   forked), so open conflicts are columns too; and `concord_whole` (1 when the row holds
///   its record whole, ``WholeRow``).
///
/// - A collection with searchable fields also has `concord_search_<c_/x_ key>`, an FTS5
///   table of those fields' columns, each row's rowid its declared row's.
///
/// The names are what ``CollectionDeclaration/tableName`` and
/// ``CollectionDeclaration/columnName(_:)`` return; raw SQL through ``Store/reader`` quotes
/// them as identifiers.
extension CollectionDeclaration {
    /// The declared table's name.
    public var tableName: String { "concord_" + Self.key(collection) }

    /// The elements table's name: one row per element of each set field.
    public var elementsTableName: String { "concord_elements_" + Self.key(collection) }

    /// The full-text table's name, when a field is searchable: an FTS5 table with one
    /// column per searchable field (named as in the declared table), each row's rowid the
    /// declared row's.
    public var searchTableName: String? {
        fields.contains(where: \.searchable) ? "concord_search_" + Self.key(collection) : nil
    }

    /// The column of field `name`, if declared.
    public func columnName(_ name: String) -> String? {
        field(name).map { Self.column($0.name) }
    }

    /// `c_<name>` for a plain collection name, else `x_<hex>`.
    static func key(_ collection: String) -> String {
        isPlain(collection, first: false) ? "c_" + collection : "x_" + Hex.encode(Array(collection.utf8))
    }

    static func column(_ field: String) -> String {
        let reserved = ["id", "rowid", "oid", "_rowid_"]
        if isPlain(field, first: true), !reserved.contains(field), !field.hasPrefix("concord_") { return field }
        return "concord_f_" + Hex.encode(Array(field.utf8))
    }

    private static func isPlain(_ name: String, first letter: Bool) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count) else { return false }
        for (index, byte) in bytes.enumerated() {
            let lower = (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            let digit = (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
            guard lower || byte == UInt8(ascii: "_") || (digit && !(letter && index == 0)) else { return false }
        }
        return true
    }

    /// One field's columns, in table order, with their SQLite types.
    func columns(of field: Field) -> [(name: String, type: String)] {
        let column = Self.column(field.name)
        let collate = field.collation.map { " COLLATE \($0.rawValue.uppercased())" } ?? ""
        switch field.type {
        case .scalar(.string): return [(column, "TEXT" + collate)]
        case .scalar(.int), .scalar(.bool): return [(column, "INTEGER")]
        case .scalar(.double), .scalar(.date): return [(column, "REAL")]
        case .scalar(.bytes): return [(column, "BLOB")]
        case .file:
            return [(column, "BLOB"), ("concord_size__" + column, "INTEGER"), ("concord_media_type__" + column, "TEXT"), (Self.localColumn(column), "INTEGER")]
        case .set: return [(column, "INTEGER")]
        }
    }

    /// Every column after `id`, in table order.
    var allColumns: [String] {
        fields.flatMap { columns(of: $0).map(\.name) } + ["concord_delete_update", "concord_file_forks", Self.wholeColumn]
    }

    /// The statements that create the tables and indexes.
    var createSQL: [String] {
        let table = Rows.quoted(tableName)
        let body = (["id TEXT PRIMARY KEY NOT NULL"]
            + fields.flatMap { columns(of: $0).map { "\(Rows.quoted($0.name)) \($0.type)" } }
            + ["concord_delete_update INTEGER NOT NULL", "concord_file_forks INTEGER NOT NULL", "\(Self.wholeColumn) INTEGER NOT NULL"]).joined(separator: ", ")
        var statements = ["CREATE TABLE \(table) (\(body))"]
        let elements = Rows.quoted(elementsTableName)
        statements.append("CREATE TABLE \(elements) (id TEXT NOT NULL, field TEXT NOT NULL, element)")
        statements.append("CREATE INDEX \(Rows.quoted(indexName("id"))) ON \(elements) (id)")
        statements.append("CREATE INDEX \(Rows.quoted(indexName("field"))) ON \(elements) (field, element)")
        if let search = searchTableName {
            let columns = fields.filter(\.searchable).map { Rows.quoted(Self.column($0.name)) }.joined(separator: ", ")
            statements.append("CREATE VIRTUAL TABLE \(Rows.quoted(search)) USING fts5(\(columns))")
        }
        statements += fields.filter(\.indexed).map(createIndexSQL)
        return statements
    }

    /// The statement that creates a field's index.
    func createIndexSQL(_ field: Field) -> String {
        let column = Self.column(field.name)
        return "CREATE INDEX \(Rows.quoted(indexName(column))) ON \(Rows.quoted(tableName)) (\(Rows.quoted(column)))"
    }

    /// An index's name: the key's length keeps `(key, column)` pairs apart.
    func indexName(_ column: String) -> String {
        let key = Self.key(collection)
        return "concord_index_\(key.utf8.count)_\(key)_\(column)"
    }

    var dropSQL: [String] {
        ["DROP TABLE IF EXISTS \(Rows.quoted(tableName))", "DROP TABLE IF EXISTS \(Rows.quoted(elementsTableName))"]
            + (searchTableName.map { ["DROP TABLE IF EXISTS \(Rows.quoted($0))"] } ?? [])
    }
}

extension Rows {
    /// `name` as an SQL identifier.
    static func quoted(_ name: String) -> String {
        // A name without a quote (nearly every one) is not searched again by Foundation,
        // which costs more than the rest of compiling a small query.
        guard name.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + name + "\"" }
        return "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}
