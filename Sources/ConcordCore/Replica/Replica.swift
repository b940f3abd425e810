/// One slot of one record: the unit of change tracking in the outbox.
public struct SlotRef: Hashable, Sendable {
    public let record: RecordRef
    public let key: SlotKey

    public init(record: RecordRef, key: SlotKey) {
        self.record = record
        self.key = key
    }
}

/// A value written to one field by a local mutation.
public enum FieldWrite: Hashable, Sendable {
    /// Set a scalar field.
    case scalar(ScalarValue)
    /// Set a file field to this content.
    case file(FileRef)
    /// Replace a set field's elements with exactly these.
    case set([ScalarValue])
}

/// An in-memory replica: a state, its hybrid logical clock, and an outbox of touched slots
/// (docs/ARCHITECTURE.md §2–§3). The pure reference for what the SQLite store persists, and the unit
/// the simulator runs.
///
/// Every mutation is one write: it takes one stamp from the clock (at `now`, physical
/// milliseconds passed in by the caller), adds or replaces the writer's liveness dot, and
/// marks the slots it touched in the outbox. ``seal()`` turns the outbox into a ``Delta``.
/// A mutation of a record this replica sees as deleted re-creates it (rule 5). No stamp it
/// applies can stop it from writing: its clock follows remote stamps only up to
/// ``HLC/maxLead`` ahead of `now` (``HybridLogicalClock``).
public struct Replica: Sendable {
    public let id: ReplicaID
    public private(set) var state: StoreState
    public private(set) var clock: HybridLogicalClock
    /// Slots touched by local writes since the last seal.
    public private(set) var outbox: Set<SlotRef>
    /// Records purged since the last seal: the next delta ships them whole.
    public private(set) var wholeRecords: Set<RecordRef>
    /// The seq of the last sealed delta (0 before the first).
    public private(set) var sealedSeq: UInt64
    /// The greatest own hlc covered by a sealed delta.
    public private(set) var sealedUpTo: UInt64

    public init(id: ReplicaID) {
        self.id = id
        state = StoreState()
        clock = HybridLogicalClock()
        outbox = []
        wholeRecords = []
        sealedSeq = 0
        sealedUpTo = 0
    }

    /// Restores a replica from persisted parts.
    public init(
        id: ReplicaID, state: StoreState, clock: HybridLogicalClock, outbox: Set<SlotRef>,
        wholeRecords: Set<RecordRef> = [], sealedSeq: UInt64, sealedUpTo: UInt64
    ) {
        self.id = id
        self.state = state
        self.clock = clock
        self.outbox = outbox
        self.wholeRecords = wholeRecords
        self.sealedSeq = sealedSeq
        self.sealedUpTo = sealedUpTo
    }

    // MARK: Writes

    /// Sets fields of a record, creating it if it is not visible (rules 1, 2 and 5).
    @discardableResult
    public mutating func put(_ ref: RecordRef, _ fields: [String: FieldWrite], now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try beginWrite(ref, now: now)
        for (name, write) in fields { apply(write, to: name, of: ref, dot: dot) }
        return dot
    }

    /// Sets one scalar field.
    @discardableResult
    public mutating func set(_ ref: RecordRef, _ field: String, _ value: ScalarValue, now: UInt64) throws(ConcordError) -> Stamp {
        try put(ref, [field: .scalar(value)], now: now)
    }

    /// Sets one file field (rule 6). Writing a version of a fork resolves it: the write has
    /// observed every version, so it supersedes them all.
    @discardableResult
    public mutating func setFile(_ ref: RecordRef, _ field: String, _ file: FileRef, now: UInt64) throws(ConcordError) -> Stamp {
        try put(ref, [field: .file(file)], now: now)
    }

    /// Resolves a file fork by keeping the version with content `hash`.
    ///
    /// - Throws: ``ConcordError/Code/invalidOperation`` if no version has that content.
    @discardableResult
    public mutating func keepVersion(_ ref: RecordRef, _ field: String, hash: ContentHash, now: UInt64) throws(ConcordError) -> Stamp {
        guard let version = state.record(ref)?.fileVersions(field).last(where: { $0.file.hash == hash }) else {
            throw ConcordError(.invalidOperation, "\(ref) has no version of \(field) with content \(hash.hex)")
        }
        return try setFile(ref, field, version.file, now: now)
    }

    /// Adds an element to a set field (rule 3).
    @discardableResult
    public mutating func add(_ ref: RecordRef, _ field: String, _ element: ScalarValue, now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try beginWrite(ref, now: now)
        clearRegister(field, of: ref)
        replace(SlotRef(record: ref, key: .element(field, element)), with: [Entry(dot: dot, payload: .marker)])
        return dot
    }

