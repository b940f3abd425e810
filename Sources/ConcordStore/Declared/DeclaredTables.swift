import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

/// How declared tables stay equal to the merged state (docs/ARCHITECTURE.md §3, declared
/// collections).
///
/// While any collection is declared, triggers on the tables that hold the merged state
/// (`concord_fields`, `concord_field_versions`, `concord_elements`, `concord_dots`) note
/// every record of a declared collection whose rows change in `concord_declared_pending`.
/// Before each write transaction commits (``Store/writeDatabase(_:)``: local writes, remote
/// applies, snapshot joins, purges, identity changes alike), each noted record is pivoted
/// again from the merged state into its declared table — its row deleted when it is not
/// visible — and its note removed. So a declared table is never a second copy that can
/// drift: it changes in the transaction that changed the record, whichever path changed it,
/// and a path added later is covered without being told.
enum DeclaredTables {
    /// The tables whose rows hold the merged state, with the updates that can change a
    /// record's pivot (a `concord_fields` row's `dirty` mark changes at every seal and
    /// changes nothing visible).
    private static let watched: [(table: String, update: String)] = [
        ("concord_fields", "UPDATE OF kind, value, file_size, media_type, versions"),
        ("concord_field_versions", "UPDATE"),
        ("concord_elements", "UPDATE"),
        ("concord_dots", "UPDATE"),
    ]

    /// The triggers that note changed records of `collections`, the declared ones. A note
    /// already there is looked for rather than ignored on conflict: a trigger's statement
    /// takes the conflict policy of the statement that fired it (an upsert's, a `REPLACE`'s).
    /// The collections are written in the triggers (``remakeTriggers(_:)`` makes them again
    /// whenever one is declared or dropped), so a row written is checked by comparing its
    /// collection with them, where looking the declaration up in `concord_declarations`
    /// opened and sought an index at every row written.
    static func createTriggersSQL(_ collections: [String]) -> String {
        watched.flatMap { table, update in
            [("insert", "INSERT", "NEW"), ("update", update, "NEW"), ("delete", "DELETE", "OLD")].map { name, event, row in
                let declared = collections.map { "\(row).collection = \(literal($0))" }.joined(separator: " OR ")
                return """
                CREATE TRIGGER IF NOT EXISTS \(table)_declared_\(name) AFTER \(event) ON \(table)
                WHEN (\(declared))
                    AND NOT EXISTS (SELECT 1 FROM concord_declared_pending WHERE collection = \(row).collection AND id = \(row).id)
                BEGIN INSERT INTO concord_declared_pending (collection, id) VALUES (\(row).collection, \(row).id); END;
                """
            }
        }.joined(separator: "\n")
    }

