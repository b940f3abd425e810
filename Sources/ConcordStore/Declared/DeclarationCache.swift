import ConcordCore
import GRDB
import Synchronization

/// The declarations a store last read, kept between transactions: every write transaction
/// that touched a declared collection and every query needs them, and reading them means
/// parsing each declaration's JSON.
///
/// They are kept under SQLite's `schema_version` when they were read. Declaring, declaring
/// again and dropping always change the schema (tables made, altered, dropped), in this
/// process or another one on the same file, so a transaction that sees another
/// `schema_version` reads them again. The store also forgets them after each of its own
/// declarations (``Store/declare(_:)``), so a declaration rolled back — whose version a
/// later one may reach again — is never taken for the committed one.
final class DeclarationCache: Sendable {
    private let kept = Mutex<(version: Int64, declarations: [[UInt8]: CollectionDeclaration])?>(nil)
    /// Each collection's result columns, made for the declaration they hold (a query makes
    /// them from its declaration, which costs as much as running a small query).
    private let columns = Mutex<[[UInt8]: ResultColumns]>([:])

    /// Every declaration in the state `db` reads, by its collection's UTF-8 bytes.
    func all(_ db: Database) throws -> [[UInt8]: CollectionDeclaration] {
        let version = try Self.schemaVersion(db)
        if let hit = kept(at: version) { return hit }
        let declarations = try DeclaredTables.all(db)
        kept.withLock { $0 = (version, declarations) }
        return declarations
    }

    /// The declarations kept, if `db` reads the schema they were read under (one
    /// statement); nil when they must be read again.
    func current(_ db: Database) throws -> [[UInt8]: CollectionDeclaration]? {
        kept(at: try Self.schemaVersion(db))
    }

    /// The declarations kept, if read under schema version `version`.
    func kept(at version: Int64) -> [[UInt8]: CollectionDeclaration]? {
        kept.withLock { $0?.version == version ? $0?.declarations : nil }
    }

    private static func schemaVersion(_ db: Database) throws -> Int64 {
        try Int64.fetchOne(db.cachedStatement(sql: "PRAGMA schema_version")) ?? -1
    }

    /// The declaration of `collection`, if declared.
    func declaration(_ db: Database, _ collection: String) throws -> CollectionDeclaration? {
        try all(db)[Array(collection.utf8)]
    }

    /// The result columns of `declaration`: kept from an earlier query when made for an
    /// equal declaration, else made and kept.
    func resultColumns(_ declaration: CollectionDeclaration) -> ResultColumns {
        let key = Array(declaration.collection.utf8)
        if let made = columns.withLock({ $0[key] }), made.declaration == declaration { return made }
        let made = ResultColumns(declaration)
        columns.withLock { $0[key] = made }
        return made
    }

    func forget() {
        kept.withLock { $0 = nil }
    }
}
