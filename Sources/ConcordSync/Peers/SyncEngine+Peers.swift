import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

extension SyncEngine {
    /// What became of a batch a peer sent (``receive(_:)``).
    public enum PeerReceipt: Hashable, Sendable {
        /// Its changes are in the store now.
        case applied
        /// The store had it already (from the remote, or sent before): nothing changed.
        case alreadyApplied
        /// It cannot apply yet: an earlier batch of its origin, another origin's changes it
        /// depends on, or files it references are missing here. It waits, or the remote
        /// brings it.
        case notReady
    }

    /// What a relayed batch found on the remote (``relay(path:bytes:)``).
    public enum RelayOutcome: Hashable, Sendable {
        /// The remote holds these very bytes: its origin pushed them, or another peer relayed them.
        case found
        /// The remote did not hold it: the bytes are there now.
        case put
        /// The remote holds other authentic bytes under that name; they stay (the origin's
        /// history forked, which its own sync reports).
        case differs
    }

    /// A peer channel for this replica, keyed by the store key — generation 0's, the same
    /// across rotations (docs/ARCHITECTURE.md, "The
    /// peer channel"). Give it to ``AutoSync``, which applies what it delivers and sends
    /// this replica's batches as it seals them.
    public nonisolated func peerChannel(configuration: PeerChannel.Configuration = PeerChannel.Configuration()) -> PeerChannel {
        PeerChannel(replica: store.replicaID, key: baseKey.subkey(for: .peers), configuration: configuration, logger: logger(ConcordLogLabel.peers))
    }

    /// Seals what the outbox holds (in bounded batches, as a push does) and returns this
    /// replica's sealed batches after `seq` — at most the newest `limit` of them — by remote
    /// path and the very bytes a push puts there (sealing is deterministic).
    func sealedBatches(after seq: UInt64, limit: Int) throws(ConcordError) -> [(seq: UInt64, path: String, bytes: [UInt8])] {
        while try store.seal(maxSlots: Self.maxSlotsPerBatch) != nil {}
        let sealed = try store.sealedSeq()
        guard sealed > seq else { return [] }
        let from = max(seq + 1, sealed > UInt64(limit) ? sealed - UInt64(limit) + 1 : 1)
        var batches: [(seq: UInt64, path: String, bytes: [UInt8])] = []
        for next in from...sealed {
            guard let plaintext = try store.sealedBytes(seq: next) else { continue }
            let (path, bytes) = writes.sealBatch(plaintext, of: store.replicaID, seq: next)
            batches.append((next, path, bytes))
        }
        return batches
    }

    /// Opens the batch a peer sent through the same checks as one fetched from the remote
    /// (`RemoteObjects`: authenticated for its path, decoded, its origin and seq those its
    /// path names) and applies it as a pull would. Throws what opening throws — a forged,
    /// moved or damaged object: drop its sender — and what applying throws.
    public func receive(_ delivery: PeerChannel.Delivery) async throws(ConcordError) -> PeerReceipt {
        let (delta, fingerprint) = try objects.openFingerprintedBatch(delivery.bytes, origin: delivery.origin, seq: delivery.seq)
        let applied = try store.appliedSeqs()[delivery.origin] ?? 0
        if delivery.seq <= applied { return .alreadyApplied }
        guard delivery.seq == applied + 1 else { return .notReady }
        // The renamed side of a merged fork is never applied under the forked name: the pull
        // applies it renamed, or joins the side this store lacks from a snapshot.
        if Self.isRenamedSide(delivery.origin, seq: delivery.seq, digest: fingerprint.digest, forks: try decidedForks()) { return .notReady }
        var report = SyncReport()
        switch try await apply(delta, fingerprint: fingerprint, into: &report) {
        case .applied: return report.applied > 0 ? .applied : .alreadyApplied
        case .notReady, .missingFile, .forked: return .notReady
        }
    }

    /// Makes sure the remote holds the batch a peer sent (`bytes` at `path`), putting it
    /// there if it does not: the remote stays the source of truth even when the peer that
    /// sent it is never seen again. Other authentic bytes under the name are left alone.
    public func relay(path: String, bytes: [UInt8]) async throws(ConcordError) -> RelayOutcome {
        if let there = try await objects.authenticBytes(at: path) { return there == bytes ? .found : .differs }
        try await writes.put(bytes, at: path)
        return .put
    }
}