    /// `text` as an SQL string literal (a collection name holds no NUL).
    private static func literal(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "''") + "'"
    }

    /// Makes the triggers again for the collections declared now; none without a declaration.
    static func remakeTriggers(_ db: Database) throws {
        try db.execute(sql: dropTriggersSQL)
        let collections = try String.fetchAll(db, sql: "SELECT collection FROM concord_declarations ORDER BY collection")
        if !collections.isEmpty { try db.execute(sql: createTriggersSQL(collections)) }
    }

    static var dropTriggersSQL: String {
        watched.flatMap { table, _ in ["insert", "update", "delete"].map { "DROP TRIGGER IF EXISTS \(table)_declared_\($0);" } }
            .joined(separator: "\n")
    }

    // MARK: Declarations kept

    /// Every declaration, by its collection's UTF-8 bytes.
    static func all(_ db: Database) throws -> [[UInt8]: CollectionDeclaration] {
        let statement = try db.cachedStatement(sql: "SELECT collection, declaration FROM concord_declarations")
        sqlite3_reset(statement.sqliteStatement)
        defer { sqlite3_reset(statement.sqliteStatement) }
        let columns = Columns(statement.sqliteStatement)
        var result: [[UInt8]: CollectionDeclaration] = [:]
        try columns.forEachRow(sql: statement.sql) {
            let collection = columns.text(0)
            result[Array(collection.utf8)] = try stored(collection, columns.text(1))
        }
        return result
    }

    static func stored(_ collection: String, _ json: String) throws -> CollectionDeclaration {
        guard let object = try? JSONSerialization.jsonObject(with: Data(json.utf8)) else {
            throw ConcordError(.corrupt, "the declaration of \"\(collection)\" is not readable")
        }
        return try CollectionDeclaration.declaration(collection, object)
    }

    static func declaration(_ db: Database, _ collection: String) throws -> CollectionDeclaration? {
        try all(db)[Array(collection.utf8)]
    }

    // MARK: Declaring

    /// Declares (or declares again) a collection: its tables made anew and filled from the
    /// merged state a page of records at a time, or altered in place when the declaration
    /// only adds fields or changes indexes (`DeclaredTables+Alter.swift`).
    static func declare(_ db: Database, _ declaration: CollectionDeclaration) throws {
        let old = try self.declaration(db, declaration.collection)
        if old == declaration { return }
        if let old { try declaration.checkCompatible(replacing: old) }
        if let old, let change = alteration(from: old, to: declaration) {
            return try alter(db, from: old, to: declaration, change)
        }
        for sql in (old ?? declaration).dropSQL { try db.execute(sql: sql) }
        for sql in declaration.createSQL { try db.execute(sql: sql) }
        try store(db, declaration)
        if old == nil { try remakeTriggers(db) }
        try rebuild(db, declaration)
    }

    /// Keeps `declaration` as its collection's.
    static func store(_ db: Database, _ declaration: CollectionDeclaration) throws {
        try BoundStatement.cached(db, sql: """
            INSERT INTO concord_declarations (collection, declaration) VALUES (?1, ?2)
            ON CONFLICT (collection) DO UPDATE SET declaration = excluded.declaration
            """).execute { binder in
            binder.bind(declaration.collection, at: 1)
            binder.bind(declaration.storedJSON, at: 2)
        }
    }

    /// Drops a declaration and its tables; the records stay as they are.
    static func drop(_ db: Database, _ collection: String) throws -> Bool {
        guard let old = try declaration(db, collection) else { return false }
        for sql in old.dropSQL { try db.execute(sql: sql) }
        try BoundStatement.cached(db, sql: "DELETE FROM concord_declarations WHERE collection = ?1").execute { $0.bind(collection, at: 1) }
        try BoundStatement.cached(db, sql: "DELETE FROM concord_declared_pending WHERE collection = ?1").execute { $0.bind(collection, at: 1) }
        try remakeTriggers(db)
        return true
    }

    /// Fills a declared table from the merged state: the collection's visible records, a
    /// page of ids at a time (bounded memory whatever the collection's size).
    static func rebuild(_ db: Database, _ declaration: CollectionDeclaration) throws {
        let pivot = try Pivot(db, declaration)
        var last: String?
        while true {
            let sql = """
                SELECT DISTINCT id FROM concord_dots WHERE collection = ?1 AND kind = \(Rows.slotLiveness)\(last == nil ? "" : " AND id > ?2")
                ORDER BY id LIMIT 512
                """
            let statement = try db.cachedStatement(sql: BoundStatement.marked(sql))
            let handle = statement.sqliteStatement
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            let binder = BoundStatement.Binder(handle: handle)
            binder.bind(declaration.collection, at: 1)
            if let last { binder.bind(last, at: 2) }
            var ids: [String] = []
            let columns = Columns(handle)
            try columns.forEachRow(sql: sql) { ids.append(columns.text(0)) }
            sqlite3_reset(handle)
            guard let end = ids.last else { return }
            for id in ids { try pivot.run(RecordRef(collection: declaration.collection, id: id)) }
            last = end
        }
    }

    // MARK: Maintenance

    /// Pivots every record noted since the last call into its declared table, and clears
    /// the notes: run before every write transaction commits. Returns the collections whose
    /// tables it changed.
    ///
    /// A record in `written` (created by this transaction, scalar values alone) has its row
    /// made from the values written, not read back from the merged state.
    static func maintain(_ db: Database, _ cache: DeclarationCache, _ written: WrittenRecords) throws -> Set<String> {
        let probe = try db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM concord_declared_pending)")
        guard try Bool.fetchOne(probe) == true else { return [] }
        let declarations = try cache.all(db)
        var pivots: [[UInt8]: Pivot] = [:]
        var changed: Set<String> = []
        // One pass over the notes (as many as the records this transaction changed), then
        // one statement clears them: the pivot writes only declared tables, which no
        // trigger watches, so no note is added while they are read.
        let sql = "SELECT collection, id FROM concord_declared_pending"
        let notes = try db.cachedStatement(sql: BoundStatement.marked(sql))
        let columns = Columns(notes.sqliteStatement)
        sqlite3_reset(notes.sqliteStatement)
        defer { sqlite3_reset(notes.sqliteStatement) }
        try columns.forEachRow(sql: sql) {
            let ref = RecordRef(collection: columns.text(0), id: columns.text(1))
            let key = Array(ref.collection.utf8)
            guard let declaration = declarations[key] else { return }
            if pivots[key] == nil { pivots[key] = try Pivot(db, declaration) }
            if let values = written[ref] {
                try pivots[key]!.run(ref, written: values)
            } else {
                try pivots[key]!.run(ref)
            }
            changed.insert(ref.collection)
        }
        sqlite3_reset(notes.sqliteStatement)
        try BoundStatement.cached(db, sql: "DELETE FROM concord_declared_pending").execute { _ in }
        return changed
    }
}

