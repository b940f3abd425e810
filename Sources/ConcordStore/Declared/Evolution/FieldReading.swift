import ConcordCore
import Foundation

/// What a declared field reads for one record under its declaration's evolution: the
/// value under its stored name converted, the default when the record lacks it, or a
/// value that failed its conversion (kept as written, never replaced by the default).
enum FieldReading: Hashable, Sendable {
    case value(FieldValue)
    case missing
    case unconvertible(FieldValue)

    /// The value the declared table and typed loads see: nil for a failed conversion.
    var value: FieldValue? {
        if case let .value(value) = self { return value }
        return nil
    }
}

extension CollectionDeclaration {
    /// What `field` reads in a record whose stored fields are `stored`.
    func reading(_ field: Field, in stored: [String: FieldValue]) -> FieldReading {
        let change = evolution.changes[field.name]
        // Stored under its first name; a value under its new name (a raw write by a tool
        // that used it) is read when the first name has none.
        guard let value = stored[storedName(of: field)] ?? (change?.renamedFrom != nil ? stored[field.name] : nil) else {
            return change?.defaultValue.map(FieldReading.value) ?? .missing
        }
        guard let conversion = change?.convertedFrom else { return .value(value) }
        switch (field.type, value) {
        case let (.scalar(type), .scalar(scalar)):
            guard let converted = conversion.convert(scalar, to: type) else { return .unconvertible(value) }
            return .value(.scalar(converted))
        case let (.set(type), .set(elements)):
            var converted: [ScalarValue] = []
            for element in elements {
                guard let element = conversion.convert(element, to: type) else { return .unconvertible(value) }
                converted.append(element)
            }
            return .value(.set(converted))
        default:
            return .value(value)
        }
    }

    /// A record's stored fields as this version sees them: each declared field under its
    /// declared name (converted, or its default), every other field under its stored name.
    /// Fields whose conversion failed are left out and returned apart, as written.
    func view(_ stored: [String: FieldValue]) -> (fields: [String: FieldValue], unconvertible: [String: FieldValue]) {
        var fields = stored
        var unconvertible: [String: FieldValue] = [:]
        for field in self.fields {
            let storedName = storedName(of: field)
            if storedName != field.name { fields[storedName] = nil }
            switch reading(field, in: stored) {
            case let .value(value): fields[field.name] = value
            case .missing: fields[field.name] = nil
            case let .unconvertible(raw):
                fields[field.name] = nil
                unconvertible[field.name] = raw
            }
        }
        return (fields, unconvertible)
    }

    /// The stored name of the property or field `name` of this version: a renamed field's
    /// first name, any other name as it is.
    func storedName(ofProperty name: String) -> String {
        field(name).map(storedName(of:)) ?? name
    }
}

extension CollectionDeclaration {
    /// A record's fields as a query of this version returns them: each renamed field under
    /// its new name, every value as written (sorted by name, UTF-8 bytes).
    func renamed(_ fields: [(name: String, value: FieldValue)]) -> [(name: String, value: FieldValue)] {
        let renames = evolution.changes.compactMap { name, change in change.renamedFrom.map { ($0, name) } }
        guard !renames.isEmpty else { return fields }
        let names = Dictionary(renames, uniquingKeysWith: { first, _ in first })
        let present = Set(fields.map(\.name))
        return fields.map { field in
            guard let new = names[field.name], !present.contains(new) else { return field }
            return (name: new, value: field.value)
        }.sorted { Bytewise.less($0.name, $1.name) }
    }
}
