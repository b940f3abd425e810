import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
@testable import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Peer discovery through announcements on the remote (`heads/peers/<tag>`): two loops given
/// no address find each other and pass a write with the remote gone; an announcement that is
/// forged, tampered, moved or too large is refused and named, an expired one is not dialled,
/// doctor takes announcements for the store's own, and compaction deletes stale ones.
@Suite(.timeLimit(.minutes(10))) struct PeerDiscoveryTests {
    /// How long a wait for a connection or an object may take: generous, because `make test`
    /// starts every test at once and the first minutes on a 2-core machine are slow; a wait
    /// ends as soon as its condition holds.
    static let patience = 300

    static func loop(_ engine: SyncEngine, peers: PeerChannel) async -> AutoSync {
        var configuration = AutoSync.Configuration.live(slowestPull: 3_600_000)
        configuration.backoff = Backoff(base: 100, max: 500)
        let auto = AutoSync(engine: engine, configuration: configuration, peers: peers)
        await auto.start()
        return auto
    }

    /// The announcement objects on the fleet's remote.
    static func announcements(_ fleet: Fleet) async throws -> [String] {
        try await fleet.remote.list(prefix: RemoteLayout.announcementsPrefix).map(\.path)
    }

    @Test func twoLoopsFindEachOtherThroughTheirAnnouncements() async throws {
        let (fleet, faulty) = try await Fleet.wrapped(count: 2) { FaultyRemote(wrapping: $0, seed: 41) }
        try await fleet.syncAll(rounds: 1)
        let channels = fleet.engines.map { $0.peerChannel(configuration: PeerChannelTests.quick) }
        for channel in channels { try channel.listen() }
        let first = await Self.loop(fleet.engines[0], peers: channels[0])
        #expect(await LiveSyncTests.eventually(within: Self.patience) { (try? await Self.announcements(fleet).count) == 1 })
        let second = await Self.loop(fleet.engines[1], peers: channels[1])
        // The second's first sync lists the first's announcement and dials it; no address given.
        #expect(await LiveSyncTests.eventually(within: Self.patience) { channels[0].peers.count == 1 && channels[1].peers.count == 1 })
        #expect(channels[1].peers.map(\.replica) == [fleet.stores[0].replicaID])
        #expect(await LiveSyncTests.eventually(within: Self.patience) { (try? await Self.announcements(fleet).count) == 2 })
        let secondID = fleet.stores[1].replicaID
        #expect(await LiveSyncTests.eventually(first, within: Self.patience) { $0.announcedPeers.map(\.replica) == [secondID] })
        let announced = try #require(await second.status.announcedPeers.first)
        #expect(announced.port == channels[0].port && announced.addresses == ["127.0.0.1"])

        // The remote unreachable: the write crosses over the channel the announcement found.
        faulty.plan = FaultyRemote.Plan(failure: 1)
        try fleet.stores[0].set(PeerChannelTests.note(1), "title", .string("found by announcement"))
        #expect(try await LiveSyncTests.eventually(within: Self.patience) {
            try PeerChannelTests.title(fleet.stores[1], PeerChannelTests.note(1)) == .scalar(.string("found by announcement"))
        })
        // Stopping withdraws each announcement (the remote back).
        faulty.faultsOff()
        await first.stop()
        await second.stop()
        #expect(try await Self.announcements(fleet).isEmpty)
    }

    @Test func forgedTamperedMovedAndOversizedAnnouncementsAreRefusedAndNamed() async throws {
        var fleet = try await Fleet(count: 2)
        try await fleet.add(name: "device2")
        try await fleet.syncAll(rounds: 1)
        let reader = fleet.engines[0]
        let path = fleet.engines[1].announcementPath(of: fleet.stores[1].replicaID)
        try await fleet.engines[1].announce(addresses: ["192.168.1.20", "127.0.0.1"], port: 7467, lifetime: 600_000)
        try await reader.sync()
        var discovery = try await reader.discoveredPeers()
        #expect(discovery.announced.map(\.replica) == [fleet.stores[1].replicaID])
        #expect(discovery.announced.first?.addresses == ["192.168.1.20", "127.0.0.1"])
        #expect(discovery.rejected.isEmpty)
        let genuine = try #require(try await fleet.remote.get(path))

        // Tampered: one byte flipped.
        var tampered = genuine
        tampered[tampered.count - 1] ^= 1
        fleet.clock.advance(by: 1_000)  // a new listing time, so the change shows
        try await fleet.remote.put(path, tampered)
        try await reader.sync()
        discovery = try await reader.discoveredPeers()
        #expect(discovery.announced.isEmpty)
        #expect(discovery.rejected.count == 1 && discovery.rejected[0].hasPrefix(path))

        // Forged: sealed under another store key.
        let forged = EncryptedObject.encrypt(
            PeerAnnouncement(replica: fleet.stores[1].replicaID, addresses: ["10.0.0.66"], port: 1, written: 0, expires: 1_000).json(),
            path: path, key: StoreKey.random().subkey(for: .peerAnnouncements))
        fleet.clock.advance(by: 1_000)
        try await fleet.remote.put(path, forged)
        try await reader.sync()
        discovery = try await reader.discoveredPeers()
        #expect(discovery.announced.isEmpty && discovery.rejected.count == 1)

        // Moved: the genuine bytes under another replica's announcement name.
        fleet.clock.advance(by: 1_000)
        try await fleet.remote.put(path, genuine)
        let other = fleet.engines[2].announcementPath(of: fleet.stores[2].replicaID)
        try await fleet.remote.put(other, genuine)
        try await reader.sync()
        discovery = try await reader.discoveredPeers()
        #expect(discovery.announced.map(\.replica) == [fleet.stores[1].replicaID])
        #expect(discovery.rejected.count == 1 && discovery.rejected[0].hasPrefix(other))

        // Too large: refused from the listing's size, unread.
        // (Planted in the folder itself: the remote refuses to put an object past its kind's limit.)
        try Data(repeating: 7, count: Int(RemoteLayout.maxAnnouncementSize) + 1).write(to: URL(fileURLWithPath: fleet.scratch.file("remote") + "/" + other))
        fleet.clock.advance(by: 1_000)
        try await reader.sync()
        discovery = try await reader.discoveredPeers()
        #expect(discovery.rejected.count == 1 && discovery.rejected[0].contains("past the \(RemoteLayout.maxAnnouncementSize)"))
        #expect(discovery.announced.count == 1)

        // Doctor takes announcements for the store's own objects, planted or not.
        try await fleet.remote.delete(other)
        let report = try await reader.doctor()
        #expect(!report.findings.contains { $0.path.hasPrefix(RemoteLayout.announcementsPrefix) })
    }

    @Test func anExpiredAnnouncementIsNotDialledAndAStaleOneIsCompactedAway() async throws {
        var fleet = try await Fleet(count: 2)
        try await fleet.add(name: "device2")
        try await fleet.syncAll(rounds: 1)
        let channels = fleet.engines.map { $0.peerChannel(configuration: PeerChannelTests.quick) }
        let ports = try channels.map { try $0.listen() }
        // device1's announcement expired (the fleet's clock moved past it); device2's holds.
        try await fleet.engines[1].announce(addresses: ["127.0.0.1"], port: ports[1], lifetime: 60_000)
        fleet.clock.advance(by: 120_000)
        try await fleet.engines[2].announce(addresses: ["127.0.0.1"], port: ports[2], lifetime: 600_000)
        try await fleet.engines[0].sync()
        let discovery = try await fleet.engines[0].discoveredPeers()
        #expect(discovery.expired.map(\.replica) == [fleet.stores[1].replicaID])
        #expect(discovery.announced.map(\.replica) == [fleet.stores[2].replicaID])
        // A loop dials what one look found holding, and only that.
        let auto = await Self.loop(fleet.engines[0], peers: channels[0])
        #expect(await LiveSyncTests.eventually(within: Self.patience) { channels[0].peers.map(\.replica) == [fleet.stores[2].replicaID] })
        #expect(channels[1].peers.isEmpty, "the expired announcement was not dialled")
        await auto.stop()
        for channel in channels { channel.stop() }

        // Unchanged for twice the longest lifetime: compaction deletes it, not the fresh ones.
        let stale = fleet.engines[1].announcementPath(of: fleet.stores[1].replicaID)
        fleet.clock.advance(by: Int64(SyncEngine.staleAnnouncementAge))
        try await fleet.engines[2].announce(addresses: ["127.0.0.1"], port: ports[2], lifetime: 600_000)
        let report = try await fleet.engines[0].compact()
        #expect(report.staleAnnouncements == [stale])
        #expect(try await Self.announcements(fleet) == [fleet.engines[2].announcementPath(of: fleet.stores[2].replicaID)])
    }

    /// In a shared store an announcement is signed like a head, and one that is not signed
    /// by a member is refused.
    @Test func inASharedStoreOnlyAMembersSignedAnnouncementCounts() async throws {
        let members = try await KeyRotationTests.Members(count: 3)
        let owner = members.engines[0]
        try await owner.addMember(members.identities[1].publicIdentity, name: "bob", role: .writer)
        // A signed batch of the owner's shows Bob the store is shared (he then reads its members).
        try members.note(0, "signed")
        try await members.sync([0, 1])
        // Bob's is signed; the third holds the store key but is no member, and signs nothing.
        try await members.engines[1].announce(addresses: ["127.0.0.1"], port: 7467, lifetime: 600_000)
        try await members.engines[2].announce(addresses: ["127.0.0.1"], port: 7468, lifetime: 600_000)
        let bobs = members.engines[1].announcementPath(of: members.stores[1].replicaID)
        let sealed = try #require(try await members.folder.get(bobs))
        let plaintext = try EncryptedObject.open(sealed, path: bobs, key: members.key.subkey(for: .peerAnnouncements))
        #expect(SignedEnvelope.isSigned(plaintext))
        try await owner.sync()
        let discovery = try await owner.discoveredPeers()
        #expect(discovery.announced.map(\.replica) == [members.stores[1].replicaID])
        #expect(discovery.rejected.count == 1 && discovery.rejected[0].contains("not signed"), "\(discovery.rejected)")
    }

    @Test func layoutAndSubKeys() {
        let tag = String(repeating: "ab", count: 16)
        #expect(RemoteLayout.parse("heads/peers/\(tag)") == .announcement(tag: tag))
        #expect(RemoteLayout.parse("heads/peers/\(tag.uppercased())") == nil)
        #expect(RemoteLayout.parse("heads/peers/\(tag)x") == nil)
        #expect(RemoteLayout.isStoreFolder("heads/peers"))
        #expect(RemoteLayout.maxObjectSize(forPath: "heads/peers/\(tag)") == RemoteLayout.maxAnnouncementSize)
        #expect(Set(KeyPurpose.all.map(\.subkeyID)).count == KeyPurpose.all.count)
        #expect(KeyPurpose.peerAnnouncements.subkeyID == 12 && KeyPurpose.peerAnnouncementNames.subkeyID == 13)
        #expect(PeerAnnouncement.isIPv4("192.168.1.20") && !PeerAnnouncement.isIPv4("192.168.1.256") && !PeerAnnouncement.isIPv4("01.2.3.4"))
    }
}
