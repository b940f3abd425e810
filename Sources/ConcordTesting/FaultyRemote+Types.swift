import ConcordCore

/// What a ``FaultyRemote`` is told to inject, and what it counts.
extension FaultyRemote {
    /// Which faults to inject, each with its own probability per call (0 = never, 1 = always).
    public struct Plan: Hashable, Sendable {
        /// A call throws ``/ConcordRemote/ConcordCore/ConcordError/Code/remote`` and does nothing.
        public var failure: Double = 0
        /// A call is slow: counted in ``Counts/slow`` and delayed by a random time up to
        /// ``slowDelay`` (with a zero bound, it only yields to other tasks).
        public var slow: Double = 0
        /// The bound of a slow call's delay. Keep it small; tests must not depend on timing.
        public var slowDelay: Duration = .zero
        /// A put or stream put reports success and writes nothing.
        public var lostPut: Double = 0
        /// A put or stream put writes a strict prefix of its bytes (possibly none) as the whole
        /// object; then throws or reports success, as ``tornPutReportsSuccess`` says. An empty
        /// object cannot be torn, and is written whole.
        public var tornPut: Double = 0
        /// Whether a torn put reports success (a misbehaving sync client) rather than throwing
        /// ``/ConcordRemote/ConcordCore/ConcordError/Code/remote`` (a dropped connection).
        public var tornPutReportsSuccess = false
        /// A mutation (put, stream put, delete) is done, then throws ``/ConcordRemote/ConcordCore/ConcordError/Code/remote``
        /// as if the reply had been lost.
        public var lostAcknowledgement: Double = 0
        /// A delete reports success and deletes nothing.
        public var lostDelete: Double = 0
        /// A listing returns one of the last ``rememberedListings`` listings of the same
        /// prefix instead of the current one (if there is an earlier one).
        public var staleListing: Double = 0
        /// A listing drops a random non-empty subset of its entries.
        public var incompleteListing: Double = 0
        /// A listing repeats some of its entries (at least one).
        public var duplicatedListing: Double = 0
        /// A listing comes back shuffled.
        public var reorderedListing: Double = 0

        /// No faults: the wrapper only counts calls.
        public static let none = Plan()

        /// A plan with the given probabilities; every fault is off unless named.
        public init(
            failure: Double = 0, slow: Double = 0, slowDelay: Duration = .zero,
            lostPut: Double = 0, tornPut: Double = 0, tornPutReportsSuccess: Bool = false,
            lostAcknowledgement: Double = 0, lostDelete: Double = 0,
            staleListing: Double = 0, incompleteListing: Double = 0,
            duplicatedListing: Double = 0, reorderedListing: Double = 0
        ) {
            self.failure = failure
            self.slow = slow
            self.slowDelay = slowDelay
            self.lostPut = lostPut
            self.tornPut = tornPut
            self.tornPutReportsSuccess = tornPutReportsSuccess
            self.lostAcknowledgement = lostAcknowledgement
            self.lostDelete = lostDelete
            self.staleListing = staleListing
            self.incompleteListing = incompleteListing
            self.duplicatedListing = duplicatedListing
            self.reorderedListing = reorderedListing
        }

        /// Every fault at probability `probability` (slow calls only yield; torn puts throw).
        public static func uniform(_ probability: Double) -> Plan {
            Plan(
                failure: probability, slow: probability, lostPut: probability, tornPut: probability,
                lostAcknowledgement: probability, lostDelete: probability, staleListing: probability,
                incompleteListing: probability, duplicatedListing: probability, reorderedListing: probability
            )
        }
    }

    /// What the mutation that crashes leaves in storage.
    public enum CrashEffect: Hashable, Sendable {
        /// Nothing: the process died before the request left.
        case dropped
        /// All of it: the request completed but the process died before seeing the reply.
        case applied
        /// A strict prefix of a put's bytes (a delete is dropped): the upload was cut off and
        /// the storage kept what arrived.
        case torn
        /// One of the above, drawn from the seed.
        case random
    }

    /// How many calls of each kind were made, and how many faults were injected.
    public struct Counts: Hashable, Sendable {
        /// Calls of `put`.
        public var puts = 0
        /// Calls of `get`.
        public var gets = 0
        /// Calls of `list(prefix:)`.
        public var lists = 0
        /// Calls of `delete`.
        public var deletes = 0
        /// Calls of `putStream`.
        public var putStreams = 0
        /// Calls of `getStream`.
        public var getStreams = 0

        /// Calls failed on purpose (``Plan/failure``).
        public var failed = 0
        /// Calls made slow (``Plan/slow``).
        public var slow = 0
        /// Puts and stream puts lost (``Plan/lostPut``).
        public var lostPuts = 0
        /// Puts and stream puts torn (``Plan/tornPut``).
        public var tornPuts = 0
        /// Mutations done whose reply was lost (``Plan/lostAcknowledgement``).
        public var lostAcknowledgements = 0
        /// Deletes lost (``Plan/lostDelete``).
        public var lostDeletes = 0
        /// Listings answered with an earlier listing (``Plan/staleListing``).
        public var staleListings = 0
        /// Listings with entries dropped (``Plan/incompleteListing``).
        public var incompleteListings = 0
        /// Listings with entries repeated (``Plan/duplicatedListing``).
        public var duplicatedListings = 0
        /// Listings shuffled (``Plan/reorderedListing``).
        public var reorderedListings = 0
        /// Calls that threw ``ConcordCore/ConcordError/Code/simulatedCrash`` (the crashing one included).
        public var crashed = 0
        /// Times the wrapped remote went back to an earlier copy (``rollback(to:)``).
        public var rollbacks = 0
        /// Objects deleted behind the replicas' backs (``vanish(prefix:probability:)``).
        public var vanished = 0

        /// All zero.
        public init() {}

        /// Every request made, of every kind.
        public var requests: Int { puts + gets + lists + deletes + putStreams + getStreams }
        /// Mutating requests: puts, stream puts, deletes.
        public var mutations: Int { puts + putStreams + deletes }
    }
}
