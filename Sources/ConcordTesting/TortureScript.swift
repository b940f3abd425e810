import ConcordCore

/// A deterministic sequence of store operations for crash tests: local writes, seals, and
/// remote deltas from a peer. A child process runs it against a store and is killed at a
/// random moment; the test replays it on a core ``Replica`` to know every state the store
/// may legitimately be in.
public struct TortureScript: Sendable {
    /// One step: one store transaction.
    public enum Step: Sendable {
        case set(RecordRef, String, ScalarValue)
        case put(RecordRef, [String: FieldWrite])
        case add(RecordRef, String, ScalarValue)
        case remove(RecordRef, String, ScalarValue)
        case delete(RecordRef)
        case seal
        case apply(Delta)
    }

    public let steps: [Step]
    /// The physical time of step `k` (1-based) is `baseMillis + k * 7`.
    public static let baseMillis: UInt64 = 1_767_225_600_000

    public static func now(step: Int) -> UInt64 { baseMillis + UInt64(step) * 7 }

    public init(seed: UInt64, count: Int) {
        var random = SeededGenerator(seed: seed)
        var peer = Replica(id: ReplicaID(high: 0xfeed, low: seed))
        var steps: [Step] = []
        let refs = (0..<6).map { RecordRef(collection: "t", id: "r\($0)") }
        for index in 1...count {
            let ref = random.pick(refs)
            let value = ScalarValue.int(Int64(random.int(0...99)))
            switch random.int(0...9) {
            case 0, 1, 2: steps.append(.set(ref, random.pick(["a", "b"]), value))
            case 3: steps.append(.put(ref, ["a": .scalar(value), "b": .scalar(.string("s\(index)"))]))
            case 4: steps.append(.add(ref, "s", value))
            case 5: steps.append(.remove(ref, "s", value))
            case 6: steps.append(.delete(ref))
            case 7: steps.append(.seal)
            default:
                try! peer.set(ref, "a", value, now: Self.now(step: index))
                steps.append(.apply(peer.seal()!))
            }
        }
        self.steps = steps
    }

    /// Runs steps `1...count` on a core replica, as the store runs them.
    public func replay(_ replica: inout Replica, through count: Int) throws(ConcordError) {
        var sealed: [Delta] = []
        var applied: [ReplicaID: UInt64] = [:]
        try replay(&replica, through: count, sealed: &sealed, applied: &applied)
    }

    /// Runs steps `1...count` on a core replica, as the store runs them, collecting the
    /// deltas it sealed (in seq order) and, per origin, the seq of the newest delta applied.
    public func replay(
        _ replica: inout Replica, through count: Int, sealed: inout [Delta], applied: inout [ReplicaID: UInt64]
    ) throws(ConcordError) {
        for index in 0..<count {
            let now = Self.now(step: index + 1)
            switch steps[index] {
            case let .set(ref, field, value): try replica.set(ref, field, value, now: now)
            case let .put(ref, fields): try replica.put(ref, fields, now: now)
            case let .add(ref, field, value): try replica.add(ref, field, value, now: now)
            case let .remove(ref, field, value): try replica.remove(ref, field, value, now: now)
            case let .delete(ref): try replica.delete(ref, now: now)
            case .seal: if let delta = replica.seal() { sealed.append(delta) }
            case let .apply(delta):
                try replica.apply(delta)
                applied[delta.origin] = max(applied[delta.origin] ?? 0, delta.seq)
            }
        }
    }
}
