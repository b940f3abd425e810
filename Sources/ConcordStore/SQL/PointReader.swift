import ConcordCodec
import ConcordCore
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// The store's connection for point reads (``Store/record(_:)``): one SQLite connection of
/// its own with the read's statement prepared once, driven through SQLite's C API.
///
/// A read through the store's `DatabasePool` takes a reader from the pool and runs on its
/// queue, and GRDB's rows and cursors wrap every column: together more than the read itself
/// (issue 15's profile: about half of a point read). Here a read is a lock, one statement
/// and the columns read in place. In WAL mode a statement reads the last committed
/// transaction whichever connection wrote it, so this connection (a ``ReadConnection``)
/// sees exactly what the pool's readers see.
///
/// One read at a time: a read that finds the connection busy (another thread is reading
/// through it) returns ``Outcome/busy`` and the store reads through its pool instead, so
/// concurrent readers never wait for each other. If the connection cannot be opened the
/// store always reads through its pool.
final class PointReader: Sendable {
    enum Outcome {
        case read([(name: String, value: FieldValue)]?)
        case busy
    }

    /// A read with the schema's version (`PRAGMA schema_version`) of the same state.
    enum VersionedOutcome {
        case read([(name: String, value: FieldValue)]?, schemaVersion: Int64)
        case busy
    }

    private let connection: Mutex<Connection?>

    init(path: String) {
        connection = Mutex(Connection(path: path))
    }

    /// The visible fields of `ref` sorted by name (bytewise), nil if it is not visible: the
    /// same answer as `SlotIO.record(_:_:)` followed by `Record.sortedFields`.
    func record(_ ref: RecordRef) throws -> Outcome {
        let outcome = connection.withLockIfAvailable { connection -> Result<Outcome, any Error> in
            guard let connection else { return .success(.busy) }
            return Result { .read(try connection.record(ref)) }
        }
        guard let outcome else { return .busy }
        return try outcome.get()
    }

    /// What ``record(_:)`` reads, and the schema's version (`PRAGMA schema_version`) in the
    /// same statement, so of the same committed state: what a typed load needs to know
    /// that the declarations the store keeps are that state's (``DeclarationCache``).
    func recordAndSchemaVersion(_ ref: RecordRef) throws -> VersionedOutcome {
        let outcome = connection.withLockIfAvailable { connection -> Result<VersionedOutcome, any Error> in
            guard let connection else { return .success(.busy) }
            return Result { try connection.recordAndSchemaVersion(ref) }
        }
        guard let outcome else { return .busy }
        return try outcome.get()
    }

    /// An open connection and its prepared statements; closed when dropped.
    private final class Connection {
        private let connection: ReadConnection
        private var statement: OpaquePointer { connection.statement }

        /// Rows of a record: its set elements' adds (source 1), its register winners
        /// (source 0), and one row (source 2) if it has a liveness dot. Columns: 0 source,
        /// 1 field, 2 kind, 3 value or element, 4 file_size, 5 media_type, 6 hlc, 7 replica.
        /// (SQLite runs the arms in order, so the elements come first and a register's stamp
        /// is read only when a set of the same name competes with it; the read does not
        /// depend on that order, see ``record(_:)``.)
        static let sql = """
            SELECT 1, field, NULL, element, NULL, NULL, hlc, replica FROM concord_elements WHERE collection = ?1 AND id = ?2
            UNION ALL
            SELECT 0, field, kind, value, file_size, media_type, hlc, replica FROM concord_fields WHERE collection = ?1 AND id = ?2
            UNION ALL
            SELECT 2, NULL, NULL, NULL, NULL, NULL, NULL, NULL WHERE EXISTS (
                SELECT 1 FROM concord_dots WHERE collection = ?1 AND id = ?2 AND kind = \(Rows.slotLiveness))
            """

        /// ``sql`` and one more row (source 3): the schema's version, in column 3.
        static let versionedSQL = sql + """

            UNION ALL
            SELECT 3, NULL, NULL, schema_version, NULL, NULL, NULL, NULL FROM pragma_schema_version
            """

        init?(path: String) {
            guard let connection = ReadConnection(path: path, busyTimeout: 10_000, sql: Self.sql, also: Self.versionedSQL) else { return nil }
            self.connection = connection
        }

        func record(_ ref: RecordRef) throws -> [(name: String, value: FieldValue)]? {
            try record(ref, statement, sql: Self.sql).fields
        }

        func recordAndSchemaVersion(_ ref: RecordRef) throws -> VersionedOutcome {
            guard let versioned = connection.second else { return .busy }
            let (fields, version) = try record(ref, versioned, sql: Self.versionedSQL)
            guard let version else { throw ConcordError(.corrupt, "\(ref) was read without the schema's version") }
            return .read(fields, schemaVersion: version)
        }

