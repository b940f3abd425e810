import ConcordCore
import Foundation
import GRDB

/// A file policy for one declared collection, or one file field of it, that differs from
/// the store's (README, "Large files and small devices"): `photos` on demand while `notes`
/// stays eager. A field's scope wins over its collection's, a collection's over the store's.
public struct FilePolicyScope: Hashable, Sendable, Comparable {
    public let collection: String
    /// nil: every file field of the collection.
    public let field: String?
    public let mode: FilePolicy.Mode

    public init(_ collection: String, field: String? = nil, mode: FilePolicy.Mode) {
        self.collection = collection
        self.field = field
        self.mode = mode
    }

    public static func < (a: FilePolicyScope, b: FilePolicyScope) -> Bool {
        (a.collection, a.field ?? "") < (b.collection, b.field ?? "")
    }
}

/// The policy of every file field, as one transaction reads it: the store's mode and the
/// scopes that differ from it.
struct FileModes {
    let store: FilePolicy.Mode
    private let collections: [String: FilePolicy.Mode]
    private let fields: [String: [String: FilePolicy.Mode]]

    init(_ db: Database) throws {
        store = try Store.filePolicy(db).mode
        var collections: [String: FilePolicy.Mode] = [:]
        var fields: [String: [String: FilePolicy.Mode]] = [:]
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT collection, field, on_demand FROM concord_file_policy_scopes")) {
            let collection: String = row[0]
            let field: String = row[1]
            let mode: FilePolicy.Mode = (row[2] as Int64) == 1 ? .onDemand : .eager
            if field.isEmpty { collections[collection] = mode } else { fields[collection, default: [:]][field] = mode }
        }
        self.collections = collections
        self.fields = fields
    }

    /// Whether any scope differs from the store's mode: some fields eager, others on demand.
    var mixed: Bool { collections.values.contains { $0 != store } || fields.values.contains { $0.values.contains { $0 != store } } }

    /// Whether some file field is fetched on demand.
    var anyOnDemand: Bool { store == .onDemand || collections.values.contains(.onDemand) || fields.values.contains { $0.values.contains(.onDemand) } }

    /// Whether every file field is fetched on demand (no batch is ever held back for a file).
    var allOnDemand: Bool { store == .onDemand && !mixed }

    func mode(_ collection: String, _ field: String?) -> FilePolicy.Mode {
        if let field, let mode = fields[collection]?[field] { return mode }
        return collections[collection] ?? store
    }

    func onDemand(_ collection: String, _ field: String?) -> Bool { mode(collection, field) == .onDemand }

    /// The entries of `delta` in eager fields: those whose files must be local before it applies.
    func eagerEntries(_ delta: Delta) -> [Entry] {
        if store == .eager, !mixed { return delta.records.flatMap { $0.slots.flatMap(\.entries) } }
        return delta.records.flatMap { record in
            record.slots.filter { !onDemand(record.ref.collection, $0.key.fieldName) }.flatMap(\.entries)
        }
    }
}

