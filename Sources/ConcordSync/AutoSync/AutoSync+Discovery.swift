import ConcordCore
import Logging
import Synchronization

/// The loop's side of peer discovery (docs/ARCHITECTURE.md, "The peer channel"): after each
/// sync it announces on the remote where its channel listens (rewritten when its addresses
/// or port change, when the listing no longer shows it, or past half its lifetime; withdrawn
/// when the loop stops), and dials the replicas the sync's listing of `heads/` announced
/// that it is not connected to — within the channel's peer cap, never itself, and one that
/// could not be reached again only after a backoff (2 s, doubling to 5 min), not at every poll.
extension AutoSync {
    /// What the loop holds for discovery.
    struct DiscoveryState {
        /// The announcements of other replicas the last look found holding, and those refused.
        var announced: [PeerAnnouncement] = []
        var rejected: [String] = []
        /// Replicas being dialled now.
        var dialling: Set<ReplicaID> = []
        /// Replicas that could not be reached: failures in a row, and when to try again.
        var unreachable: [ReplicaID: (failures: Int, due: UInt64)] = [:]
    }

    /// How long an announcement holds: 30 minutes, or three of the slowest pulls if longer
    /// (it is rewritten past half of it, at a sync), at most a day.
    var announcementLifetime: UInt64 {
        min(PeerAnnouncement.maxLifetime, max(1_800_000, 3 * (configuration.pullInterval ?? 0)))
    }

    /// The addresses this replica's channel is reached at: its interfaces' when it listens on
    /// every one, else the one it listens on.
    private func listeningAddresses(_ peers: PeerChannel) -> [String] {
        let host = peers.configuration.host
        return host == "0.0.0.0" ? LocalAddresses.ipv4() : [host]
    }

    /// After a sync: announce, then dial what the sync's listing announced.
    func discover() async {
        guard configuration.discovery, let peers, !stopping, !peers.isStopped, peers.port != 0 else { return }
        let logger = engine.logger(ConcordLogLabel.peers)
        let discovery: PeerDiscovery
        do {
            discovery = try await engine.discoveredPeers()
        } catch {
            logger.debug("reading peer announcements failed", metadata: ["error": "\(error)"])
            return
        }
        let addresses = listeningAddresses(peers)
        let wall = engine.clock.millisecondsSinceEpoch()
        let own = await engine.ownAnnouncement
        let rewrite = own.map { own in
            !discovery.ownListed || own.addresses != addresses || own.port != peers.port || wall >= own.written + (own.expires - own.written) / 2
        } ?? true
        if rewrite, !stopping {
            do {
                try await engine.announce(addresses: addresses, port: peers.port, lifetime: announcementLifetime)
            } catch {
                logger.debug("announcing the peer channel failed; at the next sync", metadata: ["error": "\(error)"])
            }
        }
        for line in discovery.rejected where !discoveryState.rejected.contains(line) {
            logger.notice("ignored a peer announcement: \(line)")
        }
        discoveryState.announced = discovery.announced
        discoveryState.rejected = discovery.rejected
        dialAnnounced(peers)
        changed()
    }

    /// Dials each announced replica not connected, not being dialled and not waiting out a
    /// backoff, within the channel's peer cap.
    private func dialAnnounced(_ peers: PeerChannel) {
        let now = scheduler.now()
        let connected = Set(peers.peers.map(\.replica))
        var room = peers.configuration.maxPeers - connected.count - discoveryState.dialling.count
        for announcement in discoveryState.announced where room > 0 {
            let replica = announcement.replica
            guard replica != engine.store.replicaID, !connected.contains(replica), !discoveryState.dialling.contains(replica) else { continue }
            if let due = discoveryState.unreachable[replica]?.due, due > now { continue }
            room -= 1
            discoveryState.dialling.insert(replica)
            Task { [weak self] in
                var reached = false
                for address in announcement.addresses where !reached && !peers.isStopped {
                    reached = (try? await peers.connect(host: address, port: announcement.port)) != nil
                }
                await self?.dialled(replica, reached: reached)
            }
        }
    }

    private func dialled(_ replica: ReplicaID, reached: Bool) {
        discoveryState.dialling.remove(replica)
        if reached {
            discoveryState.unreachable[replica] = nil
        } else {
            let failures = (discoveryState.unreachable[replica]?.failures ?? 0) + 1
            let delay = min(300_000, UInt64(2_000) << UInt64(min(failures - 1, 8)))
            discoveryState.unreachable[replica] = (failures, scheduler.now() + delay)
            engine.logger(ConcordLogLabel.peers).debug("an announced peer could not be reached", metadata: [
                "peer": "\(replica)", "retryInMs": "\(delay)",
            ])
        }
        changed()
    }

    /// When the loop stops: deletes this replica's announcement, waiting at most 3 s for
    /// the remote (one that cannot be reached leaves it to expire).
    func withdrawAnnouncement() async {
        guard configuration.discovery, peers != nil, await engine.ownAnnouncement != nil else { return }
        let done = Withdrawn()
        let engine = self.engine
        let withdrawal = Task {
            try? await engine.withdrawAnnouncement()
            done.flag.store(true, ordering: .releasing)
        }
        for _ in 0..<60 where !done.flag.load(ordering: .acquiring) {
            try? await Task.sleep(for: .milliseconds(50))
        }
        if !done.flag.load(ordering: .acquiring) { withdrawal.cancel() }
    }
}

/// Whether the withdrawal of an announcement finished.
private final class Withdrawn: Sendable {
    let flag = Atomic<Bool>(false)
}
