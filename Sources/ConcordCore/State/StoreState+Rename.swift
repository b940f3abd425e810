extension StoreState {
    /// The state with `rename` applied to every dot: its entries, its scopes and its
    /// context (a pure swap; ``renamingForkedSide(_:)`` is what a replica's state becomes).
    public func renaming(_ rename: DotRename) -> StoreState {
        var renamed: [RecordRef: Record] = [:]
        renamed.reserveCapacity(records.count)
        for (ref, record) in records {
            var slots: [SlotKey: Slot] = [:]
            slots.reserveCapacity(record.slots.count)
            for (key, slot) in record.slots {
                slots[key] = Slot(entries: rename(slot.entries), scope: slot.scope?.renaming(rename))
            }
            renamed[ref] = Record(slots: slots, scope: record.scope?.renaming(rename))
        }
        return StoreState(context: context.renaming(rename), records: renamed)
    }

    /// The state of a replica on the renamed side of a fork, merged: every dot renamed, and,
    /// once it holds a dot of the fresh id, that id's dots up to `rename.after` added to its
    /// context. No replica ever wrote them (the id is fresh), so nothing is removed by it;
    /// it keeps a replica's context a version vector, as applying the renamed side's
    /// batches (``Delta/renaming(_:forkSeq:)``, whose first one starts the fresh id at 0)
    /// leaves it.
    ///
    /// A fork at the replica's first batch (`after` 0) leaves it no dot: the swap keeps
    /// the dot 0 with it, which no replica issues and a version vector does not hold, so
    /// it is dropped.
    public func renamingForkedSide(_ rename: DotRename) -> StoreState {
        var state = renaming(rename)
        if state.context.ranges[rename.replica] == [0...0] {
            var ranges = state.context.ranges
            ranges[rename.replica] = nil
            state.context = CausalContext(ranges: ranges)
        }
        if state.context.holds(rename.to, past: rename.after) {
            state.context.insert(0...rename.after, for: rename.to)
        }
        return state
    }
}
