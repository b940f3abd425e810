/// The replicated state of a whole store: collections of records, and the causal context
/// of everything it has seen (docs/ARCHITECTURE.md §2).
///
/// `StoreState` is a join-semilattice: ``joined(_:)`` is commutative, associative and
/// idempotent. A replica's own state has a version-vector context and no slot scopes; a
/// delta seen as a state (``Delta/state``) has its origin's new range as context and its
/// slots scoped by its dependencies.
public struct StoreState: Hashable, Sendable {
    /// Every dot this state has seen.
    public internal(set) var context: CausalContext
    /// Every stored record, visible or not. Records with no slots are not stored.
    public internal(set) var records: [RecordRef: Record]

    /// Whether any slot carries a scope: true only for states built from deltas. Derived
    /// from `records`, kept stored so applying a delta need not scan the state.
    public private(set) var hasScopes: Bool

    /// The empty state.
    public init() {
        context = CausalContext()
        records = [:]
        hasScopes = false
    }

    public init(context: CausalContext, records: [RecordRef: Record]) {
        self.context = context
        self.records = records
        hasScopes = records.values.contains(where: Self.hasScope)
    }

    static func hasScope(_ record: Record) -> Bool {
        record.scope != nil || record.slots.values.contains { $0.scope != nil }
    }

    /// The record at `ref`, visible or not.
    public func record(_ ref: RecordRef) -> Record? {
        records[ref]
    }

    /// The number of records stored, visible or not.
    public var recordCount: Int { records.count }

    /// The version vector of this state's context, if it is one (a replica's own state).
    public var versionVector: VersionVector? { context.versionVector }

    /// Collections sorted by name, records by id: the canonical traversal order.
    public var sortedRecords: [(ref: RecordRef, record: Record)] {
        records.sorted { $0.key < $1.key }.map { (ref: $0.key, record: $0.value) }
    }

}

extension StoreState {
    /// Updates the slots of one record in place (no copy of the record), then drops the
    /// record if it became empty. Only for states without scopes:
    /// replicas' own states, which local writes and in-order deltas keep scope-free.
    mutating func updateRecord<Result>(_ ref: RecordRef, _ body: (inout [SlotKey: Slot]) -> Result) -> Result {
        let result = body(&records[ref, default: Record()].slots)
        if records[ref]?.isEmpty == true { records[ref] = nil }
        return result
    }
}
