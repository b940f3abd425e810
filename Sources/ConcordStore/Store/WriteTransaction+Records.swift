import ConcordCore

extension WriteTransaction {
    // MARK: Writes

    /// Sets fields of a record, creating it if it is not visible (rules 1, 2 and 5).
    public func put(_ ref: RecordRef, _ fields: [String: FieldWrite]) throws(ConcordError) {
        try Self.checkNames(ref, fields.keys)
        try run {
            let dot = try beginWrite(ref)
            for name in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                try apply(fields[name]!, to: name, of: ref, dot: dot)
            }
        }
    }

    /// Sets one scalar field.
    public func set(_ ref: RecordRef, _ field: String, _ value: ScalarValue) throws(ConcordError) {
        if let shortcut, shortcut == ref {
            // A further field of the record written last: its liveness is renewed, it has no
            // set elements to clear, and the write joins the record's buffered upsert.
            try Self.checkName(field, "field name")
            if pending.appendIfRoom(ref, field, .scalar(value)) {
                changed.noteOfLast(field)
                return
            }
        }
        try Self.checkNames(ref, CollectionOfOne(field))
        try run {
            let dot = try beginWrite(ref)
            try apply(.scalar(value), to: field, of: ref, dot: dot)
        }
        if pending.lastRef == ref, hasNoElements(ref), changed.isLast(ref) { shortcut = ref }
    }

    /// Adds an element to a set field (rule 3).
    public func add(_ ref: RecordRef, _ field: String, _ element: ScalarValue) throws(ConcordError) {
        try Self.checkNames(ref, CollectionOfOne(field))
        try run {
            let dot = try beginWrite(ref)
            try clearRegister(field, of: ref)
            try replace(ref, .element(field, element), with: [Entry(dot: dot, payload: .marker)])
            begun[ref] = false
        }
    }

    /// Removes the adds of an element this replica has seen (rule 3).
    public func remove(_ ref: RecordRef, _ field: String, _ element: ScalarValue) throws(ConcordError) {
        try Self.checkNames(ref, CollectionOfOne(field))
        try run {
            _ = try beginWrite(ref)
            try replace(ref, .element(field, element), with: [])
        }
    }

    /// Creates (or replaces) a record with exactly `fields`, clearing every field entry and
    /// tombstone this replica has seen (rule 5).
    public func create(_ ref: RecordRef, _ fields: [String: FieldWrite]) throws(ConcordError) {
        try Self.checkNames(ref, fields.keys)
        try run {
            let dot = try dot()
            try clearRecord(ref, keepingLiveness: false)
            try replace(ref, .liveness, with: [Entry(dot: dot, payload: .marker)])
            begun[ref] = true
            for name in fields.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                try apply(fields[name]!, to: name, of: ref, dot: dot)
            }
        }
    }

    /// Deletes a record: removes the liveness dots and tombstones this replica has seen and
    /// leaves a tombstone of its own (rule 4). Fields are kept: a concurrent update brings
    /// the record back whole.
    public func delete(_ ref: RecordRef) throws(ConcordError) {
        try Self.checkNames(ref, EmptyCollection<String>())
        try run {
            let dot = try dot()
            try replace(ref, .liveness, with: [])
            try replace(ref, .tombstones, with: [Entry(dot: dot, payload: .marker)])
            begun[ref] = nil
        }
    }

    /// Acknowledges a `deleteUpdate` conflict by keeping the record (rule 4).
    public func keepRecord(_ ref: RecordRef) throws(ConcordError) {
        try run {
            _ = try beginWrite(ref)
            try replace(ref, .tombstones, with: [])
        }
    }

    // MARK: Names

    /// Collections, ids and field names are kept as SQLite text, which ends at a NUL byte:
    /// one inside a name would silently make it another name. Refused before anything is
    /// written. (Values keep their NUL bytes: see ``Rows/columns(_:)``.)
    static func checkNames(_ ref: RecordRef, _ fields: some Sequence<String>) throws(ConcordError) {
        try checkName(ref.collection, "collection")
        try checkName(ref.id, "record id")
        for name in fields { try checkName(name, "field name") }
    }

    private static func checkName(_ name: String, _ what: String) throws(ConcordError) {
        guard Bytewise.containsNUL(name) else { return }
        throw ConcordError(.invalidOperation, "the \(what) \(name.debugDescription) contains a NUL byte, which names cannot hold; nothing was written — use another \(what)")
    }
}
