import ConcordCore
import Foundation

/// What an app declares about one collection: its fields, their types, which are indexed
/// and which are searched as text (docs/ARCHITECTURE.md §3, declared collections).
///
/// ```swift
/// let games = try CollectionDeclaration("games", fields: [
///     .init("title", .string, indexed: true, searchable: true),
///     .init("level", .int, indexed: true),
///     .init("tags", .set(.string)),
///     .init("cover", .file),
/// ])
/// try store.declare(games)
/// ```
///
/// A declared collection gets a table of its own, one typed column per field, which the
/// store keeps equal to the merged state in the same transaction as every change
/// (``Store/declare(_:)-(CollectionDeclaration)``). A declaration is this replica's alone: it changes how this
/// replica reads and indexes the records, never what it syncs.
public struct CollectionDeclaration: Hashable, Sendable {
    /// The type of a set's elements, or of a scalar field.
    public enum ScalarType: String, Hashable, Sendable, CaseIterable {
        case string, int, double, bool, bytes
        /// A point in time: a double of seconds since 2001-01-01 (how `Date` encodes in a
        /// ``StoredRecord``), an integer of such seconds, or an ISO 8601 string.
        case date
    }

    /// A field's declared type.
    public enum FieldType: Hashable, Sendable, CustomStringConvertible {
        case scalar(ScalarType)
        /// A file field: its hash, size and media type get columns of their own.
        case file
        /// A set field: the declared column holds its number of elements, and the
        /// collection's elements table one row per element of type `ScalarType`.
        case set(ScalarType)

        public static let string = FieldType.scalar(.string)
        public static let int = FieldType.scalar(.int)
        public static let double = FieldType.scalar(.double)
        public static let bool = FieldType.scalar(.bool)
        public static let bytes = FieldType.scalar(.bytes)
        public static let date = FieldType.scalar(.date)

        /// The type's name in a schema file: `string`, `int`, …, `file`, `set<string>`.
        public var description: String {
            switch self {
            case let .scalar(type): type.rawValue
            case .file: "file"
            case let .set(type): "set<\(type.rawValue)>"
            }
        }

        /// The type named `name` as in a schema file, or nil.
        public init?(name: String) {
            if name == "file" { self = .file; return }
            if name.hasPrefix("set<"), name.hasSuffix(">") {
                guard let element = ScalarType(rawValue: String(name.dropFirst(4).dropLast())) else { return nil }
                self = .set(element)
                return
            }
            guard let scalar = ScalarType(rawValue: name) else { return nil }
            self = .scalar(scalar)
        }
    }

    /// How a string field's column compares and orders: SQLite's built-in collations.
    public enum Collation: String, Hashable, Sendable, CaseIterable {
        /// By UTF-8 bytes (the default).
        case binary
        /// ASCII letters without case.
        case nocase
        /// By UTF-8 bytes, trailing spaces ignored.
        case rtrim
    }

    /// One declared field.
    public struct Field: Hashable, Sendable {
        public var name: String
        public var type: FieldType
        /// Whether its column gets an index.
        public var indexed: Bool
        /// Whether it is searched as text (`match`): string fields only.
        public var searchable: Bool
        /// How its column compares (string and `set<string>` fields only); nil: by bytes.
        public var collation: Collation?

        public init(_ name: String, _ type: FieldType, indexed: Bool = false, searchable: Bool = false, collation: Collation? = nil) {
            self.name = name
            self.type = type
            self.indexed = indexed
            self.searchable = searchable
            self.collation = collation
        }
    }

    /// The collection declared.
    public let collection: String
    /// The fields, sorted by their names' UTF-8 bytes.
    public let fields: [Field]
    /// The schema version this declaration is, and what changed since earlier versions:
    /// renamed, defaulted, converted and retired fields (``Evolution``).
    public internal(set) var evolution = Evolution()

    /// A declaration of `collection` with `fields`.
    ///
    /// - Throws: `invalidDeclaration` for two fields of one name, a search on a field that
    ///   is not a string, or a collation on a field that holds no strings.
    public init(_ collection: String, fields: [Field]) throws(ConcordError) {
        let sorted = fields.sorted { Bytewise.less($0.name, $1.name) }
        for (a, b) in zip(sorted, sorted.dropFirst()) where Bytewise.equal(a.name, b.name) {
            throw ConcordError(.invalidDeclaration, "collection \"\(collection)\" declares field \"\(a.name)\" twice")
        }
        for field in sorted {
            if field.searchable && field.type != .string {
                throw ConcordError(.invalidDeclaration, "field \"\(field.name)\" of \"\(collection)\" is \(field.type): only string fields can be searched")
            }
            if field.collation != nil && field.type != .string && field.type != .set(.string) {
                throw ConcordError(.invalidDeclaration, "field \"\(field.name)\" of \"\(collection)\" is \(field.type): only strings have a collation")
            }
        }
        self.collection = collection
        self.fields = sorted
    }

    /// The field named `name` (by its UTF-8 bytes), if declared.
    public func field(_ name: String) -> Field? {
        fields.first { Bytewise.equal($0.name, name) }
    }
}
