import ConcordCore
import Foundation
import GRDB
import GRDBSQLite

/// A statement whose arguments are bound through SQLite's C API, for the writes that run once
/// per field or per record: the register upserts of a local write and the LWW upserts of a
/// remote apply (``BatchedUpsert``).
/// Building GRDB's `StatementArguments` for each (an array of existential values, then
/// temporary bindings) cost more than SQLite's own work for the row.
///
/// GRDB still executes the statement (`Statement.execute()`), so its transaction bookkeeping,
/// `changesCount` and observation of changes (`ValueObservation`, transaction observers) see
/// every row exactly as with `execute(arguments:)`.
struct BoundStatement {
    let statement: Statement
    /// Where the text and blobs of one execution are copied, so SQLite binds them in place.
    private let arena = BindingArena()

    /// `statement`, whose arguments will be bound by ``execute(_:)``. It is marked as bound
    /// (with NULLs) once, so that `execute()` steps it with the bindings set here instead of
    /// validating arguments of its own: a statement from the connection's cache, under SQL
    /// that only a `BoundStatement` runs (``cached(_:sql:)``), stays marked from the
    /// transaction that first took it.
    init(_ statement: Statement) {
        // A statement from the cache was marked in an earlier transaction already.
        if statement.arguments.isEmpty {
            let count = Int(sqlite3_bind_parameter_count(statement.sqliteStatement))
            statement.setUncheckedArguments(StatementArguments(Array(repeating: DatabaseValue.null, count: count)))
        }
        self.statement = statement
    }

    /// The statement for `sql` from the connection's statement cache, prepared once per
    /// connection instead of once per transaction: preparing the write path's statements
    /// anew for every `write {}` cost a twentieth of a thousand-field write.
    ///
    /// The cache is keyed by the SQL's text, and a statement GRDB has executed with
    /// arguments of its own (`execute(arguments:)`) may bind them again when it is next
    /// executed: so the text is marked, and a statement bound here is never the one a
    /// caller runs through GRDB's arguments.
    static func cached(_ db: Database, sql: String) throws -> BoundStatement {
        BoundStatement(try db.cachedStatement(sql: marked(sql)))
    }

    /// `sql` marked as the text of a statement bound here (``cached(_:sql:)``).
    static func marked(_ sql: String) -> String {
        sql + "\n-- bound through SQLite's C API"
    }

    /// Binds the arguments with `bind`, then executes the statement. The text and blobs are
    /// copied into the statement's arena and bound in place (`SQLITE_STATIC`), and unbound
    /// again once it ran, before the arena is reused: SQLite copying each into memory it
    /// allocates (`SQLITE_TRANSIENT`) was a tenth of a local write's instructions.
    func execute(_ bind: (Binder) -> Void) throws {
        let handle = statement.sqliteStatement
        sqlite3_reset(handle)  // bindings need a statement that is not running
        defer {
            sqlite3_reset(handle)
            sqlite3_clear_bindings(handle)
            arena.reset()
        }
        bind(Binder(handle: handle, arena: arena))
        try statement.execute()
    }

    /// Binds values to parameters by their 1-based index. Text and blobs are copied by SQLite
    /// (`SQLITE_TRANSIENT`), as GRDB's own bindings do, or, given an arena, into the arena
    /// and bound in place (``BoundStatement/execute(_:)``).
    struct Binder {
        let handle: SQLiteStatement
        var arena: BindingArena?
        private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

        init(handle: SQLiteStatement, arena: BindingArena? = nil) {
            self.handle = handle
            self.arena = arena
        }

        func bind(_ value: Int64, at index: Int32) {
            sqlite3_bind_int64(handle, index, value)
        }

        func bind(_ text: String, at index: Int32) {
            var text = text
            text.withUTF8 { bytes in
                if let base = bytes.baseAddress, !bytes.isEmpty {
                    if let arena {
                        let copy = arena.copy(UnsafeRawBufferPointer(bytes))
                        sqlite3_bind_text(handle, index, copy.assumingMemoryBound(to: CChar.self), Int32(bytes.count), nil)
                    } else {
                        sqlite3_bind_text(handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count), Self.transient)
                    }
                } else {
                    sqlite3_bind_text(handle, index, "", 0, Self.transient)
                }
            }
        }

        func bind(_ data: Data, at index: Int32) {
            data.withUnsafeBytes { bindBlob($0, at: index) }
        }

        func bind(_ bytes: [UInt8], at index: Int32) {
            bytes.withUnsafeBytes { bindBlob($0, at: index) }
        }

