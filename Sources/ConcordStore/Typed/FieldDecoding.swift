import ConcordCore
import Foundation

/// Decodes a `Codable` value from a record's fields (the inverse of ``FieldEncoder``).
enum FieldDecoder {
    static func decode<T: Decodable>(_ type: T.Type, from fields: [(name: String, value: FieldValue)]) throws(ConcordError) -> T {
        do {
            return try T(from: TopDecoder(fields: FieldTable(fields)))
        } catch let error as ConcordError {
            throw error
        } catch {
            throw ConcordError(.invalidOperation, "the record cannot be read as \(T.self): \(error)", cause: error)
        }
    }

    /// Decodes one property from its field value (nil: the field is not set).
    static func value<T: Decodable>(_ type: T.Type, from field: FieldValue?, codingPath: [any CodingKey]) throws -> T {
        // The common properties first, each from a value of its own type: what the
        // decoding below would return, without a decoder made for each (a typed query reads
        // thousands of records).
        switch field {
        case let .scalar(.string(text))? where T.self == String.self: return text as! T
        case let .scalar(.int(number))? where T.self == Int.self: if let exact = Int(exactly: number) { return exact as! T }
        case let .scalar(.int(number))? where T.self == Int64.self: return number as! T
        case let .scalar(.double(number))? where T.self == Double.self: return number as! T
        case let .scalar(.bool(flag))? where T.self == Bool.self: return flag as! T
        default: break
        }
        if T.self == FileRef.self {
            guard case let .file(file)? = field else { throw mismatch(T.self, field, codingPath) }
            return file as! T
        }
        if T.self == Data.self {
            guard case let .scalar(.bytes(bytes))? = field else { throw mismatch(T.self, field, codingPath) }
            return Data(bytes) as! T
        }
        do {
            return try T(from: ValueDecoder(value: field ?? .set([]), codingPath: codingPath))
        } catch is NeedsJSON {
            // Stored as JSON (a nested value).
            guard case let .scalar(.string(json))? = field else { throw mismatch(T.self, field, codingPath) }
            return try JSONDecoder().decode(T.self, from: Data(json.utf8))
        }
    }

    static func mismatch(_ type: Any.Type, _ field: FieldValue?, _ path: [any CodingKey]) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: path, debugDescription: "field holds \(field.map { "\($0)" } ?? "nothing")"))
    }
}

/// Signals a value stored as JSON.
struct NeedsJSON: Error {}

/// A record's fields by name, as a dictionary of `String` keys finds them (the last of
/// names Swift holds equal): a scan of the list for a record of a few fields (a typed query
/// decodes thousands), a dictionary for more.
struct FieldTable {
    private let list: [(name: String, value: FieldValue)]
    private let map: [String: FieldValue]?
    /// The record's id, read as a field named `id` after the others (so it wins over a
    /// field of that name), kept apart so that no list is made for each record.
    private let id: FieldValue?

    /// The fields of `list`, then `id` (if given) as the field `id`.
    init(_ list: [(name: String, value: FieldValue)], id: String? = nil) {
        self.list = list
        self.id = id.map { .scalar(.string($0)) }
        map = list.count > 16 ? Dictionary(list.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last }) : nil
    }

    /// The fields of a dictionary.
    init(_ map: [String: FieldValue]) {
        list = []
        self.map = map
        id = nil
    }

    subscript(name: String) -> FieldValue? {
        if let id, name == "id" { return id }
        if let map { return map[name] }
        return list.last { $0.name == name }?.value
    }

    var keys: [String] {
        let keys = map.map { Array($0.keys) } ?? list.map(\.name)
        return id == nil ? keys : keys + ["id"]
    }
}

struct TopDecoder: Decoder {
    let fields: FieldTable
    /// Set for a load that reads what it can and reports the rest (``UnreadLog``).
    var log: UnreadLog? = nil
    var codingPath: [any CodingKey] { [] }
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        KeyedDecodingContainer(Fields<Key>(fields: fields, log: log))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
    func singleValueContainer() throws -> any SingleValueDecodingContainer { throw NeedsJSON() }

    struct Fields<Key: CodingKey>: KeyedDecodingContainerProtocol {
        let fields: FieldTable
        let log: UnreadLog?
        var codingPath: [any CodingKey] { [] }
        var allKeys: [Key] { fields.keys.compactMap { Key(stringValue: $0) } }

        func contains(_ key: Key) -> Bool { fields[key.stringValue] != nil }

        func decodeNil(forKey key: Key) throws -> Bool {
            switch fields[key.stringValue] {
            case nil, .scalar(.null)?: true
            default: false
            }
        }

        func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
            if let log { return try log.decode(T.self, key.stringValue, fields[key.stringValue], codingPath: [key]) }
            return try FieldDecoder.value(T.self, from: fields[key.stringValue], codingPath: [key])
        }

        func decodeIfPresent<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T? {
            if let log { return try log.decodeIfPresent(T.self, key.stringValue, fields[key.stringValue], codingPath: [key]) }
            return try decodeNil(forKey: key) ? nil : decode(T.self, forKey: key)
        }

        // The common properties, each from a value of its own type, without the generic
        // decoding above (which answers the same, through a cast): a typed query decodes
        // thousands of records. Anything else (another type, a value the log must note)
        // takes the generic way.

        func decode(_ type: String.Type, forKey key: Key) throws -> String {
            if case let .field(.scalar(.string(text))) = plain(key) { return text }
            return try decode(type, generic: key)
        }

