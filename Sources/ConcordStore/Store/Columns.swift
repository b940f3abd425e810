import ConcordCore
import GRDBSQLite

/// The columns of the current row of a statement stepped through SQLite's C API, read in
/// place: the point read (``PointReader``) and the snapshot writer's scan of every record
/// (`SlotIO.forEachRecord`), where GRDB's rows and cursors cost more than SQLite's work.
struct Columns {
    let statement: OpaquePointer

    init(_ statement: OpaquePointer) {
        self.statement = statement
    }

    func int64(_ column: Int32) -> Int64 {
        sqlite3_column_int64(statement, column)
    }

    func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(statement, column) == SQLITE_NULL
    }

    /// Text as UTF-8 (the empty string for NULL).
    func text(_ column: Int32) -> String {
        guard let base = sqlite3_column_text(statement, column) else { return "" }
        return String(decoding: UnsafeBufferPointer(start: base, count: Int(sqlite3_column_bytes(statement, column))), as: UTF8.self)
    }

    func blob(_ column: Int32) -> [UInt8] {
        bytes(column) { Array($0) }
    }

    /// `body` over a blob's bytes in SQLite's memory, valid only during the call.
    func bytes<T>(_ column: Int32, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let base = sqlite3_column_blob(statement, column)
        return body(UnsafeRawBufferPointer(start: base, count: base == nil ? 0 : Int(sqlite3_column_bytes(statement, column))))
    }

    /// The stamp in an hlc column (stored with its top bit flipped, ``Rows/hlc(_:)``) and a
    /// replica column.
    func stamp(hlc: Int32, replica: Int32) throws -> Stamp {
        let id = bytes(replica) { ReplicaID(bytes: $0) }
        guard let id else { throw ConcordError(.corrupt, "a replica id is not 16 bytes") }
        return Stamp(hlc: Rows.hlc(stored: sqlite3_column_int64(statement, hlc)), replica: id)
    }

    /// The payload in a row's `kind` column and the `value`, `file_size` and `media_type`
    /// columns right after it, as ``Rows/payload(_:kind:value:)`` reads them.
    func payload(kind column: Int32) throws -> Payload {
        let kind = sqlite3_column_int64(statement, column)
        let value = column + 1
        let type = sqlite3_column_type(statement, value)
        switch kind {
        case Rows.kindNull: return .scalar(.null)
        case Rows.kindBool: return .scalar(.bool(sqlite3_column_int64(statement, value) != 0))
        case Rows.kindInt: return .scalar(.int(sqlite3_column_int64(statement, value)))
        case Rows.kindDouble:
            switch type {
            case SQLITE_BLOB where sqlite3_column_bytes(statement, value) == 8:
                return .scalar(.double(Double(bitPattern: bytes(value) { $0.reduce(UInt64(0)) { $0 << 8 | UInt64($1) } })))
            case SQLITE_NULL: return .scalar(.double(.nan))  // a NaN an earlier release let SQLite store as NULL
            default: return .scalar(.double(sqlite3_column_double(statement, value)))
            }
        case Rows.kindString:
            if type == SQLITE_BLOB { return .scalar(.string(bytes(value) { String(decoding: $0, as: UTF8.self) })) }
            return .scalar(.string(text(value)))
        case Rows.kindBytes: return .scalar(.bytes(blob(value)))
        case Rows.kindFile:
            guard let hash = ContentHash(bytes: blob(value)) else {
                throw ConcordError(.corrupt, "a file field stores a hash that is not 32 bytes")
            }
            let mediaType = isNull(value + 2) ? nil : text(value + 2)
            return .file(FileRef(hash: hash, size: UInt64(bitPattern: sqlite3_column_int64(statement, value + 1)), mediaType: mediaType))
        default:
            throw ConcordError(.corrupt, "a field row has unknown kind \(kind)")
        }
    }
}