    /// Removes the adds of an element this replica has seen (rule 3).
    @discardableResult
    public mutating func remove(_ ref: RecordRef, _ field: String, _ element: ScalarValue, now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try beginWrite(ref, now: now)
        replace(SlotRef(record: ref, key: .element(field, element)), with: [])
        return dot
    }

    /// Creates (or replaces) a record with exactly `fields`: every field entry and
    /// tombstone this replica has seen is cleared (rule 5).
    @discardableResult
    public mutating func create(_ ref: RecordRef, _ fields: [String: FieldWrite], now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try nextDot(now: now)
        clearRecord(ref, keepingLiveness: false)
        touchLiveness(ref, dot: dot)
        for (name, write) in fields { apply(write, to: name, of: ref, dot: dot) }
        return dot
    }

    /// Deletes a record: removes the liveness dots and tombstones this replica has seen and
    /// leaves a tombstone of its own (rule 4). Fields are kept, so a concurrent update
    /// brings the record back whole.
    @discardableResult
    public mutating func delete(_ ref: RecordRef, now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try nextDot(now: now)
        replace(SlotRef(record: ref, key: .liveness), with: [])
        replace(SlotRef(record: ref, key: .tombstones), with: [Entry(dot: dot, payload: .marker)])
        return dot
    }

    /// Acknowledges a `deleteUpdate` conflict by keeping the record: removes the
    /// tombstones this replica has seen (rule 4).
    @discardableResult
    public mutating func keepRecord(_ ref: RecordRef, now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try beginWrite(ref, now: now)
        replace(SlotRef(record: ref, key: .tombstones), with: [])
        return dot
    }

    /// Purges dead records: drops every entry they hold — field entries, set dots and
    /// tombstones — and ships them whole in the next delta, so every replica drops what
    /// this one had seen of them. Call it only once the deletions are causally stable
    /// (every active replica has seen every entry, docs/ARCHITECTURE.md §4): then no write that has
    /// not seen a deletion can arrive from them, and the purge changes nothing anyone can
    /// observe. One write (one stamp) for all; returns it, or nil when none of `refs` is
    /// held.
    ///
    /// - Throws: ``ConcordError/Code/invalidOperation`` if one of them is visible; nothing
    ///   is purged then.
    @discardableResult
    public mutating func purge(_ refs: [RecordRef], now: UInt64) throws(ConcordError) -> Stamp? {
        let held = refs.filter { state.record($0) != nil }
        if let visible = held.first(where: { state.record($0)!.isVisible }) {
            throw ConcordError(.invalidOperation, "\(visible) is visible; only a deleted record can be purged")
        }
        guard !held.isEmpty else { return nil }
        let dot = try nextDot(now: now)
        for ref in held {
            state.updateRecord(ref) { $0 = [:] }
            wholeRecords.insert(ref)
        }
        return dot
    }

    // MARK: Sync

    /// Seals the outbox into a delta, or returns nil when nothing changed since the last
    /// seal. The delta carries the current entries of every touched slot.
    public mutating func seal() -> Delta? {
        guard hasPendingChanges else { return nil }
        let delta = makeDelta(seq: sealedSeq + 1)
        sealedSeq = delta.seq
        sealedUpTo = delta.upTo
        outbox = []
        wholeRecords = []
        return delta
    }

    /// The delta ``seal()`` would return, without sealing.
    public func pendingDelta() -> Delta? {
        hasPendingChanges ? makeDelta(seq: sealedSeq + 1) : nil
    }

    /// Whether local writes or purges wait to be sealed.
    public var hasPendingChanges: Bool { !outbox.isEmpty || !wholeRecords.isEmpty }

    private func makeDelta(seq: UInt64) -> Delta {
        var dependencies = state.context.coveredVector
        dependencies[id] = sealedUpTo
        var byRecord: [RecordRef: [(key: SlotKey, entries: [Entry])]] = [:]
        for slot in outbox where !wholeRecords.contains(slot.record) {
            let entries = state.record(slot.record)?.slots[slot.key]?.entries ?? []
            byRecord[slot.record, default: []].append((key: slot.key, entries: entries))
        }
        for ref in wholeRecords {
            byRecord[ref] = (state.record(ref)?.slots ?? [:]).map { (key: $0.key, entries: $0.value.entries) }
        }
        let records = byRecord.keys.sorted().map { ref in
            Delta.RecordChange(
                ref: ref, slots: byRecord[ref]!.sorted { SlotKey.canonicalOrder($0.key, $1.key) },
                whole: wholeRecords.contains(ref))
        }
        do {
            return try Delta(
                origin: id, seq: seq, dependencies: dependencies,
                upTo: state.context.maxHLC(for: id), records: records)
        } catch {
            preconditionFailure("a replica sealed a malformed delta: \(error)")
        }
    }

