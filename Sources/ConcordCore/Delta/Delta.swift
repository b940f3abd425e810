/// The changes one replica sealed from its outbox: the current entries of every slot it
/// touched since its previous delta (docs/ARCHITECTURE.md §3–§4).
///
/// A delta covers its origin's writes with hlc in `(dependencies[origin], upTo]`. Its slots
/// carry their entries as the origin held them when it sealed, so applying a delta removes,
/// in each carried slot, exactly the entries the origin had seen (everything within
/// `dependencies`) and no longer holds. Apply a delta only after its dependencies: then a
/// replica's context stays an exact version vector.
public struct Delta: Hashable, Sendable {
    /// One touched record and its touched slots, in canonical order.
    ///
    /// A record shipped **whole** carries every non-empty slot its origin held when it
    /// sealed, and applying it removes, in *every* slot of the record, the entries within
    /// `observed` that it does not carry. A purge of a dead record (an empty whole record)
    /// travels this way, and so does any record a purge touched before the seal.
    public struct RecordChange: Hashable, Sendable {
        public let ref: RecordRef
        public let slots: [(key: SlotKey, entries: [Entry])]
        /// Whether the record is shipped whole (see above); its slots are then non-empty.
        public let whole: Bool

        public init(ref: RecordRef, slots: [(key: SlotKey, entries: [Entry])], whole: Bool = false) {
            self.ref = ref
            self.slots = slots
            self.whole = whole
        }

        public static func == (lhs: RecordChange, rhs: RecordChange) -> Bool {
            lhs.ref == rhs.ref && lhs.whole == rhs.whole && lhs.slots.count == rhs.slots.count
                && zip(lhs.slots, rhs.slots).allSatisfy { $0.key == $1.key && $0.entries == $1.entries }
        }

        public func hash(into hasher: inout Hasher) {
            hasher.combine(ref)
            hasher.combine(whole)
            for slot in slots {
                hasher.combine(slot.key)
                hasher.combine(slot.entries)
            }
        }
    }

    /// The replica that wrote it.
    public let origin: ReplicaID
    /// Its position in the origin's sequence of deltas: 1, 2, 3, …
    public let seq: UInt64
    /// What the origin had applied when it sealed; `dependencies[origin]` is the `upTo` of
    /// its previous delta.
    public let dependencies: VersionVector
    /// The greatest hlc of the origin's writes this delta covers.
    public let upTo: UInt64
    /// Touched records in canonical order (``RecordRef`` order).
    public let records: [RecordChange]

    /// Builds a delta, checking every rule of the format: records and slots sorted and
    /// unique, entries sorted by dot and seen within the dependencies, payloads of the
    /// slot's kind, and a non-empty own range.
    public init(
        origin: ReplicaID, seq: UInt64, dependencies: VersionVector, upTo: UInt64, records: [RecordChange]
    ) throws(ConcordError) {
        try self.init(origin: origin, seq: seq, dependencies: dependencies, upTo: upTo, records: records, orderChecked: false)
    }

    /// Builds a delta its decoder has read: the decoder has already checked that records,
    /// slots and entries are in strictly ascending order, and that every payload is of its
    /// slot's kind, so only the other rules are checked here.
    package init(
        decodedOrigin origin: ReplicaID, seq: UInt64, dependencies: VersionVector, upTo: UInt64, records: [RecordChange]
    ) throws(ConcordError) {
        try self.init(origin: origin, seq: seq, dependencies: dependencies, upTo: upTo, records: records, orderChecked: true)
    }

    private init(
        origin: ReplicaID, seq: UInt64, dependencies: VersionVector, upTo: UInt64, records: [RecordChange], orderChecked: Bool
    ) throws(ConcordError) {
        self.origin = origin
        self.seq = seq
        self.dependencies = dependencies
        self.upTo = upTo
        self.records = records
        try validate(orderChecked: orderChecked)
    }