extension Store {
    /// The file policy scopes set on this replica, sorted.
    public func filePolicyScopes() throws(ConcordError) -> [FilePolicyScope] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT collection, field, on_demand FROM concord_file_policy_scopes").map { row in
                let field: String = row[1]
                return FilePolicyScope(row[0], field: field.isEmpty ? nil : field, mode: (row[2] as Int64) == 1 ? .onDemand : .eager)
            }.sorted()
        }
    }

    /// Whether some file field is fetched on demand (the store's policy, or a scope's).
    package func hasOnDemandFiles() throws(ConcordError) -> Bool {
        try read { db in try FileModes(db).anyOnDemand }
    }

    /// The mode that applies to `collection`'s file `field` (or to the collection's files).
    public func fileMode(collection: String, field: String? = nil) throws(ConcordError) -> FilePolicy.Mode {
        try read { db in try FileModes(db).mode(collection, field) }
    }

    /// Sets the file policy of a declared collection, or of one of its file fields: its
    /// contents are then fetched eagerly or on demand whatever the store's policy. The
    /// budget stays the store's (``FilePolicy/budget``). A scope back to eager makes the
    /// next sync fetch what it lacks.
    ///
    /// - Throws: `notFound` for a collection not declared or a field it does not declare as
    ///   a file.
    public func setFilePolicy(_ scope: FilePolicyScope) throws(ConcordError) {
        try writeDatabase { db in
            try Self.checkDeclaredFile(db, scope.collection, scope.field)
            let before = try FileModes(db).mode(scope.collection, scope.field)
            try db.execute(sql: """
                INSERT INTO concord_file_policy_scopes (collection, field, on_demand) VALUES (?, ?, ?)
                ON CONFLICT (collection, field) DO UPDATE SET on_demand = excluded.on_demand
                """, arguments: [scope.collection, scope.field ?? "", scope.mode == .onDemand ? 1 : 0])
            if before == .onDemand, scope.mode == .eager { try Self.noteFillPending(db) }
        }
    }

    /// Removes the scope of `collection` (or of its `field`): its files follow the
    /// collection's or the store's policy again. Returns whether there was one.
    @discardableResult
    public func clearFilePolicy(collection: String, field: String? = nil) throws(ConcordError) -> Bool {
        try writeDatabase { db in
            let before = try FileModes(db).mode(collection, field)
            try db.execute(sql: "DELETE FROM concord_file_policy_scopes WHERE collection = ? AND field = ?", arguments: [collection, field ?? ""])
            let removed = db.changesCount > 0
            if before == .onDemand, try FileModes(db).mode(collection, field) == .eager { try Self.noteFillPending(db) }
            return removed
        }
    }

    static func checkDeclaredFile(_ db: Database, _ collection: String, _ field: String?) throws {
        guard let declaration = try DeclaredTables.all(db)[Array(collection.utf8)] else {
            throw ConcordError(.notFound, "collection \"\(collection)\" is not declared: a policy per collection needs its declaration (`concord schema declare`), or set the store's policy")
        }
        guard let field else { return }
        guard let declared = declaration.fields.first(where: { $0.name == field }), case .file = declared.type else {
            throw ConcordError(.notFound, "collection \"\(collection)\" declares no file field \"\(field)\"")
        }
    }

    /// Notes that an eager field may lack contents (it was on demand): the next sync fetches them.
    static func noteFillPending(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO concord_file_policy (singleton, on_demand, fill_pending) VALUES (1, 0, 1)
            ON CONFLICT (singleton) DO UPDATE SET fill_pending = 1
            """)
    }

    /// The file values (current and forked) the records reference, with their sizes, of
    /// fields on demand (`onDemand`) or eager (`!onDemand`).
    package func referencedFileSizes(onDemand: Bool) throws(ConcordError) -> [ContentHash: UInt64] {
        try read { db in
            let modes = try FileModes(db)
            var files: [ContentHash: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT collection, field, value, file_size FROM concord_fields WHERE kind = \(FieldKind.file.stored)
                UNION ALL SELECT collection, field, value, file_size FROM concord_field_versions WHERE kind = \(FieldKind.file.stored)
                """) {
                guard modes.onDemand(row[0], row[1]) == onDemand,
                      let data = row[2] as Data?, let hash = ContentHash(bytes: [UInt8](data)) else { continue }
                files[hash] = UInt64(max(0, row[3] as Int64? ?? 0))
            }
            return files
        }
    }

    /// The contents of eager fields, when some fields are on demand and others eager: an
    /// eager field keeps its contents (they are never evicted).
    static func eagerFiles(_ db: Database) throws -> Set<ContentHash> {
        let modes = try FileModes(db)
        guard modes.mixed else { return [] }
        var files: Set<ContentHash> = []
        for row in try Row.fetchAll(db, sql: """
            SELECT collection, field, value FROM concord_fields WHERE kind = \(FieldKind.file.stored)
            UNION ALL SELECT collection, field, value FROM concord_field_versions WHERE kind = \(FieldKind.file.stored)
            """) where !modes.onDemand(row[0], row[1]) {
            if let data = row[2] as Data?, let hash = ContentHash(bytes: [UInt8](data)) { files.insert(hash) }
        }
        return files
    }
}