    /// Applies a remote delta and follows its stamps with the clock.
    ///
    /// - Throws: ``ConcordError/Code/notReady`` when its dependencies are not applied yet.
    @discardableResult
    public mutating func apply(_ delta: Delta) throws(ConcordError) -> ApplyOutcome {
        let outcome = try state.apply(delta)
        clock.observe(max(delta.upTo, delta.dependencies.maxHLC))
        return outcome
    }

    /// This replica's state as a snapshot another replica may join, or nil while the
    /// outbox holds unsealed changes.
    ///
    /// A snapshot must hold only sealed changes: if replica A joined B's unsealed writes and
    /// B joined A's, each one's next delta would depend on the other's and neither could
    /// ever be applied first. So snapshots are taken with an empty outbox — right after
    /// ``seal()``, as push does.
    public var snapshot: StoreState? { hasPendingChanges ? nil : state }

    /// Joins a full state (a snapshot). Local unsealed changes stay in the outbox.
    public mutating func join(snapshot: StoreState) {
        state.join(snapshot)
        clock.observe(snapshot.context.ranges.values.compactMap { $0.last?.upperBound }.max() ?? 0)
    }

    // MARK: Slot updates

    private mutating func nextDot(now: UInt64) throws(ConcordError) -> Stamp {
        // The clock must also pass every own dot already seen (e.g. from a snapshot).
        clock.pass(state.context.maxHLC(for: id))
        let dot = Stamp(hlc: try clock.tick(physicalMillis: now), replica: id)
        // A replica has seen every dot it issued: its own context stays `[0 ... latest]`.
        state.context.insert(0...dot.hlc, for: id)
        return dot
    }

    /// Takes a stamp for a write to `ref`, re-creating the record first if it is not
    /// visible, and replaces the writer's liveness dot.
    private mutating func beginWrite(_ ref: RecordRef, now: UInt64) throws(ConcordError) -> Stamp {
        let dot = try nextDot(now: now)
        if let record = state.record(ref), !record.isVisible {
            clearRecord(ref, keepingLiveness: true)
        }
        touchLiveness(ref, dot: dot)
        return dot
    }

    private mutating func touchLiveness(_ ref: RecordRef, dot: Stamp) {
        let current = state.record(ref)?.slots[.liveness]?.entries ?? []
        var entries = current.filter { $0.dot.replica != id }
        // Sorted by dot: the new dot is not always the greatest — a remote dot more than
        // the clock's lead ahead keeps a greater stamp (``HybridLogicalClock``).
        let index = entries.firstIndex { dot < $0.dot } ?? entries.endIndex
        entries.insert(Entry(dot: dot, payload: .marker), at: index)
        replace(SlotRef(record: ref, key: .liveness), with: entries)
    }

    private mutating func apply(_ write: FieldWrite, to name: String, of ref: RecordRef, dot: Stamp) {
        switch write {
        case let .scalar(value):
            clearElements(name, of: ref)
            replace(SlotRef(record: ref, key: .field(name)), with: [Entry(dot: dot, payload: .scalar(value))])
        case let .file(file):
            clearElements(name, of: ref)
            replace(SlotRef(record: ref, key: .field(name)), with: [Entry(dot: dot, payload: .file(file))])
        case let .set(elements):
            clearRegister(name, of: ref)
            clearElements(name, of: ref)
            for element in Set(elements) {
                replace(SlotRef(record: ref, key: .element(name, element)), with: [Entry(dot: dot, payload: .marker)])
            }
        }
    }

    private mutating func clearRegister(_ name: String, of ref: RecordRef) {
        if state.record(ref)?.slots[.field(name)] != nil {
            replace(SlotRef(record: ref, key: .field(name)), with: [])
        }
    }

    private mutating func clearElements(_ name: String, of ref: RecordRef) {
        guard let record = state.record(ref) else { return }
        for key in record.slots.keys {
            if case let .element(field, _) = key, Bytewise.equal(field, name) {
                replace(SlotRef(record: ref, key: key), with: [])
            }
        }
    }

    /// Clears every slot of a record this replica holds (all of them observed).
    private mutating func clearRecord(_ ref: RecordRef, keepingLiveness: Bool) {
        guard let record = state.record(ref) else { return }
        for key in record.slots.keys where !(keepingLiveness && key == .liveness) {
            replace(SlotRef(record: ref, key: key), with: [])
        }
    }

    /// Replaces a slot's entries with `entries` (every current entry was observed) and
    /// records the slot in the outbox.
    private mutating func replace(_ slot: SlotRef, with entries: [Entry]) {
        outbox.insert(slot)
        state.updateRecord(slot.record) { slots in
            slots[slot.key] = entries.isEmpty ? nil : Slot(entries: entries)
        }
    }
}
