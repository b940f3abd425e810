import ConcordCodec
import ConcordCore
import Foundation
import GRDB

extension FieldKind {
    /// The kind's code in the store's `kind` columns: its raw value.
    var stored: Int64 { Int64(rawValue) }
}

/// How core values are stored in SQLite columns.
enum Rows {
    // Slot kinds in concord_outbox (as in the binary format).
    static let slotLiveness: Int64 = 0
    static let slotTombstones: Int64 = 1
    static let slotField: Int64 = 2
    static let slotElement: Int64 = 3
    /// An outbox row that marks a whole record (a purge), not one slot.
    static let wholeRecord: Int64 = 4

    /// The (kind, value, file_size, media_type) columns of a register payload; the kind is
    /// its ``ConcordCore/FieldKind``'s code (``ConcordCore/FieldKind/stored``).
    static func columns(_ payload: Payload) -> (kind: Int64, value: DatabaseValue, size: DatabaseValue, type: DatabaseValue) {
        switch payload {
        case .marker:
            preconditionFailure("a register holds no bare dots")
        case let .file(file):
            return (FieldKind.file.stored, Data(file.hash.bytes).databaseValue, Int64(bitPattern: file.size).databaseValue,
                    file.mediaType?.databaseValue ?? .null)
        case let .scalar(value):
            switch value {
            case .null: return (FieldKind.null.stored, .null, .null, .null)
            case let .bool(flag): return (FieldKind.bool.stored, (flag ? 1 : 0 as Int64).databaseValue, .null, .null)
            case let .int(number): return (FieldKind.int.stored, number.databaseValue, .null, .null)
            // SQLite turns a NaN into NULL: it is kept as its 8-byte bit pattern instead.
            case let .double(number):
                return (FieldKind.double.stored, number.isNaN ? Data(withUnsafeBytes(of: number.bitPattern.bigEndian, Array.init)).databaseValue : number.databaseValue, .null, .null)
            // SQLite binds and reads text up to its first NUL: a string holding one is kept
            // as its UTF-8 bytes instead, so it round-trips byte for byte.
            case let .string(text): return (FieldKind.string.stored, Bytewise.containsNUL(text) ? Data(text.utf8).databaseValue : text.databaseValue, .null, .null)
            case let .bytes(data): return (FieldKind.bytes.stored, Data(data).databaseValue, .null, .null)
            }
        }
    }

    /// The payload stored in a row's `kind` column at `kind` and the `value`, `file_size`
    /// and `media_type` columns right after it — of a GRDB row or of a statement stepped
    /// through SQLite's C API (``Columns``): the one place a stored payload is decoded.
    static func payload(_ row: some StoredColumns, kind kindColumn: Int32) throws -> Payload {
        let kindValue = row.int64(kindColumn)
        let value = kindColumn + 1
        guard let kind = UInt8(exactly: kindValue).flatMap(FieldKind.init(rawValue:)) else {
            throw ConcordError(.corrupt, "a field row has unknown kind \(kindValue)")
        }
        switch kind {
        case .null: return .scalar(.null)
        case .bool: return .scalar(.bool(row.int64(value) != 0))
        case .int: return .scalar(.int(row.int64(value)))
        case .double:
            if let bits = row.blob(value) {
                // A NaN, kept as its 8-byte bit pattern (SQLite would turn it into NULL).
                guard bits.count == 8 else { throw ConcordError(.corrupt, "a double field stores a blob that is not 8 bytes") }
                return .scalar(.double(Double(bitPattern: bits.reduce(UInt64(0)) { $0 << 8 | UInt64($1) })))
            }
            if row.isNull(value) { return .scalar(.double(.nan)) }  // a NaN an earlier release let SQLite store as NULL
            return .scalar(.double(row.double(value)))
        case .string:
            // A string holding a NUL byte is kept as its UTF-8 bytes (``columns(_:)``).
            if let bytes = row.blob(value) { return .scalar(.string(String(decoding: bytes, as: UTF8.self))) }
            return .scalar(.string(row.text(value)))
        case .bytes: return .scalar(.bytes(row.blob(value) ?? []))
        case .file:
            guard let hash = ContentHash(bytes: row.blob(value) ?? []) else {
                throw ConcordError(.corrupt, "a file field stores a hash that is not 32 bytes")
            }
            let mediaType = row.isNull(value + 2) ? nil : row.text(value + 2)
            return .file(FileRef(hash: hash, size: UInt64(bitPattern: row.int64(value + 1)), mediaType: mediaType))
        }
    }

