import ConcordCore

extension ConcordError.Code {
    /// A declaration that cannot replace the one a replica holds: its schema version goes
    /// back, or a field's type changes with no registered conversion.
    public static let incompatibleSchema = ConcordError.Code("incompatibleSchema")
    /// A local write refused because this replica's schema version is below the minimum
    /// the app (or another device's newer version of it) declared.
    public static let schemaTooOld = ConcordError.Code("schemaTooOld")
}

extension CollectionDeclaration {
    /// Checks that this declaration may replace `old` (README, "Evolving your model"):
    /// its version is not lower, and in a newer version every field stored under a name
    /// `old` declared (or retired) keeps its type or converts from it by a registered
    /// conversion (int → double needs none). Declaring again at the same version is a
    /// local change of indexes and fields, as before versions.
    ///
    /// - Throws: `incompatibleSchema`, with one line saying why.
    func checkCompatible(replacing old: CollectionDeclaration) throws(ConcordError) {
        if version < old.version {
            throw ConcordError(.incompatibleSchema, "\"\(collection)\" is at schema version \(old.version) here: version \(version) would go backwards (a version is never declared again once a newer one was)")
        }
        guard version > old.version else { return }
        for field in fields {
            let stored = storedName(of: field)
            let before = old.fields.first { old.storedName(of: $0) == stored } ?? old.evolution.retired.first { $0.name == stored }
            guard let before, before.type != field.type else { continue }
            let conversion = evolution.changes[field.name]?.convertedFrom
            switch (before.type, field.type) {
            case let (.scalar(from), .scalar(to)), let (.set(from), .set(to)):
                if from == .int && to == .double { continue }
                if let conversion, conversion.from == from, Conversion.isRegistered(from: from, to: to) { continue }
                let hint = Conversion.isRegistered(from: from, to: to)
                    ? "declare \"convertedFrom\": {\"type\": \"\(from.rawValue)\"}"
                    : "no registered conversion goes from \(from.rawValue) to \(to.rawValue): declare a new field instead"
                throw ConcordError(.incompatibleSchema, "field \"\(field.name)\" of \"\(collection)\" changes type from \(before.type) to \(field.type) with no conversion: \(hint)")
            default:
                throw ConcordError(.incompatibleSchema, "field \"\(field.name)\" of \"\(collection)\" changes type from \(before.type) to \(field.type): no conversion changes a field's kind; declare a new field instead")
            }
        }
    }
}
