/// The identity and order of one write: a hybrid-logical-clock value and the replica that
/// wrote it (docs/ARCHITECTURE.md §2, "Stamps").
///
/// Stamps are totally ordered by `hlc`, then `replica`, and unique: a replica never issues
/// the same `hlc` twice. A stamp doubles as the write's *dot*, its causal identity.
public struct Stamp: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The hybrid logical clock value: 48 bits of physical milliseconds, 16 of counter.
    public let hlc: UInt64
    /// The replica that issued it.
    public let replica: ReplicaID

    public init(hlc: UInt64, replica: ReplicaID) {
        self.hlc = hlc
        self.replica = replica
    }

    public static func < (lhs: Stamp, rhs: Stamp) -> Bool {
        lhs.hlc != rhs.hlc ? lhs.hlc < rhs.hlc : lhs.replica < rhs.replica
    }

    public var description: String { "\(HLC.describe(hlc))@\(replica)" }
}