    /// The dependency vector with the origin raised to `upTo`: everything the origin had
    /// seen when it sealed, and the scope of every carried slot.
    public var observed: VersionVector {
        var vector = dependencies
        vector[origin] = upTo
        return vector
    }

    /// The origin's writes this delta covers: `(dependencies[origin], upTo]`, written from
    /// 0 for a first delta so that contexts stay of the form `[0 ... h]`.
    public var ownRange: ClosedRange<UInt64> {
        let previous = dependencies[origin]
        return (previous == 0 ? 0 : previous + 1)...upTo
    }

    /// The number of entries carried.
    public var entryCount: Int {
        records.reduce(0) { $0 + $1.slots.reduce(0) { $0 + $1.entries.count } }
    }

    /// The delta as a state (docs/ARCHITECTURE.md §2): context = the origin's new range, each carried
    /// slot scoped by ``observed`` — and a record shipped whole scoped by it in every
    /// slot, through its record-wide scope. Applying the delta equals joining this state.
    public var state: StoreState {
        var context = CausalContext()
        context.insert(ownRange, for: origin)
        let scope = CausalContext(observed).subtracting(context)
        let slotScope = scope.isEmpty ? nil : scope
        var stateRecords: [RecordRef: Record] = [:]
        for change in records {
            var record = Record(scope: change.whole ? slotScope : nil)
            for slot in change.slots where !(slot.entries.isEmpty && scope.isEmpty) {
                // An empty slot whose scope the context already covers says nothing: omitted,
                // as a join would, so equal states have equal representations. In a whole
                // record the record's scope covers the slot's.
                record.slots[slot.key] = Slot(entries: slot.entries, scope: change.whole ? nil : slotScope)
            }
            if !record.isEmpty { stateRecords[change.ref] = record }
        }
        return StoreState(context: context, records: stateRecords)
    }

    private func validate(orderChecked: Bool) throws(ConcordError) {
        guard seq > 0 else { throw ConcordError(.malformed, "delta seq must be at least 1") }
        guard upTo > dependencies[origin] else {
            throw ConcordError(.malformed, "delta covers no new writes: upTo \(upTo) ≤ dependency \(dependencies[origin])")
        }
        let observed = self.observed
        // Entries of one replica come in runs: its bound is looked up once per run.
        var boundReplica: ReplicaID?
        var bound: UInt64 = 0
        var previous: RecordRef?
        for change in records {
            if !orderChecked {
                if let previous, !(previous < change.ref) {
                    throw ConcordError(.malformed, "records not in canonical order at \(change.ref)")
                }
                previous = change.ref
            }
            guard !change.slots.isEmpty || change.whole else {
                throw ConcordError(.malformed, "record \(change.ref) carries no slot")
            }
            let slots = change.slots
            for index in slots.indices {
                let key = slots[index].key
                if !orderChecked, index > 0, !SlotKey.canonicalOrder(slots[index - 1].key, key) {
                    throw ConcordError(.malformed, "slots of \(change.ref) not in canonical order at \(key)")
                }
                let entries = slots[index].entries
                guard !(change.whole && entries.isEmpty) else {
                    throw ConcordError(.malformed, "record \(change.ref), shipped whole, carries the empty slot \(key)")
                }
                guard orderChecked || DotStore.isWellOrdered(entries) else {
                    throw ConcordError(.malformed, "entries of \(change.ref) \(key) not sorted by stamp")
                }
                for entry in entries {
                    let dot = entry.dot
                    if dot.replica != boundReplica {
                        boundReplica = dot.replica
                        bound = observed[dot.replica]
                    }
                    guard dot.hlc <= bound else {
                        throw ConcordError(.malformed, "entry \(dot) of \(change.ref) \(key) lies outside the delta's dependencies")
                    }
                    guard orderChecked || key.accepts(entry.payload) else {
                        throw ConcordError(.malformed, "slot \(change.ref) \(key) holds a payload of the wrong kind")
                    }
                }
            }
        }
    }

}
