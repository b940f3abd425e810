import ConcordCore
import Foundation

/// A field a typed load could not read into its property: the record loads anyway, the
/// property holds nil (an optional) or a placeholder (`""`, `0`, `false`, empty), and the
/// value stays in the store as written — a save does not overwrite it unless the app
/// changed the property — so an upgraded app reads it again (README, "Evolving your model").
public struct UnreadField: Hashable, Sendable {
    /// Why a field was not read.
    public struct Reason: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The record lacks the field and the declaration gives it no default.
        public static let missing = Reason("missing")
        /// The value is not of the property's type: written by another version of the app,
        /// or by a tool.
        public static let unexpectedType = Reason("unexpectedType")
        /// The value is of the type the declaration converts from, and does not convert (a
        /// string that is not a date in the declared format). Not replaced by the default.
        public static let conversionFailed = Reason("conversionFailed")
    }

    /// The property's name (the field's name in this version).
    public let field: String
    /// The name the field is stored under (its first name, when renamed).
    public let storedName: String
    /// The value as stored, untouched; nil when the record lacks the field. For a set of
    /// which some elements were read, the elements that were not.
    public let value: FieldValue?
    public let reason: Reason
    /// What happened, in a sentence.
    public let message: String
}

/// A typed load that read what it could (``Store/loadReporting(_:id:)``): the value, and
/// the fields it could not read, each kept as written.
public struct Loaded<T> {
    public let value: T
    /// The fields not read into `value`, by name.
    public let unread: [UnreadField]
    /// Whether every field was read.
    public var isComplete: Bool { unread.isEmpty }
}

extension Loaded: Sendable where T: Sendable {}
extension Loaded: Equatable where T: Equatable {}

/// The fields a lenient decode (``TopDecoder/log``) could not read, and the set elements it
/// left out (put back by a save, ``TypedEvolution/changes(_:id:encoded:current:declaration:)``).
final class UnreadLog {
    private(set) var unread: [UnreadField] = []
    /// Per property, the elements of its set that were not of its element type.
    private(set) var keptElements: [String: [ScalarValue]] = [:]
    /// Per property, a value whose conversion failed.
    let unconvertible: [String: FieldValue]
    let storedName: (String) -> String

    init(unconvertible: [String: FieldValue], storedName: @escaping (String) -> String) {
        self.unconvertible = unconvertible
        self.storedName = storedName
    }

    /// Whether the value of `name` failed to convert (a read of it is then noted).
    func holdsUnconvertible(_ name: String) -> Bool {
        !unconvertible.isEmpty && unconvertible[name] != nil
    }

    func decode<T: Decodable>(_ type: T.Type, _ name: String, _ value: FieldValue?, codingPath: [any CodingKey]) throws -> T {
        if let raw = unconvertible[name] {
            note(name, raw, .conversionFailed, "\(raw) does not convert to the declared type")
            return try placeholder(T.self, codingPath)
        }
        if let read = try read(T.self, name, value, codingPath) { return read }
        return try placeholder(T.self, codingPath)
    }

    func decodeIfPresent<T: Decodable>(_ type: T.Type, _ name: String, _ value: FieldValue?, codingPath: [any CodingKey]) throws -> T? {
        if let raw = unconvertible[name] {
            note(name, raw, .conversionFailed, "\(raw) does not convert to the declared type")
            return nil
        }
        switch value {
        case nil, .scalar(.null)?: return nil
        default: return try read(T.self, name, value, codingPath)
        }
    }

    /// `value` as a `T`; for a set, the elements that decode (the others noted); nil, noted,
    /// when it cannot be read.
    private func read<T: Decodable>(_ type: T.Type, _ name: String, _ value: FieldValue?, _ path: [any CodingKey]) throws -> T? {
        do {
            return try FieldDecoder.value(T.self, from: value, codingPath: path)
        } catch {
            if case let .set(elements)? = value {
                let fitting = elements.filter { (try? FieldDecoder.value(T.self, from: .set([$0]), codingPath: path)) != nil }
                let others = elements.filter { !fitting.contains($0) }
                if !fitting.isEmpty || !others.isEmpty, let read = try? FieldDecoder.value(T.self, from: .set(fitting), codingPath: path) {
                    keptElements[name] = others
                    note(name, .set(others), .unexpectedType, "\(others.count) element\(others.count == 1 ? " is" : "s are") not of the set's element type")
                    return read
                }
            }
            if value == nil {
                note(name, nil, .missing, "the record lacks it and it has no default")
            } else {
                note(name, value, .unexpectedType, "\(value!) is not a \(T.self)")
            }
            return nil
        }
    }

    private func note(_ name: String, _ value: FieldValue?, _ reason: UnreadField.Reason, _ message: String) {
        unread.append(UnreadField(field: name, storedName: storedName(name), value: value, reason: reason, message: "field \"\(name)\": \(message)"))
    }

    /// What a property that was not read holds: empty for a collection, else the probe's
    /// placeholder (`""`, `0`, `false`, …).
    private func placeholder<T: Decodable>(_ type: T.Type, _ path: [any CodingKey]) throws -> T {
        if let empty = try? FieldDecoder.value(T.self, from: .set([]), codingPath: path) { return empty }
        return try ProbeDecoder.placeholder(T.self, ProbeDecoder.Found(), probe: ShapeProbe())
    }
}
