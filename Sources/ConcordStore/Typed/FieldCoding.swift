import ConcordCore
import Foundation

/// Encodes a `Codable` value's top-level properties as field writes.
enum FieldEncoder {
    static func encode<T: Encodable>(_ value: T) throws(ConcordError) -> [String: FieldWrite] {
        let encoder = TopEncoder()
        do {
            try value.encode(to: encoder)
        } catch let error as ConcordError {
            throw error
        } catch {
            throw ConcordError(.invalidOperation, "\(T.self) cannot be stored as a record: \(error)", cause: error)
        }
        return encoder.fields
    }

    /// Whether writing `write` would leave `current` as it is.
    static func matches(_ write: FieldWrite, _ current: FieldValue?) -> Bool {
        switch (write, current) {
        case let (.scalar(a), .scalar(b)?): a == b
        case let (.file(a), .file(b)?): a == b
        case let (.set(a), .set(b)?): Set(a) == Set(b)
        default: false
        }
    }

    /// The field write for one property value.
    static func field<V: Encodable>(_ value: V) throws -> FieldWrite {
        switch value {
        case let file as FileRef: return .file(file)
        case let data as Data: return .scalar(.bytes([UInt8](data)))
        default: break
        }
        let probe = ValueEncoder()
        try value.encode(to: probe)
        switch probe.result {
        case let .scalar(scalar)?: return .scalar(scalar)
        case let .elements(elements)?: return .set(elements)
        case nil:
            let json = try JSONEncoder.sorted.encode(value)
            return .scalar(.string(String(decoding: json, as: UTF8.self)))
        }
    }
}

extension JSONEncoder {
    static var sorted: JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return encoder
    }
}

/// The top-level encoder: one keyed container whose keys are field names.
final class TopEncoder: Encoder {
    var fields: [String: FieldWrite] = [:]
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(FieldsContainer<Key>(encoder: self))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer { Unsupported<AnyKey>(codingPath: codingPath) }
    func singleValueContainer() -> any SingleValueEncodingContainer { Unsupported<AnyKey>(codingPath: codingPath) }

    struct FieldsContainer<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: TopEncoder
        var codingPath: [any CodingKey] { [] }

        mutating func encodeNil(forKey key: Key) throws { encoder.fields[key.stringValue] = .scalar(.null) }
        mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
            encoder.fields[key.stringValue] = try FieldEncoder.field(value)
        }
        // A nil optional is written as null, so clearing a property reaches other devices.
        // Synthesized conformances call the overload of the property's type, so every
        // overload is implemented (their defaults would skip nil).
        mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Int8?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Int16?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Int32?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: UInt?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: UInt8?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: UInt16?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: UInt32?, forKey key: Key) throws { try present(value, key) }
        mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws { try present(value, key) }

        private mutating func present<T: Encodable>(_ value: T?, _ key: Key) throws {
            if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
            KeyedEncodingContainer(Unsupported<NestedKey>(codingPath: [key]))
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { Unsupported<AnyKey>(codingPath: [key]) }
        mutating func superEncoder() -> any Encoder { encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder }
    }
}

/// Encodes one property value: a scalar, a collection of scalars, or (result nil) something
/// else, which the caller stores as JSON.
final class ValueEncoder: Encoder {
    enum Result {
        case scalar(ScalarValue)
        case elements([ScalarValue])
    }

    var result: Result?
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        result = nil
        return KeyedEncodingContainer(Unsupported<Key>(codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        result = .elements([])
        return Elements(encoder: self)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer { Single(encoder: self) }

    struct Single: SingleValueEncodingContainer {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }
        mutating func encodeNil() throws { encoder.result = .scalar(.null) }
        mutating func encode(_ value: Bool) throws { encoder.result = .scalar(.bool(value)) }
        mutating func encode(_ value: String) throws { encoder.result = .scalar(.string(value)) }
        mutating func encode(_ value: Double) throws { encoder.result = .scalar(.double(value)) }
        mutating func encode(_ value: Float) throws { encoder.result = .scalar(.double(Double(value))) }
        mutating func encode(_ value: Int) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: Int8) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: Int16) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: Int32) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: Int64) throws { encoder.result = .scalar(.int(value)) }
        mutating func encode(_ value: UInt) throws { encoder.result = .scalar(.int(try Self.exact(value))) }
        mutating func encode(_ value: UInt8) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: UInt16) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: UInt32) throws { encoder.result = .scalar(.int(Int64(value))) }
        mutating func encode(_ value: UInt64) throws { encoder.result = .scalar(.int(try Self.exact(value))) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            let inner = ValueEncoder()
            try value.encode(to: inner)
            encoder.result = inner.result
        }

        static func exact(_ value: some BinaryInteger) throws -> Int64 {
            guard let exact = Int64(exactly: value) else {
                throw ConcordError(.invalidOperation, "\(value) does not fit a 64-bit signed integer field")
            }
            return exact
        }
    }

    struct Elements: UnkeyedEncodingContainer {
        let encoder: ValueEncoder
        var codingPath: [any CodingKey] { [] }
        var count = 0

        mutating func append(_ scalar: ScalarValue?) {
            count += 1
            if case var .elements(list)? = encoder.result, let scalar {
                list.append(scalar)
                encoder.result = .elements(list)
            } else {
                encoder.result = nil  // not a collection of scalars: the caller stores JSON
            }
        }

        mutating func encodeNil() throws { append(.null) }
        mutating func encode<T: Encodable>(_ value: T) throws {
            let inner = ValueEncoder()
            try value.encode(to: inner)
            if case let .scalar(scalar)? = inner.result { append(scalar) } else { append(nil) }
        }
        mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
            append(nil)
            return KeyedEncodingContainer(Unsupported<NestedKey>(codingPath: codingPath))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            append(nil)
            return Unsupported<AnyKey>(codingPath: codingPath)
        }
        mutating func superEncoder() -> any Encoder { encoder }
    }
}

/// Swallows what a field cannot hold directly; the caller then stores the value as JSON.
struct Unsupported<Key: CodingKey>: KeyedEncodingContainerProtocol, UnkeyedEncodingContainer, SingleValueEncodingContainer {
    var codingPath: [any CodingKey]
    var count: Int { 0 }
    init(codingPath: [any CodingKey]) { self.codingPath = codingPath }
    mutating func encodeNil(forKey key: Key) throws {}
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(Unsupported<NestedKey>(codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer { self }
    mutating func superEncoder() -> any Encoder { ValueEncoder() }
    mutating func superEncoder(forKey key: Key) -> any Encoder { ValueEncoder() }
    mutating func encodeNil() throws {}
    mutating func encode<T: Encodable>(_ value: T) throws {}
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<NestedKey> {
        KeyedEncodingContainer(Unsupported<NestedKey>(codingPath: codingPath))
    }
    mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer { self }
}

struct AnyKey: CodingKey {
    var stringValue: String
    var intValue: Int?
    init(stringValue: String) { self.stringValue = stringValue }
    init(intValue: Int) {
        self.stringValue = String(intValue)
        self.intValue = intValue
    }
}
