import ConcordCore

/// The loop's side of the peer channel (docs/ARCHITECTURE.md, "The peer channel"): it
/// sends this replica's batches to the connected peers as soon as the push debounce seals
/// them — without waiting for the remote, or for a retry while the remote fails — applies
/// what peers send between syncs (never during one), and puts on the remote every batch
/// it applied from a peer that the remote lacks after ``Configuration/relayGrace``.
extension AutoSync {
    /// What the loop holds for its peer channel.
    struct PeerState {
        /// This replica's newest batch sent to peers.
        var sharedThrough: UInt64 = 0
        /// When to seal and send what was committed (and when the oldest commit it covers was
        /// noted), and when to apply what peers sent.
        var shareDue: UInt64?
        var firstUnshared: UInt64?
        var deliverDue: UInt64?
        /// Deliveries not yet looked at, and those that could not apply yet.
        var inbox: [PeerChannel.Delivery] = []
        var waiting: [PeerChannel.Delivery] = []
        /// Batches applied from peers that the remote was not yet seen to hold, by path.
        var relay: [String: Relayed] = [:]
        var relayBytes = 0
        var relayDue: UInt64?
        var listener: Task<Void, Never>?
    }

    struct Relayed {
        let bytes: [UInt8]
        let receivedAt: UInt64
    }

    /// The most batches from peers held at once, waiting to apply or to be found on the
    /// remote, and their most bytes. A batch past these is not applied: the remote brings it.
    static let maxHeldFromPeers = 1_024
    static let maxHeldBytesFromPeers = 128 << 20
    /// The most of this replica's sealed batches sent at once (to a peer that connected late).
    static let maxSharedAtOnce = 64

    func startPeers() {
        guard let peers else { return }
        peerState.sharedThrough = (try? engine.store.sealedSeq()) ?? 0
        let deliveries = peers.deliveries()
        peerState.listener = Task { [weak self] in
            for await delivery in deliveries {
                guard let self else { return }
                await self.received(delivery)
            }
        }
    }

    func stopPeers() {
        peerState.listener?.cancel()
        peerState.listener = nil
        peers?.stop()
    }

    /// A peer's batch: applied at once (between syncs).
    private func received(_ delivery: PeerChannel.Delivery) {
        guard !stopping else {
            peers?.consumed(delivery)
            return
        }
        counters.peerDeliveries += 1
        peerState.inbox.append(delivery)
        peerState.deliverDue = peerState.deliverDue ?? scheduler.now()
        if !paused && wakeUp != nil { wake() }
    }

    /// Plans sending what was committed with the push's debounce and longest delay, counted
    /// from the commits not shared yet — not the push's, which waits for a failing remote.
    func planShare() {
        guard peers != nil else { return }
        let now = scheduler.now()
        let first = peerState.firstUnshared ?? now
        peerState.firstUnshared = first
        peerState.shareDue = min(now + configuration.pushDebounce, first + configuration.pushMaxDelay)
    }

    /// Plans sending at once what a sync sealed.
    func planShareNow() {
        guard peers != nil else { return }
        peerState.shareDue = scheduler.now()
    }

    /// Seals what was committed and sends the batches sealed since the last share to every
    /// connected peer. With no peer connected it does nothing: the push seals.
    func share() async {
        peerState.shareDue = nil
        peerState.firstUnshared = nil
        guard let peers, !peers.peers.isEmpty else { return }
        do {
            let batches = try await engine.sealedBatches(after: peerState.sharedThrough, limit: Self.maxSharedAtOnce)
            for batch in batches { peers.send(path: batch.path, bytes: batch.bytes) }
            if let last = batches.last { peerState.sharedThrough = last.seq }
            counters.batchesShared += batches.count
        } catch {
            engine.logger(ConcordLogLabel.autoSync).debug("sealing for peers failed", metadata: ["error": "\(error)"])
        }
        changed()
    }

    /// Applies what peers sent, each batch opened as one fetched from the remote; the
    /// sender of one that does not open is dropped.
    func deliver() async {
        peerState.deliverDue = nil
        guard let peers else { return }
        var pending = peerState.waiting + peerState.inbox
        // Taken: the channel may read more (the inbox is bounded by its pending bytes).
        for delivery in peerState.inbox { peers.consumed(delivery) }
        peerState.inbox = []
        peerState.waiting = []
        var progress = true
        while progress && !pending.isEmpty {
            progress = false
            var still: [PeerChannel.Delivery] = []
            for delivery in pending {
                // Only what can be held until the remote is seen to have it is applied.
                guard peerState.relay.count < Self.maxHeldFromPeers,
                    peerState.relayBytes + delivery.bytes.count <= Self.maxHeldBytesFromPeers
                else { continue }
                do {
                    switch try await engine.receive(delivery) {
                    case .applied:
                        counters.peerApplied += 1
                        holdForRelay(delivery)
                        progress = true
                    case .alreadyApplied:
                        break
                    case .notReady:
                        still.append(delivery)
                    }
                } catch where SyncEngine.isDamage(error) || error.code == .authenticationFailed {
                    counters.peerRejected += 1
                    peers.drop(delivery.peer, reason: "its batch \(delivery.path) does not open: \(error.message)")
                } catch {
                    // The store or the remote (fetching a file) failed: the remote brings it.
                    engine.logger(ConcordLogLabel.autoSync).debug("a peer's batch did not apply", metadata: ["path": "\(delivery.path)", "error": "\(error)"])
                }
            }
            pending = still
        }
        // Those that wait are bounded too: the oldest go first (the remote brings them).
        var bytes = 0
        peerState.waiting = Array(pending.reversed().prefix { delivery in
            bytes += delivery.bytes.count
            return bytes <= Self.maxHeldBytesFromPeers
        }.prefix(Self.maxHeldFromPeers).reversed())
        changed()
    }

    private func holdForRelay(_ delivery: PeerChannel.Delivery) {
        guard peerState.relay[delivery.path] == nil else { return }
        peerState.relay[delivery.path] = Relayed(bytes: delivery.bytes, receivedAt: scheduler.now())
        peerState.relayBytes += delivery.bytes.count
        planRelay()
    }

    /// Plans the look at the remote for the oldest batch held from a peer.
    func planRelay() {
        peerState.relayDue = peerState.relay.values.map { $0.receivedAt + configuration.relayGrace }.min()
    }

    /// For each batch held from a peer for ``Configuration/relayGrace``: found on the
    /// remote, or put there. A failure waits for the next successful sync.
    func relayHeld() async {
        peerState.relayDue = nil
        let now = scheduler.now()
        for (path, held) in peerState.relay.sorted(by: { $0.key < $1.key }) where now >= held.receivedAt + configuration.relayGrace {
            do {
                if try await engine.relay(path: path, bytes: held.bytes) == .put { counters.batchesRelayed += 1 }
                peerState.relay[path] = nil
                peerState.relayBytes -= held.bytes.count
            } catch {
                engine.logger(ConcordLogLabel.autoSync).debug("relaying a peer's batch failed; after the next sync", metadata: ["path": "\(path)", "error": "\(error)"])
                changed()
                return
            }
        }
        planRelay()
        changed()
    }

    /// Batches held from peers not yet found on the remote, for ``Status``.
    var heldFromPeers: Int { peerState.relay.count }
}
