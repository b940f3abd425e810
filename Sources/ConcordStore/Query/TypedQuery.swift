import ConcordCore
import Foundation

/// A Swift value a typed query compares a property with (``TypedQuery``).
public protocol QueryValue: Equatable {
    /// The value as a field holds it.
    var scalarValue: ScalarValue { get }
}

extension String: QueryValue { public var scalarValue: ScalarValue { .string(self) } }
extension Int: QueryValue { public var scalarValue: ScalarValue { .int(Int64(self)) } }
extension Int64: QueryValue { public var scalarValue: ScalarValue { .int(self) } }
extension Double: QueryValue { public var scalarValue: ScalarValue { .double(self) } }
extension Bool: QueryValue { public var scalarValue: ScalarValue { .bool(self) } }
extension Data: QueryValue { public var scalarValue: ScalarValue { .bytes(Array(self)) } }
extension Date: QueryValue { public var scalarValue: ScalarValue { .date(self) } }
extension Optional: QueryValue where Wrapped: QueryValue {
    public var scalarValue: ScalarValue { self?.scalarValue ?? .null }
}

/// A query of a ``StoredRecord`` type's collection whose fields are named by key paths, so
/// the compiler checks that the property exists and that a value has its type.
///
/// ```swift
/// let strong = try store.query(
///     TypedQuery(Game.self).filter(\.level, .greater, 3).order(by: \.title).limit(20))  // [Game]
/// ```
///
/// A key path names the field its property is stored in; one that names no stored field (a
/// computed property of a struct, a property of a nested value) makes the query fail with
/// `unknownField` when it runs. (Of a class, a computed property that shows one stored
/// property as it is names that property's field.) The query
/// underneath (``query``) takes every other filter as ``Query`` does.
public struct TypedQuery<Root: StoredRecord>: Sendable {
    public var query: Query

    public init(_ type: Root.Type) {
        query = Query(Root.collection)
    }

    /// The query with the property compared with `value`, and-ed to its filter.
    public func filter<Value: QueryValue>(_ keyPath: KeyPath<Root, Value>, _ comparison: Query.Comparison, _ value: Value) -> Self {
        filter(.field(Self.name(keyPath), comparison, value.scalarValue))
    }

    /// The query with the property equal to one of `values`, and-ed to its filter.
    public func filter<Value: QueryValue>(_ keyPath: KeyPath<Root, Value>, in values: [Value]) -> Self {
        filter(.isIn(Self.name(keyPath), values.map(\.scalarValue)))
    }

    /// The query with the property's field missing (or of another type), and-ed to its filter.
    public func filter<Value: Equatable>(isNull keyPath: KeyPath<Root, Value>) -> Self {
        filter(.isNull(Self.name(keyPath)))
    }

    /// The query with `filter` (fields named by strings, conflicts…) and-ed to its filter.
    public func filter(_ filter: Query.Filter) -> Self {
        var copy = self
        copy.query = query.filter(filter)
        return copy
    }

    /// The query ordered by the property after its current order.
    public func order<Value: Equatable>(by keyPath: KeyPath<Root, Value>, descending: Bool = false) -> Self {
        var copy = self
        copy.query = query.order(by: Self.name(keyPath), descending: descending)
        return copy
    }

    public func limit(_ count: Int, offset: Int? = nil) -> Self {
        var copy = self
        copy.query = query.limit(count, offset: offset)
        return copy
    }

    /// The records past the record `id` in the query's order (``Query/after(_:)``).
    public func after(_ id: String) -> Self {
        var copy = self
        copy.query = query.after(id)
        return copy
    }

