import ConcordCore

/// The schema fuzz's oracle: every write each version made, as the stored fields it meant
/// to write, and what each replica had observed when it made it; from them, the state every
/// replica must end in (docs/ARCHITECTURE.md §2's rules, written apart from the store).
/// Writes are made one clock tick apart, so their order here is their stamps' order.
final class SchemaOracle {
    enum Kind { case update, create, delete }

    struct Write {
        let id: Int
        let replica: Int
        let record: String
        let kind: Kind
        /// Stored name → the value written (sets: their elements).
        let fields: [String: FieldValue]
        /// The writes the replica had observed (its own and those it pulled).
        let observed: Set<Int>
    }

    private(set) var writes: [Write] = []
    private var observed: [Set<Int>]
    private var published: Set<Int> = []

    init(replicas: Int) { observed = Array(repeating: [], count: replicas) }

    func write(_ replica: Int, _ record: String, _ kind: Kind, _ fields: [String: FieldValue]) {
        let id = writes.count
        writes.append(Write(id: id, replica: replica, record: record, kind: kind, fields: fields, observed: observed[replica]))
        observed[replica].insert(id)
    }

    /// A sync: the replica pulls everything pushed so far, then pushes its own writes.
    func synced(_ replica: Int) {
        observed[replica].formUnion(published)
        published.formUnion(writes.filter { $0.replica == replica }.map(\.id))
    }

    /// The stored fields `record` must hold once every replica has everything, or nil when
    /// it must not be visible.
    func expected(_ record: String, setFields: Set<String>) -> [String: FieldValue]? {
        let all = writes.filter { $0.record == record }
        let deletes = all.filter { $0.kind == .delete }
        let creates = all.filter { $0.kind == .create }
        // Visible while a write's liveness survives every delete (rule 4).
        let visible = all.contains { write in write.kind != .delete && !deletes.contains { $0.observed.contains(write.id) } }
        guard visible else { return nil }
        // A create of a record its replica saw as gone clears what it observed (rule 5).
        func cleared(_ write: Write) -> Bool { creates.contains { $0.id != write.id && $0.observed.contains(write.id) } }
        var result: [String: FieldValue] = [:]
        let names = Set(all.flatMap(\.fields.keys))
        for name in names {
            let candidates = all.filter { $0.fields[name] != nil && !cleared($0) }
            if setFields.contains(name) {
                // Each set write adds its elements and removes the adds it observed (rule 3).
                var elements: Set<ScalarValue> = []
                for write in candidates where !candidates.contains(where: { $0.observed.contains(write.id) }) {
                    if case let .set(added)? = write.fields[name] { elements.formUnion(added) }
                }
                if !elements.isEmpty { result[name] = .set(elements.sorted(by: ScalarValue.canonicalOrder)) }
            } else if let last = candidates.max(by: { $0.id < $1.id }) {
                result[name] = last.fields[name]  // the greatest stamp (rule 1)
            }
        }
        return result
    }
}
