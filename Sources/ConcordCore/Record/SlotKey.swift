/// Names one dot store inside a record. Field names are identified by their UTF-8 bytes.
///
/// A record is an observed-remove map of slots (docs/ARCHITECTURE.md §2, rules 4 and 5): its liveness
/// dots, its tombstones, one register per scalar or file field, and one dot set per element
/// of a set field. Deltas and the store's outbox track changes per slot, so writing one
/// field or adding one element ships only that slot.
public enum SlotKey: Hashable, Sendable, CustomStringConvertible {
    /// The record's liveness dots: it is visible while one survives.
    case liveness
    /// The dots of deletes not yet superseded by an acknowledgement or re-creation.
    case tombstones
    /// The register of a scalar or file field.
    case field(String)
    /// The adds of one element of a set field.
    case element(String, ScalarValue)

    /// The field this slot belongs to, if any.
    public var fieldName: String? {
        switch self {
        case .liveness, .tombstones: nil
        case let .field(name), let .element(name, _): name
        }
    }

    /// Whether an entry of this slot may carry `payload`: liveness dots, tombstones and set
    /// elements are bare dots; a field register holds a scalar or a file.
    public func accepts(_ payload: Payload) -> Bool {
        switch (self, payload) {
        case (.liveness, .marker), (.tombstones, .marker), (.element, .marker), (.field, .scalar), (.field, .file): true
        default: false
        }
    }

    var rank: UInt8 {
        switch self {
        case .liveness: 0
        case .tombstones: 1
        case .field: 2
        case .element: 3
        }
    }

    public static func == (lhs: SlotKey, rhs: SlotKey) -> Bool {
        switch (lhs, rhs) {
        case (.liveness, .liveness), (.tombstones, .tombstones): true
        case let (.field(a), .field(b)): Bytewise.equal(a, b)
        case let (.element(a, x), .element(b, y)): x == y && Bytewise.equal(a, b)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(rank)
        switch self {
        case .liveness, .tombstones: break
        case let .field(name): Bytewise.hash(name, into: &hasher)
        case let .element(name, element):
            Bytewise.hash(name, into: &hasher)
            hasher.combine(element)
        }
    }

    /// A total order: liveness, tombstones, fields by name, then elements by field name and
    /// element. Encodings list slots in this order.
    public static func canonicalOrder(_ lhs: SlotKey, _ rhs: SlotKey) -> Bool {
        switch (lhs, rhs) {
        case let (.field(a), .field(b)):
            return a.utf8.lexicographicallyPrecedes(b.utf8)
        case let (.element(a, x), .element(b, y)):
            if !Bytewise.equal(a, b) { return Bytewise.less(a, b) }
            return ScalarValue.canonicalOrder(x, y)
        default:
            return lhs.rank < rhs.rank
        }
    }

    public var description: String {
        switch self {
        case .liveness: "<liveness>"
        case .tombstones: "<tombstones>"
        case let .field(name): name
        case let .element(name, element): "\(name)[\(element)]"
        }
    }
}

/// One dot store of a record: its surviving entries and, in a delta, the scope of what its
/// writer had seen when it sealed the delta.
public struct Slot: Hashable, Sendable {
    /// Surviving entries, sorted by dot.
    public var entries: [Entry]
    /// Dots seen for this slot beyond the state's context, or nil. A replica's own state
    /// has no scopes; a delta scopes each slot it carries by its dependency vector, so the
    /// join removes what the writer saw in *this* slot and nothing in the slots it left out.
    public var scope: CausalContext?

    public init(entries: [Entry] = [], scope: CausalContext? = nil) {
        self.entries = entries
        self.scope = scope
    }

    /// The greatest dot among the entries.
    public var maxDot: Stamp? { entries.last?.dot }
}

/// A record: an observed-remove map of slots.
public struct Record: Hashable, Sendable {
    /// The record's non-empty slots.
    public var slots: [SlotKey: Slot]
    /// Dots seen for *every* slot of the record beyond the state's context, or nil. Only a
    /// delta's state has one: a record its writer shipped whole (a purge or a re-creation),
    /// so the join removes what the writer saw in every slot, carried or not. A slot's own
    /// scope holds only what this one does not.
    public var scope: CausalContext?

    public init(slots: [SlotKey: Slot] = [:], scope: CausalContext? = nil) {
        self.slots = slots
        self.scope = scope
    }

    /// Whether the record says anything: a slot, or a record-wide scope.
    public var isEmpty: Bool { slots.isEmpty && scope == nil }

    /// Visible while any liveness dot survives (rule 4).
    public var isVisible: Bool { !(slots[.liveness]?.entries.isEmpty ?? true) }

    /// Whether a tombstone survives alongside a liveness dot: a `deleteUpdate` conflict.
    public var hasDeleteUpdateConflict: Bool {
        isVisible && !(slots[.tombstones]?.entries.isEmpty ?? true)
    }

    /// Slots in canonical order.
    public var sortedSlots: [(key: SlotKey, slot: Slot)] {
        slots.sorted { SlotKey.canonicalOrder($0.key, $1.key) }.map { (key: $0.key, slot: $0.value) }
    }
}
