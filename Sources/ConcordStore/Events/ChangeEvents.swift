import ConcordCore
import Synchronization

/// One record changed: by a local write, a remote delta or a joined snapshot
/// (docs/ARCHITECTURE.md §3).
public struct ChangeEvent: Hashable, Sendable {
    /// Where a change came from.
    public enum Origin: Hashable, Sendable {
        /// A write of this replica: it has something to push.
        case local
        /// Another replica's delta, applied.
        case remote(ReplicaID)
        /// A joined snapshot: changes of any number of replicas at once, none of them this
        /// replica's to push.
        case snapshot
    }

    public let ref: RecordRef
    /// The fields whose slots changed; empty when only the record's liveness or tombstones
    /// did (it appeared, disappeared, or a conflict opened or closed).
    public let fields: Set<String>
    public let origin: Origin

    public init(ref: RecordRef, fields: Set<String>, origin: Origin) {
        self.ref = ref
        self.fields = fields
        self.origin = origin
    }
}

extension Store {
    /// Publishes the changes of one committed transaction, one event per record, in record order.
    func publishChanges(_ events: [ChangeEvent]) {
        for event in events.sorted(by: { $0.ref < $1.ref }) { self.events.publish(event) }
    }

    /// Publishes the changes of one committed transaction, if anyone listens: the sets of
    /// field names are built only then.
    func publishChanges(_ changes: ChangedFields, origin: ChangeEvent.Origin) {
        guard events.hasSubscribers else { return }
        publishChanges(changes.names.map { ChangeEvent(ref: $0.key, fields: $0.value, origin: origin) })
    }

    /// Every change to this store from now on — local writes and applied remote deltas
    /// alike — one event per changed record, delivered after the change commits.
    ///
    /// ```swift
    /// for await change in store.changes() where change.origin != .local {
    ///     print("\(change.ref) changed elsewhere: \(change.fields.sorted())")
    /// }
    /// ```
    ///
    /// (One
    /// exception: a new replica's first snapshot, joined as it is read, keeps its events only
    /// if a stream was subscribed when the join began, so that joining a million records
    /// holds no million events for nobody; subscribe before the first sync.)
    public func changes() -> AsyncStream<ChangeEvent> {
        events.subscribe()
    }
}

/// The fields one transaction changed, per record, for its change events. Records are
/// listed as they are noted and names appended as they change, repeats and all (appending
/// costs less than hashing each record and name), and made into one set per record only
/// when the events are published to a subscriber.
struct ChangedFields {
    /// The records noted, each with the names noted for it; a record noted again after
    /// another is listed again.
    private var notes: [(ref: RecordRef, names: [String])] = []

    init() {}

    init(_ sets: [RecordRef: Set<String>]) {
        notes = sets.map { ($0.key, Array($0.value)) }
    }

    /// Notes that `changed` fields of `ref` changed; none: the record itself (its liveness
    /// or tombstones).
    mutating func note(_ changed: some Collection<String>, of ref: RecordRef) {
        if let last = notes.indices.last, notes[last].ref == ref {
            notes[last].names.append(contentsOf: changed)
        } else {
            var names: [String] = []
            names.reserveCapacity(Swift.max(changed.count, 8))  // a record's fields are usually noted one by one
            names.append(contentsOf: changed)
            notes.append((ref, names))
        }
    }

    /// Whether `ref` is the record noted last.
    func isLast(_ ref: RecordRef) -> Bool {
        notes.last?.ref == ref
    }

    /// Notes that field `name` of the record noted last changed.
    mutating func noteOfLast(_ name: String) {
        notes[notes.count - 1].names.append(name)
    }

    /// Every record noted, with the set of its changed fields.
    var names: [RecordRef: Set<String>] {
        var sets: [RecordRef: Set<String>] = [:]
        for note in notes { sets[note.ref, default: []].formUnion(note.names) }
        return sets
    }
}

/// The changes of one transaction that may touch millions of records (a bootstrap's
/// snapshot join, published with the origin ``ChangeEvent/Origin/snapshot``), kept
/// compactly until they are published: records with the same fields share one set. Nothing
/// is kept when the store has no subscriber at the start.
struct ChangeList {
    private let keeping: Bool
    private var refs: [RecordRef] = []
    private var setOfRecord: [Int] = []
    private var sets: [Set<String>] = []
    private var indexOfSet: [Set<String>: Int] = [:]

    init(for store: Store) {
        keeping = store.events.hasSubscribers
    }

    /// Notes that the record `ref` now holds `slots`: all its fields and elements changed.
    mutating func append(_ ref: RecordRef, _ slots: [(key: SlotKey, entries: [Entry])]) {
        guard keeping else { return }
        let fields = Set(slots.compactMap(\.key.fieldName))
        let index: Int
        if let known = indexOfSet[fields] {
            index = known
        } else {
            index = sets.count
            sets.append(fields)
            indexOfSet[fields] = index
        }
        refs.append(ref)
        setOfRecord.append(index)
    }

    /// Publishes one event per record, in the order they were appended.
    func publish(to store: Store) {
        for (ref, set) in zip(refs, setOfRecord) { store.events.publish(ChangeEvent(ref: ref, fields: sets[set], origin: .snapshot)) }
    }
}
