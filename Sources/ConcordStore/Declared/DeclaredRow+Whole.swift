import ConcordCore
import GRDB

/// Whether a declared row holds its record whole: the `concord_whole` column
/// (``CollectionDeclaration/wholeColumn``).
///
/// A row is whole when every visible field of the record is declared and each field's
/// columns give its value back exactly as written. A query then reads the record from
/// the row's columns alone (``Store/query(_:)``); a row that is not whole (an undeclared
/// field, a value that does not fit its type or would not read back the same — an integer
/// in a `double` field, `-0.0`, NaN, a null, a date written as text) is read from the
/// merged state instead, so a query's results are always what ``Store/record(_:)`` reads.
enum WholeRow {
    /// Whether `value` of a field of `type` reads back from its column exactly as written.
    static func exact(_ value: ScalarValue, _ type: CollectionDeclaration.ScalarType) -> Bool {
        switch (type, value) {
        case (.string, .string), (.int, .int), (.bool, .bool), (.bytes, .bytes): true
        // A REAL column keeps neither NaN nor the sign of zero (an integral real may be stored
        // as an integer).
        case let (.double, .double(number)), let (.date, .double(number)): !number.isNaN && !(number == 0 && number.sign == .minus)
        default: false
        }
    }

    /// Whether the record's visible `fields` (sorted by name) are all declared and all exact,
    /// and none is read otherwise than as stored: a field stored under a renamed field's old
    /// name is not declared by that name, and a declared field with a default that the record
    /// lacks reads its default in its column, which the record does not hold.
    static func isWhole(_ fields: [(name: String, value: FieldValue)], _ declaration: CollectionDeclaration) -> Bool {
        for (name, change) in declaration.evolution.changes where change.defaultValue != nil {
            let stored = declaration.field(name).map(declaration.storedName(of:)) ?? name
            if !fields.contains(where: { Bytewise.equal($0.name, stored) }) { return false }
        }
        return fields.allSatisfy { field in
            guard let declared = declaration.field(field.name) else { return false }
            switch (declared.type, field.value) {
            case let (.scalar(type), .scalar(value)): return exact(value, type)
            case let (.file, .file(file)): return file.size <= UInt64(Int64.max)
            case let (.set(type), .set(elements)): return elements.allSatisfy { exact($0, type) }
            default: return false
            }
        }
    }
}

extension CollectionDeclaration {
    /// The column that says whether a row holds its record whole (``WholeRow``): 1 or 0.
    static let wholeColumn = "concord_whole"
}

extension Schema {
    /// Migration "v9-declared-whole-rows": every declared table made again with its
    /// `concord_whole` column (``WholeRow``) and filled from the merged state, and the
    /// triggers that note changed records made again.
    static func migrateToWholeDeclaredRows(_ db: Database) throws {
        let declarations = try DeclaredTables.all(db).values
        try DeclaredTables.remakeTriggers(db)
        for declaration in declarations {
            for sql in declaration.dropSQL { try db.execute(sql: sql) }
            for sql in declaration.createSQL { try db.execute(sql: sql) }
            try DeclaredTables.rebuild(db, declaration)
        }
    }
}

extension Schema {
    /// Migration "v11-declared-write-path": the triggers that note changed records made
    /// again with the declared collections written in them (``DeclaredTables/remakeTriggers(_:)``).
    static func migrateToDeclaredWritePath(_ db: Database) throws {
        try DeclaredTables.remakeTriggers(db)
    }
}
