import ConcordCore
import Foundation

/// A ``StoredRecord`` whose collection is declared from its `Codable` shape: each
/// property's type becomes the field's declared type, and these lists say which fields get
/// an index or a full-text search (`store.declare(Game.self)`).
///
/// ```swift
/// struct Game: DeclaredRecord {
///     static let collection = "games"
///     static let indexed = ["title", "level"]
///     static let searchable = ["title"]
///     var id: String
///     var title: String
///     var level: Int
///     var tags: Set<String>
///     var cover: FileRef?
/// }
/// try store.declare(Game.self)
/// ```
public protocol DeclaredRecord: StoredRecord {
    /// The fields whose columns get an index.
    static var indexed: [String] { get }
    /// The string fields searched as text.
    static var searchable: [String] { get }
}

extension DeclaredRecord {
    public static var indexed: [String] { [] }
    public static var searchable: [String] { [] }
}

extension CollectionDeclaration {
    /// The declaration of `T`'s collection from its `Codable` shape: `String` is a string,
    /// integers are ints, `Double` and `Float` doubles, `Bool` a bool, `Data` bytes, `Date` a
    /// date, ``/ConcordCore/FileRef`` a file, a `Set` or `Array` of those scalars a set, any
    /// other nested value a string (it is stored as JSON). Optionals are their wrapped type;
    /// `id` is the record's id, not a field.
    ///
    /// - Throws: `invalidDeclaration` when a property's type cannot be read this way (a
    ///   type whose decoding rejects the placeholder values it is probed with: declare it
    ///   with ``init(_:fields:)`` instead), or a listed field is not a property.
    public init<T: StoredRecord>(_ type: T.Type, indexed: [String] = [], searchable: [String] = []) throws(ConcordError) {
        let probe = ShapeProbe()
        do {
            _ = try T(from: ProbeDecoder(probe: probe, top: true))
        } catch {
            throw ConcordError(.invalidDeclaration, "the shape of \(T.self) cannot be read from its Codable conformance (\(error)); declare its fields with CollectionDeclaration(_:fields:)")
        }
        var fields: [Field] = []
        for (name, type) in probe.fields where name != "id" {
            fields.append(Field(name, type, indexed: indexed.contains(name), searchable: searchable.contains(name)))
        }
        for name in indexed + searchable where !fields.contains(where: { $0.name == name }) {
            throw ConcordError(.invalidDeclaration, "\(T.self) has no stored property \"\(name)\" to index or search")
        }
        try self.init(T.collection, fields: fields)
    }
}

extension Store {
    /// Declares `T`'s collection from its `Codable` shape and its indexes
    /// (``CollectionDeclaration/init(_:indexed:searchable:)``).
    public func declare<T: DeclaredRecord>(_ type: T.Type) throws(ConcordError) {
        try declare(CollectionDeclaration(T.self, indexed: T.indexed, searchable: T.searchable))
    }
}

/// What a probe found: each top-level property's type, in decoding order.
final class ShapeProbe {
    var fields: [(String, CollectionDeclaration.FieldType)] = []
}

