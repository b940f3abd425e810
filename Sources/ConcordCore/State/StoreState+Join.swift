extension StoreState {
    /// The least upper bound of two states (rule 8).
    ///
    /// Per slot, an entry survives if both sides hold it or one holds it and the other's
    /// effective context (its context plus the slot's scope) has not seen it. Slots present
    /// on neither side stay empty. Scopes already covered by the joined context are dropped,
    /// so joining a delta's state into a replica's state leaves no scopes behind.
    public func joined(_ other: StoreState) -> StoreState {
        let context = self.context.union(other.context)
        var records: [RecordRef: Record] = [:]
        records.reserveCapacity(max(self.records.count, other.records.count))
        for ref in Set(self.records.keys).union(other.records.keys) {
            let record = Self.joinRecords(self.records[ref], self.context, other.records[ref], other.context, into: context)
            if !record.slots.isEmpty { records[ref] = record }
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
        var slots: [SlotKey: Slot] = [:]
        for key in Set(leftSlots.keys).union(rightSlots.keys) {
            let slot = joinSlots(leftSlots[key], leftContext, rightSlots[key], rightContext, into: context)
            if !slot.entries.isEmpty || slot.scope != nil { slots[key] = slot }
        }
        return Record(slots: slots)
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
        var scope: CausalContext?
        switch (leftScope, rightScope) {
        case (nil, nil): scope = nil
        case let (some, nil), let (nil, some): scope = some
        case let (a?, b?): scope = a.union(b)
        }
        if let unioned = scope {
            let remaining = unioned.subtracting(context)
            scope = remaining.isEmpty ? nil : remaining
        }
        return Slot(entries: entries, scope: scope)
    }
}
