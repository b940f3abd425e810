import Concord

/// How `schema show` describes a field's evolution keys.
enum SchemaNotes {
    static func changes(of field: CollectionDeclaration.Field, in declaration: CollectionDeclaration) -> [String] {
        guard let change = declaration.evolution.changes[field.name] else { return [] }
        var notes: [String] = []
        if let old = change.renamedFrom { notes.append("renamed from \(old), stored as \(old)") }
        if let value = change.defaultValue { notes.append("default \(value)") }
        if let conversion = change.convertedFrom {
            notes.append("converted from \(conversion.from.rawValue)\(conversion.format.map { " in the format \($0)" } ?? "")")
        }
        return notes
    }
}
