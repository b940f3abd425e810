import ConcordCore
import Foundation

/// The schema file (`concord schema apply FILE.json`) and the form a declaration is kept in:
///
/// ```json
/// {"version": 1, "collections": {"games": {"fields": {
///    "title": {"type": "string", "index": true, "search": true},
///    "level": {"type": "int", "index": true},
///    "tags": {"type": "set<string>"}, "cover": {"type": "file"}}}}}
/// ```
extension CollectionDeclaration {
    /// The declarations of a schema file.
    ///
    /// - Throws: `invalidDeclaration` for anything but the documented shape: another
    ///   version, an unknown key or type, a value of the wrong JSON type.
    public static func schema(json: [UInt8]) throws(ConcordError) -> [CollectionDeclaration] {
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: Data(json))
        } catch {
            throw ConcordError(.invalidDeclaration, "the schema is not JSON: \(error.localizedDescription)")
        }
        guard let top = object as? [String: Any] else { throw ConcordError(.invalidDeclaration, "a schema is a JSON object") }
        for key in top.keys where key != "version" && key != "collections" {
            throw ConcordError(.invalidDeclaration, "a schema has no key \"\(key)\" (only \"version\" and \"collections\")")
        }
        guard let version = top["version"] as? Int, version == 1 else {
            throw ConcordError(.invalidDeclaration, "a schema says \"version\": 1 (the only version this release reads)")
        }
        guard let collections = top["collections"] as? [String: Any] else {
            throw ConcordError(.invalidDeclaration, "a schema's \"collections\" is an object of collection names")
        }
        var result: [CollectionDeclaration] = []
        for (name, body) in collections.sorted(by: { Bytewise.less($0.key, $1.key) }) {
            result.append(try declaration(name, body))
        }
        return result
    }

    /// The declaration of `collection` from its object in a schema (`{"fields": {…}}`).
    static func declaration(_ collection: String, _ body: Any) throws(ConcordError) -> CollectionDeclaration {
        guard let body = body as? [String: Any], let fields = body["fields"] as? [String: Any], body.count == 1 else {
            throw ConcordError(.invalidDeclaration, "collection \"\(collection)\" is declared as {\"fields\": {…}}")
        }
        var declared: [Field] = []
        for (name, spec) in fields {
            guard let spec = spec as? [String: Any] else {
                throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\" is declared as an object, {\"type\": …}")
            }
            for key in spec.keys where !["type", "index", "search", "collation"].contains(key) {
                throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\": unknown key \"\(key)\" (type, index, search, collation)")
            }
            guard let typeName = spec["type"] as? String, let type = FieldType(name: typeName) else {
                throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\" needs a \"type\": string, int, double, bool, bytes, date, file or set<T>")
            }
            func flag(_ key: String) throws(ConcordError) -> Bool {
                guard let value = spec[key] else { return false }
                guard let flag = value as? Bool else {
                    throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\": \"\(key)\" is true or false")
                }
                return flag
            }
            var collation: Collation?
            if let value = spec["collation"] {
                guard let text = value as? String, let known = Collation(rawValue: text) else {
                    throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\": \"collation\" is one of binary, nocase, rtrim")
                }
                collation = known
            }
            declared.append(Field(name, type, indexed: try flag("index"), searchable: try flag("search"), collation: collation))
        }
        return try CollectionDeclaration(collection, fields: declared)
    }

    /// The declaration's object in a schema: `{"fields": {…}}`, keys sorted.
    public var jsonObject: [String: Any] {
        var fields: [String: Any] = [:]
        for field in self.fields {
            var spec: [String: Any] = ["type": field.type.description]
            if field.indexed { spec["index"] = true }
            if field.searchable { spec["search"] = true }
            if let collation = field.collation { spec["collation"] = collation.rawValue }
            fields[field.name] = spec
        }
        return ["fields": fields]
    }

    /// The declaration as kept in `concord_declarations`.
    var storedJSON: String {
        let data = (try? JSONSerialization.data(withJSONObject: jsonObject, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// A schema file of `declarations`, keys sorted.
    public static func schemaJSON(_ declarations: [CollectionDeclaration]) -> [UInt8] {
        var collections: [String: Any] = [:]
        for declaration in declarations { collections[declaration.collection] = declaration.jsonObject }
        let object: [String: Any] = ["version": 1, "collections": collections]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}
