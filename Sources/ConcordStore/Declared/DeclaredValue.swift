import ConcordCore
import Foundation
import GRDBSQLite
import Synchronization

/// A value in a declared column: what a field's value becomes under its declared type.
/// A value that does not fit the type is NULL in the column (and kept as written in the
/// record: ``Store/record(_:)`` reads it back unchanged).
enum DeclaredValue: Hashable, Sendable {
    case null
    case int(Int64)
    case double(Double)
    case text(String)
    case blob([UInt8])

    /// A scalar under `type`: strings as text, integers and booleans (0, 1) as integers,
    /// doubles (and integers a double holds exactly) as reals, NaN as NULL (SQLite keeps no
    /// NaN), bytes as blobs, dates as seconds since 2001-01-01.
    static func of(_ value: ScalarValue, as type: CollectionDeclaration.ScalarType) -> DeclaredValue {
        switch (type, value) {
        case let (.string, .string(text)): return .text(text)
        case let (.int, .int(number)): return .int(number)
        case let (.bool, .bool(flag)): return .int(flag ? 1 : 0)
        case let (.bytes, .bytes(bytes)): return .blob(bytes)
        case let (.double, .double(number)), let (.date, .double(number)):
            return number.isNaN ? .null : .double(number)
        case let (.double, .int(number)), let (.date, .int(number)):
            return Double(exactly: number).map(DeclaredValue.double) ?? .null
        case let (.date, .string(text)):
            return date(text).map { .double($0.timeIntervalSinceReferenceDate) } ?? .null
        default: return .null
        }
    }

    /// An ISO 8601 date, with or without fractional seconds.
    static func date(_ text: String) -> Date? {
        dateFormatters.withLock { formatters in
            formatters.plain.date(from: text) ?? formatters.fractional.date(from: text)
        }
    }

    /// Made once: a formatter costs far more to make than a date to parse.
    private static let dateFormatters = Mutex<(plain: ISO8601DateFormatter, fractional: ISO8601DateFormatter)>({
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (ISO8601DateFormatter(), fractional)
    }())

    /// The columns of `field` (``CollectionDeclaration/columns(of:)``) for its value, and the
    /// set's elements that fit its element type (distinct, in the set's order).
    static func columns(_ field: CollectionDeclaration.Field, _ value: FieldValue?) -> (columns: [DeclaredValue], elements: [DeclaredValue]) {
        switch (field.type, value) {
        case let (.scalar(type), .scalar(scalar)?):
            return ([of(scalar, as: type)], [])
        case let (.file, .file(file)?):
            return ([.blob(file.hash.bytes), .int(Int64(clamping: file.size)), file.mediaType.map(DeclaredValue.text) ?? .null], [])
        case (.file, _):
            return ([.null, .null, .null], [])
        case let (.set(type), .set(elements)?):
            var seen: Set<DeclaredValue> = []
            var fitting: [DeclaredValue] = []
            for element in elements {
                let converted = of(element, as: type)
                if converted != .null, seen.insert(converted).inserted { fitting.append(converted) }
            }
            return ([.int(Int64(elements.count))], fitting)
        default:
            return ([.null], [])
        }
    }
}

extension BoundStatement.Binder {
    /// Binds a declared value: text with its length, so a string holding NUL stays whole.
    func bind(_ value: DeclaredValue, at index: Int32) {
        switch value {
        case .null: sqlite3_bind_null(handle, index)
        case let .int(number): bind(number, at: index)
        case let .double(number): sqlite3_bind_double(handle, index, number)
        case let .text(text): bind(text, at: index)
        case let .blob(bytes): bind(bytes, at: index)
        }
    }
}
