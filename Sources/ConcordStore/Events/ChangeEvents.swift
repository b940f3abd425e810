import ConcordCore
import Synchronization

/// One record changed: by a local write or by a remote delta (docs/ARCHITECTURE.md §3).
public struct ChangeEvent: Hashable, Sendable {
    /// Where a change came from.
    public enum Origin: Hashable, Sendable {
        case local
        case remote(ReplicaID)
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

    /// Every change to this store from now on — local writes and applied remote deltas
    /// alike — one event per changed record, delivered after the change commits.
    public func changes() -> AsyncStream<ChangeEvent> {
        events.subscribe()
    }
}
