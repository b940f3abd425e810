import ConcordCore
import Foundation

/// The schema file's evolution keys, per field (README, "Evolving your model"):
///
/// ```json
/// {"version": 2, "collections": {"games": {"fields": {
///   "tier": {"type": "int", "index": true, "renamedFrom": "level"},
///   "notes": {"type": "string", "default": ""},
///   "released": {"type": "date", "convertedFrom": {"type": "string", "format": "yyyy-MM-dd"}},
///   "tags": {"type": "set<string>", "retired": true}}}}}
/// ```
extension CollectionDeclaration.Evolution {
    /// The keys a field may have besides its type and indexes.
    static let keys = ["renamedFrom", "default", "retired", "convertedFrom"]

    /// Takes in `field`'s evolution keys from its object `spec`; returns whether the field
    /// is declared (false: it is retired).
    mutating func read(_ field: CollectionDeclaration.Field, _ spec: [String: Any], collection: String) throws(ConcordError) -> Bool {
        func fail(_ message: String) -> ConcordError {
            ConcordError(.invalidDeclaration, "field \"\(field.name)\" of \"\(collection)\": \(message)")
        }
        if let retiredKey = spec["retired"] {
            guard let flag = retiredKey as? Bool else { throw fail("\"retired\" is true or false") }
            if flag {
                guard spec.keys.allSatisfy({ $0 == "type" || $0 == "retired" }) else {
                    throw fail("a retired field says only its \"type\" and \"retired\": true")
                }
                retired.append(field)
                retired.sort { Bytewise.less($0.name, $1.name) }
                return false
            }
        }
        var change = CollectionDeclaration.FieldChange()
        if let old = spec["renamedFrom"] {
            guard let name = old as? String, !name.isEmpty else { throw fail("\"renamedFrom\" is the name it is stored under") }
            change.renamedFrom = name
        }
        if let value = spec["default"] {
            guard let parsed = Self.value(value, field.type) else { throw fail("\"default\" is not a \(field.type)") }
            change.defaultValue = parsed
        }
        if let conversion = spec["convertedFrom"] {
            guard let object = conversion as? [String: Any], let name = object["type"] as? String,
                  let from = CollectionDeclaration.ScalarType(rawValue: name),
                  object.keys.allSatisfy({ $0 == "type" || $0 == "format" }), object["format"] == nil || object["format"] is String else {
                throw fail("\"convertedFrom\" is {\"type\": T} or, from string to date, {\"type\": \"string\", \"format\": \"yyyy-MM-dd\"}")
            }
            change.convertedFrom = CollectionDeclaration.Conversion(from: from, format: object["format"] as? String)
        }
        if change != CollectionDeclaration.FieldChange() { changes[field.name] = change }
        return true
    }

    /// The evolution keys of declared `field`.
    func jsonObject(of field: CollectionDeclaration.Field) -> [String: Any] {
        guard let change = changes[field.name] else { return [:] }
        var spec: [String: Any] = [:]
        if let old = change.renamedFrom { spec["renamedFrom"] = old }
        if let value = change.defaultValue { spec["default"] = Self.json(value) }
        if let conversion = change.convertedFrom {
            var object: [String: Any] = ["type": conversion.from.rawValue]
            if let format = conversion.format { object["format"] = format }
            spec["convertedFrom"] = object
        }
        return spec
    }

    /// A default's JSON value as a value of `type`: a date as an ISO 8601 string or
    /// seconds since 2001-01-01, a set as an array.
    static func value(_ json: Any, _ type: CollectionDeclaration.FieldType) -> FieldValue? {
        if json is NSNull { return .scalar(.null) }
        switch type {
        case let .scalar(scalar): return scalarValue(json, scalar).map(FieldValue.scalar)
        case let .set(element):
            guard let array = json as? [Any] else { return nil }
            var elements: [ScalarValue] = []
            for item in array {
                guard let value = scalarValue(item, element) else { return nil }
                elements.append(value)
            }
            return .set(elements)
        case .file: return nil
        }
    }

    private static func scalarValue(_ json: Any, _ type: CollectionDeclaration.ScalarType) -> ScalarValue? {
        switch type {
        case .string: return (json as? String).map(ScalarValue.string)
        case .bool: return isBoolean(json) ? (json as? Bool).map(ScalarValue.bool) : nil
        case .int:
            if isBoolean(json) { return nil }
            if let integer = json as? Int { return .int(Int64(integer)) }
            return (json as? NSNumber).flatMap { Int64(exactly: $0.doubleValue) }.map(ScalarValue.int)
        case .double: return isBoolean(json) ? nil : (json as? NSNumber).map { .double($0.doubleValue) }
        case .date:
            if let text = json as? String { return DeclaredValue.date(text).map { .double($0.timeIntervalSinceReferenceDate) } }
            return (json as? NSNumber).map { .double($0.doubleValue) }
        case .bytes: return nil
        }
    }

    /// Whether a parsed JSON value is `true` or `false` rather than a number (Foundation
    /// bridges 0 and 1 to `Bool` too): a boolean is a Swift `Bool`, or a number of type `c`.
    private static func isBoolean(_ json: Any) -> Bool {
        if type(of: json) == Bool.self { return true }
        guard let number = json as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    /// A default as JSON.
    static func json(_ value: FieldValue) -> Any {
        func scalar(_ value: ScalarValue) -> Any {
            switch value {
            case .null: NSNull()
            case let .bool(flag): flag
            case let .int(number): number
            case let .double(number): number
            case let .string(text): text
            case let .bytes(bytes): Hex.encode(bytes)
            }
        }
        switch value {
        case let .scalar(value): return scalar(value)
        case let .set(elements): return elements.map(scalar)
        case .file: return NSNull()
        }
    }
}