        /// An empty blob is bound as a zero-length blob, never as NULL.
        private func bindBlob(_ buffer: UnsafeRawBufferPointer, at index: Int32) {
            if let arena, !buffer.isEmpty {
                sqlite3_bind_blob(handle, index, arena.copy(buffer), Int32(buffer.count), nil)
            } else if let base = buffer.baseAddress, !buffer.isEmpty {
                sqlite3_bind_blob(handle, index, base, Int32(buffer.count), Self.transient)
            } else {
                sqlite3_bind_zeroblob(handle, index, 0)
            }
        }

        /// Binds a record's collection and id at 1 and 2: every per-record table's key starts so.
        func bind(_ ref: RecordRef) {
            bind(ref, at: 1)
        }

        /// Binds a record's collection at `index` and its id at the next.
        func bind(_ ref: RecordRef, at index: Int32) {
            bind(ref.collection, at: index)
            bind(ref.id, at: index + 1)
        }

        /// Binds a payload's `kind`, `value`, `file_size` and `media_type` columns
        /// (``Rows/columns(_:)``) at `index` and the three after it. A scalar's last two are
        /// NULL, and are left so when binding for ``BoundStatement/execute(_:)`` (with an
        /// arena), whose parameters are all NULL until bound.
        func bind(_ payload: Payload, at index: Int32) {
            guard case let .scalar(value) = payload, startsUnbound else {
                return bind(Rows.columns(payload), at: index)
            }
            bind(value, at: index)
        }

        /// Whether every parameter is NULL until bound here: so for the binder of
        /// ``BoundStatement/execute(_:)`` (the one with an arena), which clears the bindings
        /// after each run.
        private var startsUnbound: Bool { arena != nil }

        /// Binds a scalar's `kind` and `value` columns at `index` and the one after it: the
        /// common integers and strings directly, the others as ``Rows/columns(_:)`` encodes them.
        func bind(_ value: ScalarValue, at index: Int32) {
            switch value {
            case let .int(number):
                bind(FieldKind.int.stored, at: index)
                bind(number, at: index + 1)
            case let .string(text) where !Bytewise.containsNUL(text):
                bind(FieldKind.string.stored, at: index)
                bind(text, at: index + 1)
            default:
                let columns = Rows.columns(.scalar(value))
                bind(columns.kind, at: index)
                bind(columns.value, at: index + 1)
            }
        }

        func bind(_ columns: (kind: Int64, value: DatabaseValue, size: DatabaseValue, type: DatabaseValue), at index: Int32) {
            bind(columns.kind, at: index)
            bind(columns.value, at: index + 1)
            bind(columns.size, at: index + 2)
            bind(columns.type, at: index + 3)
        }

        func bind(_ value: DatabaseValue, at index: Int32) {
            switch value.storage {
            case .null: sqlite3_bind_null(handle, index)
            case let .int64(number): sqlite3_bind_int64(handle, index, number)
            case let .double(number): sqlite3_bind_double(handle, index, number)
            case let .string(text): bind(text, at: index)
            case let .blob(data):
                data.withUnsafeBytes { bindBlob($0, at: index) }
            }
        }
    }
}

/// An insert or upsert of up to ``limit`` rows in one statement (into `concord_fields`, or a
/// record's liveness rows), prepared once per row count and connection. SQLite runs one
/// statement of ten rows in about two thirds of the time of ten statements of one row
/// (Benchmarks/README.md, "What the schema costs"), and GRDB's work per executed statement
/// is paid once.
///
/// The leading parameters are shared by every row (the record, and whatever else the
/// caller puts there); each row then has `parametersPerRow` of its own, from the number
/// ``execute(_:_:shared:row:)`` hands its `row` binding.
struct BatchedUpsert {
    /// The most rows one statement takes.
    static let limit = 32

    /// What the statements of one kind are: their SQL for every row count, written once per
    /// process (writing it for each transaction was a twentieth of a local write).
    struct Shape: Sendable {
        let firstRowParameter: Int
        let parametersPerRow: Int
        /// The SQL of the statement of `rows` rows at `rows - 1`.
        let sql: [String]

