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
        guard let version = top["version"] as? Int, version >= 1 else {
            throw ConcordError(.invalidDeclaration, "a schema says its \"version\": 1, 2, … (README, \"Evolving your model\")")
        }
        guard let collections = top["collections"] as? [String: Any] else {
            throw ConcordError(.invalidDeclaration, "a schema's \"collections\" is an object of collection names")
        }
        var result: [CollectionDeclaration] = []
        for (name, body) in collections.sorted(by: { Bytewise.less($0.key, $1.key) }) {
            result.append(try declaration(name, body, version: version))
        }
        return result
    }

    /// The declaration of `collection` from its object in a schema (`{"fields": {…}}`).
    static func declaration(_ collection: String, _ body: Any, version: Int = 1) throws(ConcordError) -> CollectionDeclaration {
        // The stored form (``storedJSON``) also says its version.
        guard let body = body as? [String: Any], let fields = body["fields"] as? [String: Any],
              body.keys.allSatisfy({ $0 == "fields" || $0 == "version" }), body["version"] == nil || body["version"] is Int else {
            throw ConcordError(.invalidDeclaration, "collection \"\(collection)\" is declared as {\"fields\": {…}}")
        }
        var evolution = Evolution(version: body["version"] as? Int ?? version)
        var declared: [Field] = []
        for (name, spec) in fields {
            guard let spec = spec as? [String: Any] else {
                throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\" is declared as an object, {\"type\": …}")
            }
            for key in spec.keys where !(["type", "index", "search", "collation"] + Evolution.keys).contains(key) {
                throw ConcordError(.invalidDeclaration, "field \"\(name)\" of \"\(collection)\": unknown key \"\(key)\" (type, index, search, collation, \(Evolution.keys.joined(separator: ", ")))")
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
            let field = Field(name, type, indexed: try flag("index"), searchable: try flag("search"), collation: collation)
            if try evolution.read(field, spec, collection: collection) { declared.append(field) }
        }
        return try CollectionDeclaration(collection, version: evolution.version, fields: declared, changes: evolution.changes, retired: evolution.retired)
    }

    /// The declaration's object in a schema: `{"fields": {…}}`, keys sorted.
    public var jsonObject: [String: Any] {
        var fields: [String: Any] = [:]
        for field in self.fields {
            var spec: [String: Any] = ["type": field.type.description]
            if field.indexed { spec["index"] = true }
            if field.searchable { spec["search"] = true }
            if let collation = field.collation { spec["collation"] = collation.rawValue }
            fields[field.name] = spec.merging(evolution.jsonObject(of: field)) { _, change in change }
        }
        for field in evolution.retired { fields[field.name] = ["type": field.type.description, "retired": true] }
        return ["fields": fields]
    }

    /// The declaration as kept in `concord_declarations`.
    var storedJSON: String {
        var object = jsonObject
        if version != 1 { object["version"] = version }
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return String(decoding: data, as: UTF8.self)
    }

    /// A schema file of `declarations`, keys sorted.
    public static func schemaJSON(_ declarations: [CollectionDeclaration]) -> [UInt8] {
        var collections: [String: Any] = [:]
        for declaration in declarations { collections[declaration.collection] = declaration.jsonObject }
        let object: [String: Any] = ["version": declarations.map(\.version).max() ?? 1, "collections": collections]
        return Array((try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data())
    }
}
