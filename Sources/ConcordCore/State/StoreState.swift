/// Identifies one record: its collection and its id.
public struct RecordRef: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let collection: String
    public let id: String

    public init(collection: String, id: String) {
        self.collection = collection
        self.id = id
    }

    public static func < (lhs: RecordRef, rhs: RecordRef) -> Bool {
        if lhs.collection != rhs.collection {
            return lhs.collection.utf8.lexicographicallyPrecedes(rhs.collection.utf8)
        }
        return lhs.id.utf8.lexicographicallyPrecedes(rhs.id.utf8)
    }

    public var description: String { "\(collection)/\(id)" }
}

/// The replicated state of a whole store: collections of records, and the causal context
/// of everything it has seen (DESIGN.md §2).
///
/// `StoreState` is a join-semilattice: ``joined(_:)`` is commutative, associative and
/// idempotent. A replica's own state has a version-vector context and no slot scopes; a
/// delta seen as a state (``Delta/state``) has its origin's new range as context and its
/// slots scoped by its dependencies.
public struct StoreState: Hashable, Sendable {
    /// Every dot this state has seen.
    public internal(set) var context: CausalContext
    /// Collection name → record id → record. Records with no slots are not stored.
    public internal(set) var collections: [String: [String: Record]]

    /// Whether any slot carries a scope: true only for states built from deltas. Derived
    /// from `collections`, kept stored so applying a delta need not scan the state.
    public private(set) var hasScopes: Bool

    /// The empty state.
    public init() {
        context = CausalContext()
        collections = [:]
        hasScopes = false
    }

    public init(context: CausalContext, collections: [String: [String: Record]]) {
        self.context = context
        self.collections = collections
        hasScopes = collections.values.contains { $0.values.contains { $0.slots.values.contains { $0.scope != nil } } }
    }

    /// The record at `ref`, visible or not.
    public func record(_ ref: RecordRef) -> Record? {
        collections[ref.collection]?[ref.id]
    }

    /// The number of records stored, visible or not.
    public var recordCount: Int { collections.values.reduce(0) { $0 + $1.count } }

    /// The version vector of this state's context, if it is one (a replica's own state).
    public var versionVector: VersionVector? { context.versionVector }

    /// Collections sorted by name, records by id: the canonical traversal order.
    public var sortedRecords: [(ref: RecordRef, record: Record)] {
        collections.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.flatMap { name in
            let records = collections[name]!
            return records.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map {
                (ref: RecordRef(collection: name, id: $0), record: records[$0]!)
            }
        }
    }

    /// Checks the invariants: slots non-empty and sorted, every entry's dot seen in its
    /// slot's effective context, scopes disjoint from the context, no empty records.
    public func _checkInvariants() {
        context._checkInvariants()
        precondition(
            hasScopes == collections.values.contains { $0.values.contains { $0.slots.values.contains { $0.scope != nil } } },
            "hasScopes out of date")
        for (_, records) in collections {
            precondition(!records.isEmpty, "empty collection stored")
            for (_, record) in records {
                precondition(!record.slots.isEmpty, "empty record stored")
                for (key, slot) in record.slots {
                    precondition(!slot.entries.isEmpty || slot.scope != nil, "empty slot \(key) stored")
                    precondition(DotStore.isWellOrdered(slot.entries), "slot \(key) not sorted")
                    if let scope = slot.scope {
                        precondition(!scope.isEmpty, "empty scope stored")
                        precondition(scope.subtracting(context) == scope, "scope overlaps context")
                    }
                    for entry in slot.entries {
                        precondition(
                            context.contains(entry.dot) || (slot.scope?.contains(entry.dot) ?? false),
                            "entry \(entry.dot) in \(key) not in its context")
                        switch (key, entry.payload) {
                        case (.liveness, .marker), (.tombstones, .marker), (.element, .marker),
                             (.field, .scalar), (.field, .file): break
                        default: preconditionFailure("payload \(entry.payload) in slot \(key)")
                        }
                    }
                }
            }
        }
    }
}

extension StoreState {
    /// Updates the slots of one record in place (no copy of the record), then drops the
    /// record and its collection if they became empty. Only for states without scopes:
    /// replicas' own states, which local writes and in-order deltas keep scope-free.
    mutating func updateRecord<Result>(_ ref: RecordRef, _ body: (inout [SlotKey: Slot]) -> Result) -> Result {
        let result = body(&collections[ref.collection, default: [:]][ref.id, default: Record()].slots)
        if collections[ref.collection]?[ref.id]?.slots.isEmpty == true {
            collections[ref.collection]![ref.id] = nil
            if collections[ref.collection]!.isEmpty { collections[ref.collection] = nil }
        }
        return result
    }
}