        /// - Parameters:
        ///   - target: the table and its columns, as `INSERT INTO` names them.
        ///   - row: a row's `VALUES` tuple, given the number of its first parameter.
        ///   - onConflict: the statements' `ON CONFLICT` clause, if any.
        init(
            into target: String, sharedParameters: Int, parametersPerRow: Int,
            row: (_ first: Int) -> String, onConflict: String = ""
        ) {
            let first = sharedParameters + 1
            firstRowParameter = first
            self.parametersPerRow = parametersPerRow
            let rows = (0..<BatchedUpsert.limit).map { row(first + parametersPerRow * $0) }
            sql = (1...BatchedUpsert.limit).map { count in
                BoundStatement.marked("""
                    INSERT INTO \(target)
                    VALUES \(rows.prefix(count).joined(separator: ", "))
                    \(onConflict)
                    """)
            }
        }

        /// The table and columns of an upsert of registers.
        static let fields = "concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)"
    }

    let shape: Shape
    private var prepared: [BoundStatement?] = Array(repeating: nil, count: BatchedUpsert.limit)

    init(_ shape: Shape) {
        self.shape = shape
    }

    /// Writes `rows`, up to ``limit`` in one statement: `shared` binds the parameters every
    /// row shares, `row` one row's own, from the number of its first parameter. (Inlined, with
    /// `upsert`, into each write path, so the bindings cost no closure calls per row.)
    @inline(__always)
    mutating func execute<Rows: Collection>(
        _ db: Database, _ rows: Rows,
        shared: (BoundStatement.Binder) -> Void = { _ in },
        row: (BoundStatement.Binder, Int32, Rows.Element) -> Void
    ) throws {
        var start = rows.startIndex
        while start != rows.endIndex {
            let end = rows.index(start, offsetBy: Self.limit, limitedBy: rows.endIndex) ?? rows.endIndex
            let chunk = rows[start..<end]
            let shape = shape
            try statement(db, rows: chunk.count).execute { binder in
                shared(binder)
                for (index, element) in chunk.enumerated() {
                    row(binder, Int32(shape.firstRowParameter + shape.parametersPerRow * index), element)
                }
            }
            start = end
        }
    }

    /// Upserts `rows` as ``execute(_:_:shared:row:)`` does, for an upsert whose `ON
    /// CONFLICT … WHERE` may leave a row as it is: a statement that changed fewer rows than
    /// it was given runs again for each of them alone (a row it replaced takes the same
    /// values again). Returns the rows left as they were, in order, for the caller to
    /// replace slot-wise.
    @inline(__always)
    mutating func upsert<Rows: Collection>(
        _ db: Database, _ rows: Rows,
        shared: (BoundStatement.Binder) -> Void = { _ in },
        row: (BoundStatement.Binder, Int32, Rows.Element) -> Void
    ) throws -> [Rows.Element] {
        var unchanged: [Rows.Element] = []
        var start = rows.startIndex
        while start != rows.endIndex {
            let end = rows.index(start, offsetBy: Self.limit, limitedBy: rows.endIndex) ?? rows.endIndex
            let chunk = rows[start..<end]
            try execute(db, chunk, shared: shared, row: row)
            if db.changesCount < chunk.count {
                for element in chunk {
                    try execute(db, CollectionOfOne(element), shared: shared, row: row)
                    if db.changesCount == 0 { unchanged.append(element) }
                }
            }
            start = end
        }
        return unchanged
    }

    /// The statement for `rows` rows, from the connection's statement cache on first use.
    private mutating func statement(_ db: Database, rows: Int) throws -> BoundStatement {
        precondition(rows > 0 && rows <= Self.limit)
        if let statement = prepared[rows - 1] { return statement }
        let statement = BoundStatement(try db.cachedStatement(sql: shape.sql[rows - 1]))
        prepared[rows - 1] = statement
        return statement
    }
}

/// Memory for the text and blobs bound to one execution of a ``BoundStatement``: chunks that
/// never move while in use, so every pointer handed out stays valid until ``reset()``.
final class BindingArena {
    private static let chunkSize = 16 * 1024
    private var chunks: [UnsafeMutableRawBufferPointer] = []
    /// Bytes used of the last chunk.
    private var used = 0

    /// A copy of `bytes` (not empty), valid until the next ``reset()``.
    func copy(_ bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer {
        if chunks.isEmpty || used + bytes.count > chunks[chunks.count - 1].count {
            chunks.append(.allocate(byteCount: max(Self.chunkSize, bytes.count), alignment: 8))
            used = 0
        }
        let destination = chunks[chunks.count - 1].baseAddress! + used
        destination.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count)
        used += bytes.count
        return UnsafeRawPointer(destination)
    }

    /// Makes the memory free for the next execution, keeping one chunk.
    func reset() {
        while chunks.count > 1 { chunks.removeLast().deallocate() }
        used = 0
    }

    deinit {
        for chunk in chunks { chunk.deallocate() }
    }
}
