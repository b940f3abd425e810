import ConcordCore
import Foundation
import GRDB

/// The typed layer under a declaration's evolution: a load sees renamed fields under their
/// new names, converted values and defaults, and reads what it can; a save writes only what
/// the app changed, under the names the fields are stored as.
enum TypedEvolution {
    /// `stored` (a visible record's fields) read as a `T` under `declaration`.
    static func decode<T: StoredRecord>(_ type: T.Type, id: String, stored: [(name: String, value: FieldValue)], declaration: CollectionDeclaration?) throws(ConcordError) -> (loaded: Loaded<T>, log: UnreadLog) {
        let table: FieldTable
        let log: UnreadLog
        if let declaration, !declaration.evolution.changes.isEmpty {
            var fields = Dictionary(stored.map { ($0.name, $0.value) }, uniquingKeysWith: { first, _ in first })
            let unconvertible: [String: FieldValue]
            (fields, unconvertible) = declaration.view(fields)
            fields["id"] = .scalar(.string(id))
            table = FieldTable(fields)
            log = UnreadLog(unconvertible: unconvertible) { declaration.storedName(ofProperty: $0) }
        } else {
            // Nothing renamed, converted or defaulted: the fields as stored, found by a scan
            // (no dictionary per record), the id last so that it wins.
            table = FieldTable(stored, id: id)
            log = UnreadLog(unconvertible: [:]) { $0 }
        }
        do {
            let value = try T(from: TopDecoder(fields: table, log: log))
            return (Loaded(value: value, unread: log.unread), log)
        } catch let error as ConcordError {
            throw error
        } catch {
            throw ConcordError(.invalidOperation, "the record \"\(id)\" cannot be read as \(T.self): \(error)", cause: error)
        }
    }

    /// The writes that save `encoded` (a `T`'s fields by property name) over `current` (the
    /// record's stored fields, nil when it is not visible), keyed by stored name: every
    /// field of a new record; otherwise only the properties whose value differs from what a
    /// load of `current` gives, so a field this version could not read — a value of a type
    /// it does not expect, a failed conversion, set elements of another kind — is never
    /// overwritten by the placeholder it loaded, and a field it does not know is never
    /// written at all.
    static func changes<T: StoredRecord>(_ type: T.Type, id: String, encoded: [String: FieldWrite], current: [String: FieldValue]?, declaration: CollectionDeclaration?) throws(ConcordError) -> [String: FieldWrite] {
        func stored(_ name: String) -> String { declaration?.storedName(ofProperty: name) ?? name }
        guard let current else { return Dictionary(encoded.map { (stored($0.key), $0.value) }, uniquingKeysWith: { first, _ in first }) }
        let sorted = current.sorted { Bytewise.less($0.key, $1.key) }.map { (name: $0.key, value: $0.value) }
        guard let (loaded, log) = try? decode(T.self, id: id, stored: sorted, declaration: declaration),
              var seen = try? FieldEncoder.encode(loaded.value) else {
            // The record does not read as a `T` at all: only what differs from the store.
            return Dictionary(encoded.filter { !FieldEncoder.matches($0.value, current[stored($0.key)]) }.map { (stored($0.key), $0.value) },
                              uniquingKeysWith: { first, _ in first })
        }
        seen["id"] = nil
        var changes: [String: FieldWrite] = [:]
        for (name, write) in encoded {
            if let before = seen[name], same(write, before) { continue }
            if case let .set(elements) = write, let kept = log.keptElements[name] {
                changes[stored(name)] = .set(elements + kept)  // elements of a kind it does not know stay
            } else {
                changes[stored(name)] = write
            }
        }
        return changes
    }

    static func same(_ a: FieldWrite, _ b: FieldWrite) -> Bool {
        switch (a, b) {
        case let (.scalar(x), .scalar(y)): x == y
        case let (.file(x), .file(y)): x == y
        case let (.set(x), .set(y)): Set(x) == Set(y)
        default: false
        }
    }
}

extension Store {
    /// Loads the record `id` as a `T`, reading every field it can and reporting the others
    /// (``Loaded/unread``), or nil if it is not visible.
    ///
    /// ```swift
    /// if let loaded = try store.loadReporting(Game.self, id: "zelda") {
    ///     show(loaded.value)
    ///     for field in loaded.unread { log("\(field.field) kept as written: \(field.message)") }
    /// }
    /// ```
    ///
    /// A field of a type `T` does not expect (written by a newer version of the app), or
    /// whose declared conversion fails, does not fail the load: its property holds nil or a
    /// placeholder, its value stays as written, and ``save(_:)`` leaves it alone unless the
    /// app changes the property. Under a declaration (``declare(_:)-(CollectionDeclaration)``)
    /// renamed fields load under their new names, converted ones converted, and a missing
    /// field with a default loads its default.
    public func loadReporting<T: StoredRecord>(_ type: T.Type, id: String) throws(ConcordError) -> Loaded<T>? {
        let ref = RecordRef(collection: T.collection, id: id)
        // The record and the schema's version in one statement: the declarations kept
        // under that version are its state's, with no read of them (the common load).
        let versioned: PointReader.VersionedOutcome
        do {
            versioned = try pointReader.recordAndSchemaVersion(ref)
        } catch let error as ConcordError {
            throw error
        } catch {
            throw Store.storageError(error, doing: "read \(path)")
        }
        if case let .read(fields, version) = versioned, let kept = declarationCache.kept(at: version) {
            guard let fields else { return nil }
            return try TypedEvolution.decode(T.self, id: id, stored: fields, declaration: kept[Array(T.collection.utf8)]).loaded
        }
        let declaration = try declaration(of: T.collection)
        guard let fields = try record(ref) else { return nil }
        return try TypedEvolution.decode(T.self, id: id, stored: fields, declaration: declaration).loaded
    }

    /// Every visible record of `T`'s collection, sorted by id, each read as
    /// ``loadReporting(_:id:)`` reads it.
    public func loadAllReporting<T: StoredRecord>(_ type: T.Type) throws(ConcordError) -> [Loaded<T>] {
        let declaration = try declaration(of: T.collection)
        return try records(in: T.collection).map { (record) throws(ConcordError) -> Loaded<T> in
            try TypedEvolution.decode(T.self, id: record.id, stored: record.fields, declaration: declaration).loaded
        }
    }
}

extension WriteTransaction {
    /// The declaration of `collection` inside this transaction, if declared.
    func declaration(of collection: String) throws(ConcordError) -> CollectionDeclaration? {
        do {
            return try store.declarationCache.declaration(db, collection)
        } catch let error as ConcordError {
            throw error
        } catch {
            throw Store.storageError(error, doing: "read the declaration of \(collection)")
        }
    }
}
