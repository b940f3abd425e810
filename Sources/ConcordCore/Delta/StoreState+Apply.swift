/// What applying a delta did.
public enum ApplyOutcome: Hashable, Sendable {
    /// The delta's changes are now part of the state.
    case applied
    /// The state had already seen every write of the delta; nothing changed (rule 8).
    case alreadyApplied
}

extension StoreState {
    /// The dependencies of `delta` this state has not applied yet, or nil when it can apply.
    public func missingDependencies(of delta: Delta) -> VersionVector? {
        var missing = VersionVector()
        for (replica, hlc) in delta.dependencies.entries where !Self.covers(context, replica, hlc) {
            missing[replica] = hlc
        }
        return missing.entries.isEmpty ? nil : missing
    }

    /// Whether this state has seen every write `delta` covers.
    public func hasApplied(_ delta: Delta) -> Bool {
        Self.covers(context, delta.origin, delta.upTo)
    }

    /// Applies a delta whose dependencies are met (rule 8: applying it again changes
    /// nothing). The result equals `joined(delta.state)`.
    ///
    /// - Throws: ``ConcordError/Code/notReady`` naming the missing dependencies; the state
    ///   is unchanged then.
    @discardableResult
    public mutating func apply(_ delta: Delta) throws(ConcordError) -> ApplyOutcome {
        if hasApplied(delta) { return .alreadyApplied }
        if let missing = missingDependencies(of: delta) {
            throw ConcordError(.notReady, "delta \(delta.seq) from \(delta.origin) needs \(missing) first")
        }
        // The fast path relies on this state being a replica's own state that ends exactly
        // where the delta begins; anything else takes the general join, which is the
        // definition.
        guard context.maxHLC(for: delta.origin) == delta.dependencies[delta.origin],
              let _ = context.versionVector, !hasScopes
        else {
            self = joined(delta.state)
            return .applied
        }
        let observed = delta.observed
        let context = self.context
        for change in delta.records {
            if records[change.ref] == nil {
                // A new record: build it whole, with room for its slots.
                var slots: [SlotKey: Slot] = [:]
                slots.reserveCapacity(change.slots.count)
                for slot in change.slots where !slot.entries.isEmpty {
                    let unseen = slot.entries.allSatisfy { !context.contains($0.dot) }
                    let kept = unseen ? slot.entries : slot.entries.filter { !context.contains($0.dot) }
                    if !kept.isEmpty { slots[slot.key] = Slot(entries: kept) }
                }
                if !slots.isEmpty {
                    if records.isEmpty { records.reserveCapacity(delta.records.count) }
                    records[change.ref] = Record(slots: slots)
                }
                continue
            }
            updateRecord(change.ref) { slots in
                let seenByOrigin: (Stamp) -> Bool = { $0.hlc <= observed[$0.replica] }
                if change.whole {
                    // Shipped whole: every slot it does not carry is empty at the origin.
                    let carried = Set(change.slots.map(\.key))
                    for (key, slot) in slots where !carried.contains(key) {
                        let kept = slot.entries.filter { !seenByOrigin($0.dot) }
                        slots[key] = kept.isEmpty ? nil : Slot(entries: kept)
                    }
                }
                for slot in change.slots {
                    let merged = DotStore.join(
                        slots[slot.key]?.entries ?? [], seenBy: { context.contains($0) },
                        slot.entries, seenBy: seenByOrigin
                    )
                    slots[slot.key] = merged.isEmpty ? nil : Slot(entries: merged)
                }
            }
        }
        self.context.insert(delta.ownRange, for: delta.origin)
        return .applied
    }

    static func covers(_ context: CausalContext, _ replica: ReplicaID, _ hlc: UInt64) -> Bool {
        if hlc == 0 { return true }
        guard let first = context.ranges[replica]?.first else { return false }
        return first.lowerBound == 0 && first.upperBound >= hlc
    }
}
