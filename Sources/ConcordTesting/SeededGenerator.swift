import ConcordCore
import Synchronization

/// A deterministic random number generator (SplitMix64): the same seed gives the same
/// sequence on every machine, so every randomized test replays from the seed it prints.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    public private(set) var state: UInt64
    /// The seed this generator started from.
    public let seed: UInt64

    public init(seed: UInt64) {
        self.seed = seed
        self.state = seed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// A value in `range`.
    public mutating func int(_ range: ClosedRange<Int>) -> Int {
        Int.random(in: range, using: &self)
    }

    /// True with probability `probability`.
    public mutating func chance(_ probability: Double) -> Bool {
        Double.random(in: 0..<1, using: &self) < probability
    }

    /// A random element of a non-empty collection.
    public mutating func pick<C: Collection>(_ collection: C) -> C.Element {
        collection[collection.index(collection.startIndex, offsetBy: Int.random(in: 0..<collection.count, using: &self))]
    }
}

/// Replica ids drawn from a seed, for `Store.Configuration.newReplicaID` (`ConcordStore`): a
/// test that replays from its seed gets the same ids, so everything ordered by id (the
/// pull's order of origins, which head a listing shows first) replays too.
public final class SeededReplicaIDs: Sendable {
    private let generator: Mutex<SeededGenerator>

    public init(seed: UInt64) {
        generator = Mutex(SeededGenerator(seed: seed))
    }

    /// The next id.
    public func next() -> ReplicaID {
        generator.withLock { ReplicaID.random(using: &$0) }
    }
}
