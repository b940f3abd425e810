import ConcordCore
import Foundation

/// A `Codable` type stored as records of one collection (docs/ARCHITECTURE.md §3, the typed layer).
///
/// ```swift
/// struct Game: StoredRecord {
///     static let collection = "games"
///     var id: String
///     var level: Int
///     var tags: Set<String>
/// }
/// ```
///
/// Each top-level property is a field: `Bool`, integers, `Double`/`Float`, `String` and
/// `Data` are scalars; `nil` is `null`; a `Set` or `Array` of scalars is a set field (an
/// add-wins set: order and duplicates are not kept); ``/ConcordCore/FileRef`` is a file field; any other
/// nested value is stored as a JSON string. The `id` property is the record's id, not a
/// field. ``Store/save(_:)`` writes only the fields whose
/// value differs from what the store holds, so concurrent edits of different properties on
/// two devices both survive.
public protocol StoredRecord: Codable {
    /// The collection the type's records live in.
    static var collection: String { get }
    /// The record's id.
    var id: String { get }
}

extension Store {
    /// Saves `value`: one write of the fields that changed. Returns the names written.
    ///
    /// ```swift
    /// try store.save(Game(id: "mario", level: 1, tags: ["platform"]))
    /// ```
    ///
    /// Fields whose value the store already holds are not written, so another replica's
    /// concurrent change to a different property survives the merge. Nor are fields `T`
    /// does not have, nor fields it loaded without reading them (``loadReporting(_:id:)``)
    /// and the app left as loaded: a version of the app never blanks what a newer one wrote.
    /// Under a declaration, a renamed field is written under the name it is stored as.
    @discardableResult
    public func save<T: StoredRecord>(_ value: T) throws(ConcordError) -> [String] {
        let ref = RecordRef(collection: T.collection, id: value.id)
        var fields = try FieldEncoder.encode(value)
        fields["id"] = nil  // the record's id; supplied again on load
        return try write { tx throws(ConcordError) -> [String] in
            let current = try tx.fields(of: ref)
            let changed = try TypedEvolution.changes(T.self, id: value.id, encoded: fields, current: current, declaration: try tx.declaration(of: T.collection))
            if !changed.isEmpty || current == nil { try tx.put(ref, changed) }
            return changed.keys.sorted()
        }
    }

    /// Loads the record `id` as a `T`, or nil if it is not visible: ``loadReporting(_:id:)``
    /// without its report (a field it cannot read holds nil or a placeholder).
    ///
    /// ```swift
    /// if var mario = try store.load(Game.self, id: "mario") {
    ///     mario.level += 1
    ///     try store.save(mario)  // writes "level" only
    /// }
    /// ```
    public func load<T: StoredRecord>(_ type: T.Type, id: String) throws(ConcordError) -> T? {
        try loadReporting(T.self, id: id)?.value
    }

    /// Every visible record of `T`'s collection, sorted by id.
    ///
    /// ```swift
    /// let games = try store.loadAll(Game.self)
    /// ```
    public func loadAll<T: StoredRecord>(_ type: T.Type) throws(ConcordError) -> [T] {
        try loadAllReporting(T.self).map(\.value)
    }
}

extension WriteTransaction {
    /// The visible fields of a record inside this transaction, or nil if it is not visible.
    public func fields(of ref: RecordRef) throws(ConcordError) -> [String: FieldValue]? {
        // What this transaction wrote and still buffers is written first, so it is read.
        try finish()
        do {
            guard let record = try SlotIO.record(db, ref), record.isVisible else { return nil }
            return record.fields
        } catch let error as ConcordError {
            throw error
        } catch {
            throw Store.storageError(error, doing: "read \(ref)")
        }
    }
}