/// A decoder that answers every request with a placeholder and notes what was asked: at the
/// top, each key's type; below, the one scalar, set or nested value a property is.
struct ProbeDecoder: Decoder {
    final class Found { var type: CollectionDeclaration.FieldType? }
    let probe: ShapeProbe
    let top: Bool
    var found = Found()
    var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] = [:]

    init(probe: ShapeProbe, top: Bool) {
        self.probe = probe
        self.top = top
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        if !top { found.type = found.type ?? .string }  // a nested value: stored as JSON text
        return KeyedDecodingContainer(ProbeKeyed<Key>(probe: probe, top: top))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        ProbeUnkeyed(found: found)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer {
        ProbeSingle(found: found)
    }

    /// A placeholder of `type`, noting its declared type in `found`.
    static func placeholder<T: Decodable>(_ type: T.Type, _ found: Found, probe: ShapeProbe) throws -> T {
        func note(_ scalar: CollectionDeclaration.ScalarType) { found.type = found.type ?? .scalar(scalar) }
        switch type {
        case is String.Type: note(.string); return "" as! T
        case is Bool.Type: note(.bool); return false as! T
        case is Double.Type: note(.double); return 0.0 as! T
        case is Float.Type: note(.double); return Float(0) as! T
        case is Int.Type: note(.int); return 0 as! T
        case is Int8.Type: note(.int); return Int8(0) as! T
        case is Int16.Type: note(.int); return Int16(0) as! T
        case is Int32.Type: note(.int); return Int32(0) as! T
        case is Int64.Type: note(.int); return Int64(0) as! T
        case is UInt.Type: note(.int); return UInt(0) as! T
        case is UInt8.Type: note(.int); return UInt8(0) as! T
        case is UInt16.Type: note(.int); return UInt16(0) as! T
        case is UInt32.Type: note(.int); return UInt32(0) as! T
        case is UInt64.Type: note(.int); return UInt64(0) as! T
        case is Data.Type: note(.bytes); return Data() as! T
        case is Date.Type: note(.date); return Date(timeIntervalSinceReferenceDate: 0) as! T
        case is FileRef.Type:
            found.type = found.type ?? .file
            return FileRef(hash: ContentHash(bytes: [UInt8](repeating: 0, count: 32))!, size: 0) as! T
        default:
            let decoder = ProbeDecoder(probe: probe, top: false)
            let value = try T(from: decoder)
            found.type = found.type ?? decoder.found.type
            return value
        }
    }
}

private struct ProbeKeyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let probe: ShapeProbe
    let top: Bool
    var codingPath: [any CodingKey] = []
    var allKeys: [Key] { [] }

    func contains(_ key: Key) -> Bool { true }
    func decodeNil(forKey key: Key) throws -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let found = ProbeDecoder.Found()
        let value = try ProbeDecoder.placeholder(type, found, probe: probe)
        if top, let declared = found.type, !probe.fields.contains(where: { $0.0 == key.stringValue }) {
            probe.fields.append((key.stringValue, declared))
        }
        return value
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        if top { probe.fields.append((key.stringValue, .string)) }
        return KeyedDecodingContainer(ProbeKeyed<NestedKey>(probe: probe, top: false))
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        throw DecodingError.typeMismatch(Any.self, .init(codingPath: codingPath, debugDescription: "a nested array is not a field type"))
    }

    func superDecoder() throws -> any Decoder { ProbeDecoder(probe: probe, top: false) }
    func superDecoder(forKey key: Key) throws -> any Decoder { ProbeDecoder(probe: probe, top: false) }
}

/// A set's elements: one placeholder, whose type is the set's element type.
private struct ProbeUnkeyed: UnkeyedDecodingContainer {
    let found: ProbeDecoder.Found
    var codingPath: [any CodingKey] = []
    var count: Int? { 1 }
    var currentIndex = 0
    var isAtEnd: Bool { currentIndex >= 1 }

    init(found: ProbeDecoder.Found) { self.found = found }

    mutating func decodeNil() throws -> Bool { false }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        currentIndex += 1
        let element = ProbeDecoder.Found()
        let value = try ProbeDecoder.placeholder(type, element, probe: ShapeProbe())
        if case let .scalar(scalar)? = element.type { found.type = found.type ?? .set(scalar) } else { found.type = found.type ?? .string }
        return value
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        currentIndex += 1
        found.type = found.type ?? .string
        return KeyedDecodingContainer(ProbeKeyed<NestedKey>(probe: ShapeProbe(), top: false))
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        currentIndex += 1
        found.type = found.type ?? .string
        return ProbeUnkeyed(found: ProbeDecoder.Found())
    }

    mutating func superDecoder() throws -> any Decoder { ProbeDecoder(probe: ShapeProbe(), top: false) }
}

private struct ProbeSingle: SingleValueDecodingContainer {
    let found: ProbeDecoder.Found
    var codingPath: [any CodingKey] = []

    func decodeNil() -> Bool { false }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ProbeDecoder.placeholder(type, found, probe: ShapeProbe())
    }
}
