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
        var seenHere = ContextProbe(self.context)
        var seenByOrigin = VectorProbe(delta.observed)
        for change in delta.records {
            guard let index = records.index(forKey: change.ref) else {
                // A new record: build it whole, with room for its slots.
                var slots: [SlotKey: Slot] = [:]
                slots.reserveCapacity(change.slots.count)
                for slot in change.slots where !slot.entries.isEmpty {
                    let kept = seenHere.unseen(slot.entries)
                    if !kept.isEmpty { slots[slot.key] = Slot(entries: kept) }
                }
                if !slots.isEmpty {
                    if records.isEmpty { records.reserveCapacity(delta.records.count) }
                    records[change.ref] = Record(slots: slots)
                }
                continue
            }
            // The record is changed where it lies: one lookup of its ref, one of each slot.
            Self.merge(change, into: &records.values[index].slots, seenHere: &seenHere, seenByOrigin: &seenByOrigin)
            if records.values[index].isEmpty { records.remove(at: index) }
        }
        self.context.insert(delta.ownRange, for: delta.origin)
        return .applied
    }

    /// Joins one record change of a delta into the record's slots (the fast path of
    /// ``apply(_:)``).
    private static func merge(
        _ change: Delta.RecordChange, into slots: inout [SlotKey: Slot],
        seenHere: inout ContextProbe, seenByOrigin: inout VectorProbe
    ) {
        if change.whole {
            // Shipped whole: every slot it does not carry is empty at the origin.
            let carried = Set(change.slots.map(\.key))
            for (key, slot) in slots where !carried.contains(key) {
                let kept = slot.entries.filter { !seenByOrigin.contains($0.dot) }
                slots[key] = kept.isEmpty ? nil : Slot(entries: kept)
            }
        }
        for slot in change.slots {
            guard let index = slots.index(forKey: slot.key) else {
                let kept = seenHere.unseen(slot.entries)
                if !kept.isEmpty { slots[slot.key] = Slot(entries: kept) }
                continue
            }
            let current = slots.values[index].entries
            // The common case, an overwrite: the origin had seen every entry held here, and
            // this state has seen none of the origin's. The join is then the origin's entries,
            // shared as they are.
            if slot.entries.allSatisfy({ !seenHere.contains($0.dot) }), current.allSatisfy({ seenByOrigin.contains($0.dot) }) {
                if slot.entries.isEmpty {
                    slots.remove(at: index)
                } else {
                    slots.values[index] = Slot(entries: slot.entries)
                }
                continue
            }
            let merged = DotStore.join(
                current, seenBy: { seenHere.contains($0) },
                slot.entries, seenBy: { seenByOrigin.contains($0) }
            )
            if merged.isEmpty {
                slots.remove(at: index)
            } else {
                slots.values[index] = Slot(entries: merged)
            }
        }
    }

    static func covers(_ context: CausalContext, _ replica: ReplicaID, _ hlc: UInt64) -> Bool {
        if hlc == 0 { return true }
        guard let first = context.ranges[replica]?.first else { return false }
        return first.lowerBound == 0 && first.upperBound >= hlc
    }
}

/// Whether a causal context holds a stamp, remembering the last replica's ranges: a delta's
/// entries come in runs of one replica.
struct ContextProbe {
    private let context: CausalContext
    private var replica: ReplicaID?
    private var ranges: [ClosedRange<UInt64>]?

    init(_ context: CausalContext) {
        self.context = context
    }

    /// The entries this context has not seen: the join of a slot held nowhere here with
    /// the delta's slot, sharing its storage when nothing is dropped.
    mutating func unseen(_ entries: [Entry]) -> [Entry] {
        DotStore.join([], seenBy: { contains($0) }, entries, seenBy: { _ in false })
    }

    mutating func contains(_ stamp: Stamp) -> Bool {
        if stamp.replica != replica {
            replica = stamp.replica
            ranges = context.ranges[stamp.replica]
        }
        guard let ranges else { return false }
        return CausalContext.contains(ranges, stamp.hlc)
    }
}

/// Whether a version vector has seen a stamp, remembering the last replica's entry.
struct VectorProbe {
    private let vector: VersionVector
    private var replica: ReplicaID?
    private var bound: UInt64 = 0

    init(_ vector: VersionVector) {
        self.vector = vector
    }

    mutating func contains(_ stamp: Stamp) -> Bool {
        if stamp.replica != replica {
            replica = stamp.replica
            bound = vector[stamp.replica]
        }
        return stamp.hlc <= bound
    }
}
