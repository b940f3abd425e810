extension StoreState {
    /// The least upper bound of two states (rule 8).
    ///
    /// Per slot, an entry survives if both sides hold it or one holds it and the other's
    /// effective context (its context plus the slot's and the record's scopes) has not seen it. Slots present
    /// on neither side stay empty. Scopes already covered by the joined context are dropped,
    /// so joining a delta's state into a replica's state leaves no scopes behind.
    public func joined(_ other: StoreState) -> StoreState {
        let context = self.context.union(other.context)
        var records: [RecordRef: Record] = [:]
        records.reserveCapacity(max(self.records.count, other.records.count))
        for ref in Set(self.records.keys).union(other.records.keys) {
            let record = Self.joinRecords(self.records[ref], self.context, other.records[ref], other.context, into: context)
            if !record.isEmpty { records[ref] = record }
        }
        return StoreState(context: context, records: records)
    }

    public mutating func join(_ other: StoreState) {
        self = joined(other)
    }

    static func joinRecords(
        _ left: Record?, _ leftContext: CausalContext,
        _ right: Record?, _ rightContext: CausalContext,
        into context: CausalContext
    ) -> Record {
        let leftSlots = left?.slots ?? [:]
        let rightSlots = right?.slots ?? [:]
        let leftScope = left?.scope
        let rightScope = right?.scope
        // A record-wide scope stands for an empty slot under every key the record lacks,
        // and widens the scope of the slots it has.
        let recordScope = remaining(union(leftScope, rightScope), after: context)
        var slots: [SlotKey: Slot] = [:]
        for key in Set(leftSlots.keys).union(rightSlots.keys) {
            var slot = joinSlots(
                widened(leftSlots[key], by: leftScope), leftContext,
                widened(rightSlots[key], by: rightScope), rightContext, into: context)
            if let recordScope, let own = slot.scope { slot.scope = remaining(own, after: recordScope) }
            if !slot.entries.isEmpty || slot.scope != nil { slots[key] = slot }
        }
        return Record(slots: slots, scope: recordScope)
    }

    /// A slot as its record's scope sees it: `slot`, its scope widened by `recordScope`;
    /// an empty slot under that scope when the record lacks it.
    private static func widened(_ slot: Slot?, by recordScope: CausalContext?) -> Slot? {
        guard let recordScope else { return slot }
        return Slot(entries: slot?.entries ?? [], scope: union(slot?.scope, recordScope))
    }

    private static func union(_ a: CausalContext?, _ b: CausalContext?) -> CausalContext? {
        switch (a, b) {
        case (nil, nil): nil
        case let (some?, nil), let (nil, some?): some
        case let (a?, b?): a.union(b)
        }
    }

    /// `scope` without the dots of `covered`, or nil when nothing is left.
    private static func remaining(_ scope: CausalContext?, after covered: CausalContext) -> CausalContext? {
        guard let scope else { return nil }
        let rest = scope.subtracting(covered)
        return rest.isEmpty ? nil : rest
    }

    static func joinSlots(
        _ left: Slot?, _ leftContext: CausalContext,
        _ right: Slot?, _ rightContext: CausalContext,
        into context: CausalContext
    ) -> Slot {
        let leftScope = left?.scope
        let rightScope = right?.scope
        let entries = DotStore.join(
            left?.entries ?? [], seenBy: { leftContext.contains($0) || (leftScope?.contains($0) ?? false) },
            right?.entries ?? [], seenBy: { rightContext.contains($0) || (rightScope?.contains($0) ?? false) }
        )
        let scope = remaining(union(leftScope, rightScope), after: context)
        return Slot(entries: entries, scope: scope)
    }
}
