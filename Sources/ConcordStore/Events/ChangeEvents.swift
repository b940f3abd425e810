import ConcordCore
import Synchronization

/// One record changed: by a local write or by a remote delta (DESIGN.md §3).
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

/// Fans change events out to every subscriber, after the transaction that made them commits.
final class ChangeBroadcaster: Sendable {
    private let subscribers = Mutex<[Int: AsyncStream<ChangeEvent>.Continuation]>([:])
    private let nextID = Mutex(0)

    func subscribe() -> AsyncStream<ChangeEvent> {
        let id = nextID.withLock { value in
            value += 1
            return value
        }
        return AsyncStream(bufferingPolicy: .unbounded) { continuation in
            subscribers.withLock { $0[id] = continuation }
            continuation.onTermination = { [weak self] _ in
                _ = self?.subscribers.withLock { $0.removeValue(forKey: id) }
            }
        }
    }

    func publish(_ events: [ChangeEvent]) {
        guard !events.isEmpty else { return }
        let sorted = events.sorted { $0.ref < $1.ref }
        for continuation in subscribers.withLock({ Array($0.values) }) {
            for event in sorted { continuation.yield(event) }
        }
    }
}

extension Store {
    /// Every change to this store from now on — local writes and applied remote deltas
    /// alike — one event per changed record, delivered after the change commits.
    public func changes() -> AsyncStream<ChangeEvent> {
        events.subscribe()
    }
}