    /// The field `keyPath`'s property is stored in: found by decoding `Root` from fields of
    /// its declaration (``CollectionDeclaration/init(_:indexed:searchable:)``) with one field
    /// changed at a time, and seeing which change the property shows. A key path it cannot
    /// find gives its own description, which no declaration has, so the query fails with
    /// `unknownField` naming it.
    static func name<Value: Equatable>(_ keyPath: KeyPath<Root, Value>) -> String {
        let unknown = "\(keyPath)"
        guard let declaration = try? CollectionDeclaration(Root.self) else { return unknown }
        // String fields start missing: a nested value is stored as JSON in one, and the
        // empty string is no JSON. A field a decoding error names (a property that is not
        // optional) then tries "", "{}" and "[]"; an error that names none (JSON that did
        // not decode) is the last field tried, which tries its next.
        var base: [(name: String, value: FieldValue?)] = declaration.fields.map { ($0.name, $0.type == .string ? nil : probe($0.type, 0)) }
        func fields(_ list: [(name: String, value: FieldValue?)]) -> [(name: String, value: FieldValue)] {
            list.compactMap { field in field.value.map { (name: field.name, value: $0) } } + [(name: "id", value: .scalar(.string("")))]
        }
        let candidates: [FieldValue] = [.scalar(.string("")), .scalar(.string("{}")), .scalar(.string("[]"))]
        var baseline: Root?
        var tried: [String: Int] = [:]
        var last: String?
        while baseline == nil {
            do {
                baseline = try FieldDecoder.decode(Root.self, from: fields(base))
            } catch {
                let named = ((error.cause as? DecodingError).map(codingPath) ?? []).first?.stringValue
                guard let name = named.flatMap({ name in base.contains { $0.name == name } ? name : nil }) ?? last,
                      let index = base.firstIndex(where: { $0.name == name }), tried[name, default: 0] < candidates.count else { return unknown }
                base[index].value = candidates[tried[name, default: 0]]
                tried[name, default: 0] += 1
                last = name
            }
        }
        guard let baseline else { return unknown }
        // A computed property of a struct (which may show a stored one's change) is no field.
        if Mirror(reflecting: baseline).displayStyle == .struct, MemoryLayout<Root>.offset(of: keyPath) == nil { return unknown }
        for (index, field) in declaration.fields.enumerated() {
            var changed = base
            changed[index].value = probe(field.type, 1)
            guard let variant = try? FieldDecoder.decode(Root.self, from: fields(changed)) else { continue }
            if variant[keyPath: keyPath] != baseline[keyPath: keyPath] { return field.name }
        }
        return unknown
    }


    /// A value of `type`, `0` or `1`: two that decode to different Swift values.
    private static func probe(_ type: CollectionDeclaration.FieldType, _ which: UInt8) -> FieldValue {
        func scalar(_ type: CollectionDeclaration.ScalarType) -> ScalarValue {
            switch type {
            case .string: .string(which == 0 ? "" : "1")
            case .int: .int(Int64(which))
            case .double, .date: .double(Double(which))
            case .bool: .bool(which == 1)
            case .bytes: .bytes(which == 0 ? [] : [1])
            }
        }
        switch type {
        case let .scalar(type): return .scalar(scalar(type))
        case let .set(type): return .set(which == 0 ? [] : [scalar(type)])
        case .file: return .file(FileRef(hash: ContentHash(bytes: [UInt8](repeating: which, count: 32))!, size: UInt64(which)))
        }
    }
}

/// Where a decoding error happened.
private func codingPath(_ error: DecodingError) -> [any CodingKey] {
    switch error {
    case let .typeMismatch(_, context), let .valueNotFound(_, context), let .keyNotFound(_, context), let .dataCorrupted(context): context.codingPath
    @unknown default: []
    }
}

extension Store {
    /// The records `query` keeps, as its type (``TypedQuery``).
    public func query<T: StoredRecord>(_ query: TypedQuery<T>) throws(ConcordError) -> [T] {
        try self.query(T.self, query.query)
    }

    /// How many records `query` keeps, its limit, offset and cursor aside.
    public func count<T: StoredRecord>(_ query: TypedQuery<T>) throws(ConcordError) -> Int {
        try count(query.query)
    }
}