/// One declared collection's pivot: a record's merged state made its declared row, with
/// statements prepared once per transaction.
struct Pivot {
    let db: Database
    let declaration: CollectionDeclaration
    private let upsert: BoundStatement
    private let removal: BoundStatement
    private let elementsRemoval: BoundStatement
    private let elementInsert: BoundStatement
    /// The full-text row's removal and insertion (copied from the declared row), when a
    /// field is searchable.
    private let search: (removal: BoundStatement, insert: BoundStatement)?
    /// Whether a field is a set (else the elements table stays empty).
    private let hasSets: Bool
    private let reader: PivotReader

    init(_ db: Database, _ declaration: CollectionDeclaration) throws {
        self.db = db
        self.declaration = declaration
        hasSets = declaration.fields.contains { if case .set = $0.type { true } else { false } }
        reader = try PivotReader(db)
        let table = Rows.quoted(declaration.tableName)
        let elements = Rows.quoted(declaration.elementsTableName)
        let columns = declaration.allColumns
        let names = (["id"] + columns).map(Rows.quoted).joined(separator: ", ")
        let parameters = (1...(columns.count + 1)).map { "?\($0)" }.joined(separator: ", ")
        let updates = columns.map { "\(Rows.quoted($0)) = excluded.\(Rows.quoted($0))" }.joined(separator: ", ")
        upsert = try BoundStatement.cached(db, sql: "INSERT INTO \(table) (\(names)) VALUES (\(parameters)) ON CONFLICT (id) DO UPDATE SET \(updates)")
        removal = try BoundStatement.cached(db, sql: "DELETE FROM \(table) WHERE id = ?1")
        elementsRemoval = try BoundStatement.cached(db, sql: "DELETE FROM \(elements) WHERE id = ?1")
        elementInsert = try BoundStatement.cached(db, sql: "INSERT INTO \(elements) (id, field, element) VALUES (?1, ?2, ?3)")
        if let name = declaration.searchTableName {
            let columns = declaration.fields.filter(\.searchable).map { Rows.quoted(CollectionDeclaration.column($0.name)) }.joined(separator: ", ")
            search = (
                try BoundStatement.cached(db, sql: "DELETE FROM \(Rows.quoted(name)) WHERE rowid IN (SELECT rowid FROM \(table) WHERE id = ?1)"),
                try BoundStatement.cached(db, sql: "INSERT INTO \(Rows.quoted(name)) (rowid, \(columns)) SELECT rowid, \(columns) FROM \(table) WHERE id = ?1"))
        } else {
            search = nil
        }
    }