        func decode(_ type: Int.Type, forKey key: Key) throws -> Int {
            if case let .field(.scalar(.int(number))) = plain(key), let exact = Int(exactly: number) { return exact }
            return try decode(type, generic: key)
        }

        func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 {
            if case let .field(.scalar(.int(number))) = plain(key) { return number }
            return try decode(type, generic: key)
        }

        func decode(_ type: Double.Type, forKey key: Key) throws -> Double {
            if case let .field(.scalar(.double(number))) = plain(key) { return number }
            return try decode(type, generic: key)
        }

        func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool {
            if case let .field(.scalar(.bool(flag))) = plain(key) { return flag }
            return try decode(type, generic: key)
        }

        func decodeIfPresent(_ type: String.Type, forKey key: Key) throws -> String? {
            switch plain(key) {
            case let .field(.scalar(.string(text))): text
            case .absent, .field(.scalar(.null)): nil
            default: try decodeIfPresent(type, generic: key)
            }
        }

        func decodeIfPresent(_ type: Int.Type, forKey key: Key) throws -> Int? {
            switch plain(key) {
            case let .field(.scalar(.int(number))) where Int(exactly: number) != nil: Int(number)
            case .absent, .field(.scalar(.null)): nil
            default: try decodeIfPresent(type, generic: key)
            }
        }

        func decodeIfPresent(_ type: Double.Type, forKey key: Key) throws -> Double? {
            switch plain(key) {
            case let .field(.scalar(.double(number))): number
            case .absent, .field(.scalar(.null)): nil
            default: try decodeIfPresent(type, generic: key)
            }
        }

        func decodeIfPresent(_ type: Bool.Type, forKey key: Key) throws -> Bool? {
            switch plain(key) {
            case let .field(.scalar(.bool(flag))): flag
            case .absent, .field(.scalar(.null)): nil
            default: try decodeIfPresent(type, generic: key)
            }
        }

        /// A field as the decodings above see it.
        private enum Plain {
            /// The log holds a value of it that failed to convert: the generic way notes it.
            case unconvertible
            case absent
            case field(FieldValue)
        }

        private func plain(_ key: Key) -> Plain {
            let name = key.stringValue
            if let log, log.holdsUnconvertible(name) { return .unconvertible }
            guard let field = fields[name] else { return .absent }
            return .field(field)
        }

        private func decode<T: Decodable>(_ type: T.Type, generic key: Key) throws -> T {
            try decode(T.self, forKey: key) as T
        }

        private func decodeIfPresent<T: Decodable>(_ type: T.Type, generic key: Key) throws -> T? {
            try decodeIfPresent(T.self, forKey: key) as T?
        }

        func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
            throw NeedsJSON()
        }
        func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
        func superDecoder() throws -> any Decoder { TopDecoder(fields: fields, log: log) }
        func superDecoder(forKey key: Key) throws -> any Decoder { TopDecoder(fields: fields, log: log) }
    }
}

/// Decodes one field value: a scalar through a single-value container, a set's elements
/// through an unkeyed one; anything keyed was stored as JSON.
struct ValueDecoder: Decoder {
    let value: FieldValue
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> { throw NeedsJSON() }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case let .set(elements) = value else { throw NeedsJSON() }
        return Elements(elements: elements, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        guard case let .scalar(scalar) = value else {
            throw DecodingError.typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "field holds \(value)"))
        }
        return Single(scalar: scalar, codingPath: codingPath)
    }

    struct Single: SingleValueDecodingContainer {
        let scalar: ScalarValue
        let codingPath: [any CodingKey]

        func decodeNil() -> Bool { scalar == .null }

        func decode<T: Decodable>(_ type: T.Type) throws -> T {
            switch (scalar, T.self) {
            case let (.bool(value), is Bool.Type): return value as! T
            case let (.string(value), is String.Type): return value as! T
            case let (.double(value), is Double.Type): return value as! T
            case let (.double(value), is Float.Type): return Float(value) as! T
            case let (.int(value), is Double.Type): return Double(value) as! T
            case let (.int(value), _):
                if let integer = T.self as? any FixedWidthInteger.Type, let exact = integer.init(exactly: value) {
                    return exact as! T
                }
            default:
                break
            }
            if T.self is any FixedWidthInteger.Type || T.self == Bool.self || T.self == String.self || T.self == Double.self || T.self == Float.self {
                throw DecodingError.typeMismatch(T.self, .init(codingPath: codingPath, debugDescription: "field holds \(scalar)"))
            }
            return try T(from: ValueDecoder(value: .scalar(scalar), codingPath: codingPath))
        }
    }

    struct Elements: UnkeyedDecodingContainer {
        let elements: [ScalarValue]
        let codingPath: [any CodingKey]
        var currentIndex = 0
        var count: Int? { elements.count }
        var isAtEnd: Bool { currentIndex >= elements.count }

        mutating func decodeNil() throws -> Bool {
            guard !isAtEnd, elements[currentIndex] == .null else { return false }
            currentIndex += 1
            return true
        }

        mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
            guard !isAtEnd else {
                throw DecodingError.valueNotFound(T.self, .init(codingPath: codingPath, debugDescription: "no more elements"))
            }
            let element = elements[currentIndex]
            currentIndex += 1
            return try Single(scalar: element, codingPath: codingPath).decode(T.self)
        }

        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> { throw NeedsJSON() }
        mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer { throw NeedsJSON() }
        mutating func superDecoder() throws -> any Decoder { ValueDecoder(value: .set(elements), codingPath: codingPath) }
    }
}