    static func replicaBlob(_ id: ReplicaID) -> Data { Data(id.bytes) }

    static func replica(_ data: Data) throws -> ReplicaID {
        guard let id = ReplicaID(bytes: [UInt8](data)) else { throw ConcordError(.corrupt, "a replica id is not 16 bytes") }
        return id
    }

    static func stamp(_ row: Row) throws -> Stamp {
        Stamp(hlc: hlc(stored: row["hlc"]), replica: try replica(row["replica"]))
    }

    /// The stamp in columns `hlc` and `replica` of `row`, by position (the hot read path:
    /// no name lookup, and the replica id read in place).
    static func stamp(_ row: Row, hlc hlcIndex: Int, replica replicaIndex: Int) throws -> Stamp {
        let replica = try row.withUnsafeData(atIndex: replicaIndex) { data -> ReplicaID? in data.flatMap { ReplicaID(bytes: $0) } }
        guard let replica else { throw ConcordError(.corrupt, "a replica id is not 16 bytes") }
        return Stamp(hlc: hlc(stored: row[hlcIndex]), replica: replica)
    }

    /// An hlc as stored: stamps are unsigned 64-bit numbers and SQLite's integers signed, so
    /// every hlc column (and `concord_fields.dirty`) holds the stamp with its top bit flipped.
    /// SQLite's comparisons, `max` and `ORDER BY` then follow the stamps' unsigned order over
    /// the whole range, 2^63 and above included; 0 is stored as `Int64.min` (``cleanSQL``).
    static func hlc(_ value: UInt64) -> Int64 { Int64(bitPattern: value ^ signBit) }

    /// The hlc a column holds (the inverse of ``hlc(_:)``).
    static func hlc(stored: Int64) -> UInt64 { UInt64(bitPattern: stored) ^ signBit }

    /// The stored form of hlc 0 (`Int64.min`) as an SQL literal: a field with no unsealed
    /// local write, or "nothing observed".
    static let cleanSQL = "-9223372036854775808"

    private static let signBit: UInt64 = 1 << 63

    /// A local time in milliseconds as stored (`superseded_at`): plain, never near 2^63.
    static func millis(_ value: UInt64) -> Int64 { Int64(bitPattern: value) }
}

/// The columns of one row, read by position.
protocol StoredColumns {
    func int64(_ column: Int32) -> Int64
    func double(_ column: Int32) -> Double
    func isNull(_ column: Int32) -> Bool
    /// Text as UTF-8.
    func text(_ column: Int32) -> String
    /// The bytes of a blob; nil when the column holds something else.
    func blob(_ column: Int32) -> [UInt8]?
}

/// A GRDB row's columns, read as SQLite's C API reads them: NULL as 0 or the empty string.
extension Row: StoredColumns {
    func int64(_ column: Int32) -> Int64 { (self[Int(column)] as Int64?) ?? 0 }
    func double(_ column: Int32) -> Double { (self[Int(column)] as Double?) ?? 0 }
    func isNull(_ column: Int32) -> Bool { hasNull(atIndex: Int(column)) }
    func text(_ column: Int32) -> String { (self[Int(column)] as String?) ?? "" }
    func blob(_ column: Int32) -> [UInt8]? {
        if case let .blob(data) = (self[Int(column)] as DatabaseValue).storage { return [UInt8](data) }
        return nil
    }
}
