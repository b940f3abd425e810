import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
@testable import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// The LAN peer channel over real sockets on the loopback: batches travel between replicas
/// while the remote cannot be reached, a batch met only through a peer reaches the remote,
/// and a side without the store key gets nowhere. Tests only wait — with deadlines far beyond
/// what the outcome needs — for something observable; no duration decides a pass.
@Suite(.timeLimit(.minutes(2))) struct PeerChannelTests {
    /// Loopback, and a short stall timeout (the stalling peer's test waits for it); the
    /// handshake and idle timeouts stay long, since a loaded machine running other suites
    /// beside these may leave a connection's tasks waiting for a thread for seconds.
    static let quick = PeerChannel.Configuration(
        host: "127.0.0.1", handshakeTimeout: 20_000, stallTimeout: 500, idleTimeout: 20_000, pingInterval: 1_000)

    static func note(_ index: Int) -> RecordRef { RecordRef(collection: "notes", id: "n\(index)") }

    static func title(_ store: Store, _ ref: RecordRef) throws -> FieldValue? {
        try store.record(ref)?.first { $0.name == "title" }?.value
    }

    /// A live loop over `engine` with `peers`, a long pull interval (only peers and pushes
    /// move things) and `relayGrace`.
    static func loop(_ engine: SyncEngine, peers: PeerChannel, relayGrace: UInt64 = 10_000) async -> AutoSync {
        var configuration = AutoSync.Configuration.live(slowestPull: 3_600_000)
        configuration.relayGrace = relayGrace
        configuration.backoff = Backoff(base: 100, max: 500)
        let auto = AutoSync(engine: engine, configuration: configuration, peers: peers)
        await auto.start()
        return auto
    }

    /// Two replicas whose shared remote fails every call exchange writes both ways over the
    /// channel and converge; once the remote is back, it holds every batch.
    @Test func twoReplicasExchangeBatchesWhileTheRemoteIsUnreachable() async throws {
        let (fleet, faulty) = try await Fleet.wrapped(count: 2) { FaultyRemote(wrapping: $0, seed: 41) }
        try await fleet.syncAll(rounds: 1)
        let channels = fleet.engines.map { $0.peerChannel(configuration: Self.quick) }
        let port = try channels[1].listen()
        let autos = [await Self.loop(fleet.engines[0], peers: channels[0]), await Self.loop(fleet.engines[1], peers: channels[1])]
        #expect(await LiveSyncTests.eventually(autos[0]) { $0.counters.succeeded >= 1 })
        #expect(await LiveSyncTests.eventually(autos[1]) { $0.counters.succeeded >= 1 })
        try await channels[0].connect(host: "127.0.0.1", port: port)
        #expect(channels[0].peers.map(\.replica) == [fleet.stores[1].replicaID])
        #expect(await LiveSyncTests.eventually { channels[1].peers.count == 1 })

        faulty.plan = FaultyRemote.Plan(failure: 1)
        try fleet.stores[0].set(Self.note(1), "title", .string("from device0"))
        try fleet.stores[1].set(Self.note(2), "title", .string("from device1"))
        #expect(try await LiveSyncTests.eventually { try Self.title(fleet.stores[1], Self.note(1)) == .scalar(.string("from device0")) })
        #expect(try await LiveSyncTests.eventually { try Self.title(fleet.stores[0], Self.note(2)) == .scalar(.string("from device1")) })
        #expect(try fleet.dumps().count == 1, "the two replicas converged over the channel alone")
        let root = fleet.scratch.file("remote")
        #expect(!FileManager.default.fileExists(atPath: root + "/" + RemoteLayout.batch(fleet.stores[0].replicaID, seq: 1)), "nothing reached the remote")
        #expect(await autos[1].status.counters.peerApplied >= 1)
        // A burst, the remote still unreachable, is a handful of batches over the channel:
        // the share waits for the commits to pause (at most 1 s), as the push does.
        let sharedBefore = await autos[0].status.counters.batchesShared
        for index in 100..<200 { try fleet.stores[0].set(Self.note(index), "title", .string("burst \(index)")) }
        #expect(try await LiveSyncTests.eventually { try Self.title(fleet.stores[1], Self.note(199)) == .scalar(.string("burst 199")) })
        let burst = await autos[0].status.counters.batchesShared - sharedBefore
        #expect(burst >= 1 && burst <= 20, "100 writes went over in \(burst) batches")

        // The remote back: each replica's batch reaches it, by its own push (or the relay).
        faulty.faultsOff()
        for store in fleet.stores {
            let path = root + "/" + RemoteLayout.batch(store.replicaID, seq: 1)
            try store.set(Self.note(3), "done", .bool(true))  // a commit plans a push at once
            #expect(await LiveSyncTests.eventually { FileManager.default.fileExists(atPath: path) }, "\(path) reached the remote")
        }
        for auto in autos { await auto.stop() }
        #expect(channels.allSatisfy { $0.peers.isEmpty })
    }

    /// A replica that cannot reach the remote sends a batch to its peer and disappears; the
    /// peer puts the batch on the remote, from which a third replica, which never met either
    /// on the LAN, gets it.
    @Test func aBatchReceivedOnlyFromAPeerReachesTheRemote() async throws {
        var fleet = try await Fleet(count: 2)
        try await fleet.add(name: "device2")
        let cutOff = FaultyRemote(wrapping: fleet.remote, seed: 7)
        let lonely = SyncEngine(store: fleet.stores[0], remote: cutOff, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        try await fleet.syncAll(rounds: 1)
        cutOff.plan = FaultyRemote.Plan(failure: 1)
        let channels = [lonely.peerChannel(configuration: Self.quick), fleet.engines[1].peerChannel(configuration: Self.quick)]
        let port = try channels[1].listen()
        let autos = [await Self.loop(lonely, peers: channels[0]), await Self.loop(fleet.engines[1], peers: channels[1], relayGrace: 0)]
        try await channels[0].connect(host: "127.0.0.1", port: port)
        try fleet.stores[0].set(Self.note(1), "title", .string("only over the LAN"))
        #expect(await LiveSyncTests.eventually(autos[1]) { $0.counters.batchesRelayed >= 1 && $0.heldFromPeers == 0 })
        // The sender is gone for good; it never pushed.
        await autos[0].stop()
        #expect(await autos[0].status.counters.batchesPushed == 0)
        let path = RemoteLayout.batch(fleet.stores[0].replicaID, seq: 1)
        #expect(try await fleet.remote.get(path) != nil, "the relayed batch is on the remote")
        await autos[1].stop()
        // The relaying replica writes on; the third replica, which met neither on the LAN,
        // gets both from the remote.
        try fleet.stores[1].set(Self.note(2), "title", .string("after it"))
        try await fleet.engines[1].sync()
        try await fleet.engines[2].sync()
        #expect(try Self.title(fleet.stores[2], Self.note(1)) == .scalar(.string("only over the LAN")))
        #expect(try Self.title(fleet.stores[2], Self.note(2)) == .scalar(.string("after it")))
    }

    /// Both sides dial each other: both keep the one connection the lower replica id
    /// dialled, and a batch still travels both ways over it.
    @Test func peersThatDialEachOtherKeepOneConnection() async throws {
        let fleet = try await Fleet(count: 2)
        let channels = fleet.engines.map { $0.peerChannel(configuration: Self.quick) }
        let ports = try channels.map { try $0.listen() }
        try await channels[0].connect(host: "127.0.0.1", port: ports[1])
        try await channels[1].connect(host: "127.0.0.1", port: ports[0])
        #expect(await LiveSyncTests.eventually { channels.allSatisfy { $0.peers.count == 1 } })
        let lower = fleet.stores[0].replicaID < fleet.stores[1].replicaID ? 0 : 1
        #expect(channels[lower].peers.first?.dialled == true && channels[1 - lower].peers.first?.dialled == false)
        for (from, to) in [(0, 1), (1, 0)] {
            try fleet.stores[from].set(Self.note(from), "title", .string("from \(from)"))
            let batch = try #require(try await fleet.engines[from].sealedBatches(after: 0, limit: 1).first)
            var deliveries = channels[to].deliveries().makeAsyncIterator()
            channels[from].send(path: batch.path, bytes: batch.bytes)
            let delivered = await deliveries.next()
            #expect(delivered?.path == batch.path && delivered?.bytes == batch.bytes)
        }
        #expect(channels.allSatisfy { $0.recentDrops.isEmpty }, "no fault was logged")
        for channel in channels { channel.stop() }
    }

    /// A channel keyed by another store's key fails the handshake both ways: no peer is
    /// connected on either side, and the listener logs why.
    @Test func aPeerWithAnotherKeyFailsTheHandshake() async throws {
        let fleet = try await Fleet(count: 1)
        let stranger = try await Fleet(count: 1)
        let listener = fleet.engines[0].peerChannel(configuration: Self.quick)
        let port = try listener.listen()
        let dialler = stranger.engines[0].peerChannel(configuration: Self.quick)
        await #expect(throws: ConcordError.self) { try await dialler.connect(host: "127.0.0.1", port: port) }
        #expect(await LiveSyncTests.eventually { listener.recentDrops.contains { $0.contains("does not hold this store's key") } })
        #expect(listener.peers.isEmpty && dialler.peers.isEmpty)
        // And the other way round.
        let strangerPort = try dialler.listen()
        await #expect(throws: ConcordError.self) { try await listener.connect(host: "127.0.0.1", port: strangerPort) }
        #expect(listener.peers.isEmpty && dialler.peers.isEmpty)
        listener.stop()
        dialler.stop()
    }
}
