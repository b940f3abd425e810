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
