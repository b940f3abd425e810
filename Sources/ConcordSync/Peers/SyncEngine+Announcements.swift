import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// What the listings of `heads/` showed of peer announcements, and what reading each gave.
struct AnnouncementsSeen: Sendable {
    /// The announcement objects the last listing showed.
    var listed: [RemoteObject] = []
    /// Each one read, by path: its listing signature then, and what it opened to (or why not).
    var read: [String: (signature: ListingSignature?, outcome: Result<PeerAnnouncement, ConcordError>)] = [:]
    /// This replica's own announcement as it put it last (nil: none, or withdrawn).
    var own: PeerAnnouncement?
}

/// The peer announcements of other replicas that the last listing of `heads/` showed
/// (``SyncEngine/discoveredPeers()``).
public struct PeerDiscovery: Hashable, Sendable {
    /// Announcements that opened and still hold, in replica order.
    public var announced: [PeerAnnouncement] = []
    /// Announcements that opened but expired: not dialled.
    public var expired: [PeerAnnouncement] = []
    /// Announcement objects refused, each with why: torn, forged, tampered, too large, an
    /// announcement of this replica that it did not write. Never dialled.
    public var rejected: [String] = []
    /// Whether the listing showed this replica's own announcement.
    public var ownListed = false
    public init() {}
}

extension SyncEngine {
    /// The most announcements of other replicas one look reads (new or changed since the
    /// last; the others wait for the next look), and the most listed ones it considers.
    static let maxAnnouncementsRead = 32
    static let maxAnnouncementsConsidered = 256
    /// An announcement the listing shows unchanged for this long is stale (its replica is
    /// gone without withdrawing it): compaction deletes it.
    static let staleAnnouncementAge: UInt64 = 2 * PeerAnnouncement.maxLifetime

    /// The name of `replica`'s announcement: `heads/peers/<tag>`, the tag keyed by the store
    /// key, so the name says nothing of the replica to the storage.
    public nonisolated func announcementPath(of replica: ReplicaID) -> String {
        RemoteLayout.announcement(tag: baseKey.subkey(for: .peerAnnouncementNames).keyedTag(of: replica.bytes))
    }

    /// Puts this replica's announcement: its channel listens on `addresses` at `port`, for
    /// `lifetime` milliseconds from now (at most ``PeerAnnouncement/maxLifetime``). Sealed
    /// under the current key generation, signed in a shared store, with a random nonce (it
    /// is rewritten in place).
    @discardableResult
    public func announce(addresses: [String], port: UInt16, lifetime: UInt64) async throws(ConcordError) -> PeerAnnouncement {
        let now = clock.millisecondsSinceEpoch()
        let announcement = PeerAnnouncement(
            replica: store.replicaID, addresses: Array(addresses.filter(PeerAnnouncement.isIPv4).prefix(RemoteLayout.maxAnnouncedAddresses)),
            port: port, written: now, expires: now + min(max(1, lifetime), PeerAnnouncement.maxLifetime))
        let path = announcementPath(of: store.replicaID)
        try await writes.put(EncryptedObject.encrypt(gate.sign(announcement.json(), path: path), path: path, key: keys.announcements), at: path)
        announcements.own = announcement
        return announcement
    }

    /// This replica's announcement as last put, unless withdrawn since.
    public var ownAnnouncement: PeerAnnouncement? { announcements.own }

    /// Deletes this replica's announcement (its channel stops listening).
    public func withdrawAnnouncement() async throws(ConcordError) {
        try await writes.delete(announcementPath(of: store.replicaID))
        announcements.own = nil
    }

    /// The announcements of other replicas the last listing of `heads/` showed (a sync's,
    /// compaction's: no request of its own), each opened once and again only when the
    /// listing shows it changed: at most `maxAnnouncementsRead` (32) reads a call, each within
    /// `RemoteLayout.maxAnnouncementSize` (one the listing shows larger is refused unread).
    /// An announcement opens only under the store key, for its own name, signed by a member
    /// in a shared store; anything else is named in ``PeerDiscovery/rejected``.
    public func discoveredPeers() async throws(ConcordError) -> PeerDiscovery {
        var discovery = PeerDiscovery()
        let own = announcementPath(of: store.replicaID)
        let listed = announcements.listed.sorted { $0.path < $1.path }.prefix(Self.maxAnnouncementsConsidered)
        let paths = Set(listed.map(\.path))
        announcements.read = announcements.read.filter { paths.contains($0.key) }
        var reads = 0
        for object in listed {
            if object.path == own {
                discovery.ownListed = true
                continue
            }
            let signature = object.size != nil || object.modified != nil ? ListingSignature(size: object.size, modified: object.modified) : nil
            if let size = object.size, size > RemoteLayout.maxAnnouncementSize {
                announcements.read[object.path] = (signature, .failure(ConcordError(.limitExceeded, "peer announcement \(object.path) is \(size) bytes, past the \(RemoteLayout.maxAnnouncementSize) an announcement may have")))
            } else if signature == nil || announcements.read[object.path]?.signature != signature {
                guard reads < Self.maxAnnouncementsRead else { continue }
                reads += 1
                let outcome = try await readAnnouncement(at: object.path)
                announcements.read[object.path] = (signature, outcome)
            }
            switch announcements.read[object.path]?.outcome {
            case let .success(announcement)?:
                if announcement.isExpired(at: clock.millisecondsSinceEpoch()) {
                    discovery.expired.append(announcement)
                } else {
                    discovery.announced.append(announcement)
                }
            case let .failure(error)? where error.code != .notReady: discovery.rejected.append("\(object.path): \(error.message)")
            case .failure?, nil: break
            }
        }
        discovery.announced.sort { $0.replica < $1.replica }
        discovery.expired.sort { $0.replica < $1.replica }
        return discovery
    }

    /// The announcement at `path`, or why it does not count. Throws only when the remote fails.
    private func readAnnouncement(at path: String) async throws(ConcordError) -> Result<PeerAnnouncement, ConcordError> {
        do throws(ConcordError) {
            guard let sealed = try await objects.fetch(path) else {
                return .failure(ConcordError(.notReady, "peer announcement \(path) is gone"))
            }
            let plaintext = try EncryptedObject.open(sealed, path: path, key: try keys.opening(.peerAnnouncements, sealed, at: path))
            let json = try gate.openAnnouncement(plaintext, path: path) { (json: [UInt8]) throws(ConcordError) -> ReplicaID in
                try PeerAnnouncement.replica(in: json, path: path)
            }
            let announcement = try PeerAnnouncement.decode(json, path: path)
            guard announcementPath(of: announcement.replica) == path else {
                throw ConcordError(.malformed, "peer announcement \(path) announces \(announcement.replica), whose announcement has another name: it was moved")
            }
            guard announcement.replica != store.replicaID else {
                throw ConcordError(.malformed, "peer announcement \(path) announces this replica, which did not write it")
            }
            return .success(announcement)
        } catch where Self.isDamage(error) {
            return .failure(error)
        }
    }

    /// Deletes announcements the last listing showed unchanged for
    /// ``staleAnnouncementAge``: their replicas stopped without withdrawing them. One a
    /// listing gives no time for stays. Returns their paths.
    func expireStaleAnnouncements() async throws(ConcordError) -> [String] {
        let now = clock.millisecondsSinceEpoch()
        var deleted: [String] = []
        for object in announcements.listed {
            guard let modified = object.modified, modified <= now, now - modified >= Self.staleAnnouncementAge else { continue }
            try await writes.delete(object.path)
            deleted.append(object.path)
        }
        return deleted
    }
}