        private func record(_ ref: RecordRef, _ statement: OpaquePointer, sql: String) throws -> (fields: [(name: String, value: FieldValue)]?, schemaVersion: Int64?) {
            if case let .read(fields, version) = try read(ref, statement, sql: sql, stampingEveryRegister: false) { return (fields, version) }
            // A register competes with a set of its name but came before the set's elements,
            // its stamp not read: read again, with every register's stamp.
            guard case let .read(fields, version) = try read(ref, statement, sql: sql, stampingEveryRegister: true) else {
                throw ConcordError(.corrupt, "\(ref) could not be read: a register's stamp was not read")
            }
            return (fields, version)
        }

        private enum Read {
            case read([(name: String, value: FieldValue)]?, schemaVersion: Int64?)
            case again
        }

        /// One read of `ref` through `statement` (of `sql`). A register's stamp is read only
        /// when a set of the same name has already been seen or `stampingEveryRegister` (the
        /// common record has no set, and its stamps cost a tenth of the read); `.again` when
        /// a stamp turned out needed.
        private func read(_ ref: RecordRef, _ statement: OpaquePointer, sql: String, stampingEveryRegister: Bool) throws -> Read {
            defer { sqlite3_reset(statement) }
            let binder = BoundStatement.Binder(handle: statement)
            binder.bind(ref)
            let columns = Columns(statement)
            var visible = false
            // The register winners as the answer will hold them, and their stamps beside
            // them where read.
            var fields: [(name: String, value: FieldValue)] = []
            var dots: [Stamp?] = []
            fields.reserveCapacity(16)
            dots.reserveCapacity(16)
            var inOrder = true
            var elements: [(name: String, element: [UInt8], dot: Stamp)] = []
            var schemaVersion: Int64?
            try columns.forEachRow(sql: sql) {
                switch sqlite3_column_int64(statement, 0) {
                case 0:
                    let name = columns.text(1)
                    let value: FieldValue
                    switch try Rows.payload(columns, kind: 2) {
                    case let .scalar(scalar): value = .scalar(scalar)
                    case let .file(file): value = .file(file)
                    case .marker: return
                    }
                    if inOrder, let last = fields.last, !Bytewise.less(last.name, name) { inOrder = false }
                    fields.append((name, value))
                    let competes = stampingEveryRegister || elements.contains { Bytewise.equal($0.name, name) }
                    dots.append(competes ? try columns.stamp(hlc: 6, replica: 7) : nil)
                case 1:
                    elements.append((columns.text(1), columns.blob(3) ?? [], try columns.stamp(hlc: 6, replica: 7)))
                case 2:
                    visible = true
                default:
                    schemaVersion = columns.int64(3)
                }
            }
            guard visible else { return .read(nil, schemaVersion: schemaVersion) }
            if elements.isEmpty {
                if !inOrder { fields.sort { Bytewise.less($0.name, $1.name) } }
                return .read(fields, schemaVersion: schemaVersion)
            }
            guard let merged = try Self.merge(registers: zip(fields, dots).map { (name: $0.name, dot: $1, value: $0.value) }, elements: elements) else {
                return .again
            }
            return .read(merged, schemaVersion: schemaVersion)
        }

        /// A record with set elements, read as `Record.sortedFields` reads it: a name
        /// written both as a register and as a set reads as whichever holds the greater stamp.
        /// Nil if a register that competes with a set has no stamp.
        static func merge(
            registers: [(name: String, dot: Stamp?, value: FieldValue)], elements: [(name: String, element: [UInt8], dot: Stamp)]
        ) throws -> [(name: String, value: FieldValue)]? {
            var sets: [ExactString: (elements: Set<ScalarValue>, maxDot: Stamp)] = [:]
            for row in elements {
                let name = ExactString(row.name)
                var set = sets[name] ?? (elements: [], maxDot: row.dot)
                set.elements.insert(try SlotIO.element(Data(row.element)))
                set.maxDot = max(set.maxDot, row.dot)
                sets[name] = set
            }
            var fields: [ExactString: FieldValue] = [:]
            for register in registers {
                let name = ExactString(register.name)
                if let set = sets[name] {
                    guard let dot = register.dot else { return nil }
                    if set.maxDot >= dot { continue }
                }
                fields[name] = register.value
            }
            for (name, set) in sets where fields[name] == nil {
                fields[name] = .set(set.elements.sorted(by: ScalarValue.canonicalOrder))
            }
            return fields.sorted { $0.key < $1.key }.map { (name: $0.key.value, value: $0.value) }
        }
    }
}
