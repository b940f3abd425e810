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