    /// Makes `ref`'s row what its merged state says: deleted unless the record is visible.
    func run(_ ref: RecordRef) throws {
        try removeDependents(ref)
        guard let record = try reader.record(ref), record.isVisible else {
            try removal.execute { $0.bind(ref.id, at: 1) }
            return
        }
        // An open conflict needs a tombstone (deleteUpdate) or a field of several entries
        // (a file fork): most records have neither, and their conflicts are not sought.
        let conflicts = record.slots.contains { $0.key == .tombstones || $0.value.entries.count > 1 } ? record.conflicts(ref: ref) : []
        try write(ref, record.sortedFields,
                  deleteUpdate: conflicts.contains { $0.kind == .deleteUpdate },
                  fileForks: conflicts.filter { $0.kind == .fileFork }.count)
    }

    /// Makes the row of `ref`, a record this transaction created and wrote only `values`
    /// to (``WrittenRecords``): visible, those fields, no conflict.
    func run(_ ref: RecordRef, written values: [(name: String, value: ScalarValue)]) throws {
        try removeDependents(ref)
        let fields = values.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }.map { (name: $0.name, value: FieldValue.scalar($0.value)) }
        try write(ref, fields, deleteUpdate: false, fileForks: 0)
    }

    /// Removes the row's set elements and full-text row, made again after it.
    private func removeDependents(_ ref: RecordRef) throws {
        if hasSets { try elementsRemoval.execute { $0.bind(ref.id, at: 1) } }
        try search?.removal.execute { $0.bind(ref.id, at: 1) }
    }

    /// Upserts the row of a visible record of `fields` (its visible fields sorted by name)
    /// with its conflicts, and its set elements and full-text row.
    private func write(_ ref: RecordRef, _ fields: [(name: String, value: FieldValue)], deleteUpdate: Bool, fileForks: Int) throws {
        var values: [DeclaredValue] = []
        values.reserveCapacity(declaration.fields.count * 3 + 3)
        var elements: [(column: String, value: DeclaredValue)] = []
        // The fields by name, as `Record.fields` gives them, for a declaration that renames,
        // converts or defaults fields.
        let evolves = !declaration.evolution.changes.isEmpty
        let stored = evolves ? Dictionary(fields.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first }) : [:]
        for field in declaration.fields {
            // Renamed, converted or defaulted as the declaration's evolution says.
            let value = !evolves || declaration.evolution.changes[field.name] == nil
                ? fields.first { Bytewise.equal($0.name, field.name) }?.value
                : declaration.reading(field, in: stored).value
            // A scalar in a scalar field, the common column: its value alone, no list made.
            if case let .scalar(type) = field.type, case let .scalar(scalar)? = value {
                values.append(DeclaredValue.of(scalar, as: type))
                continue
            }
            let (columns, fitting) = DeclaredValue.columns(field, value)
            values += columns
            if case .file = field.type { values.append(try Store.declaredLocal(db, value)) }
            if !fitting.isEmpty {
                let column = CollectionDeclaration.column(field.name)
                elements += fitting.map { (column, $0) }
            }
        }
        values.append(.int(deleteUpdate ? 1 : 0))
        values.append(.int(Int64(fileForks)))
        values.append(.int(WholeRow.isWhole(fields, declaration) ? 1 : 0))
        try upsert.execute { binder in
            binder.bind(ref.id, at: 1)
            for (index, value) in values.enumerated() { binder.bind(value, at: Int32(index + 2)) }
        }
        try search?.insert.execute { $0.bind(ref.id, at: 1) }
        for element in elements {
            try elementInsert.execute { binder in
                binder.bind(ref.id, at: 1)
                binder.bind(element.column, at: 2)
                binder.bind(element.value, at: 3)
            }
        }
    }
}
