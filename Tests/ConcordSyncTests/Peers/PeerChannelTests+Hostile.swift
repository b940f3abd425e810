import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
@testable import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Peers that hold the store key and lie: each is dropped in one logged line, and nothing
/// it sent is applied.
extension PeerChannelTests {
    /// A connection past the handshake as `replica`, over which a test writes raw frames.
    static func liar(as replica: ReplicaID, key: StoreKey, port: UInt16) async throws -> PeerSocket {
        let socket = try await PeerSocket.connect(host: "127.0.0.1", port: port, timeout: 20_000)
        _ = try await PeerHandshake(channelReplica: replica, key: key.subkey(for: .peers), configuration: quick).dial(socket)
        return socket
    }

    /// `frame`'s bytes sent by a liar; waits until the victim dropped it and returns the
    /// drop's line.
    static func dropLine(
        after send: (PeerSocket) async throws -> Void, as replica: ReplicaID, key: StoreKey, victim: PeerChannel, port: UInt16
    ) async throws -> String? {
        let before = victim.recentDrops.count
        let socket = try await liar(as: replica, key: key, port: port)
        #expect(await LiveSyncTests.eventually { victim.peers.count == 1 })
        try await send(socket)
        let dropped = await LiveSyncTests.eventually { victim.peers.isEmpty && victim.recentDrops.count > before }
        socket.close()
        return dropped ? victim.recentDrops.last : nil
    }

    @Test func aPeerThatForgesReplaysOversizesStallsOrSendsGarbageIsDropped() async throws {
        let fleet = try await Fleet(count: 2)
        try await fleet.syncAll(rounds: 1)
        let liar = fleet.stores[0].replicaID
        // Two authentic batches of the liar, as it would send them.
        try fleet.stores[0].set(Self.note(1), "title", .string("first"))
        _ = try await fleet.engines[0].sealedBatches(after: 0, limit: 8)
        try fleet.stores[0].set(Self.note(2), "title", .string("second"))
        let batches = try await fleet.engines[0].sealedBatches(after: 0, limit: 8)
        try #require(batches.map(\.seq) == [1, 2])
        let victim = fleet.engines[1].peerChannel(configuration: Self.quick)
        let port = try victim.listen()
        let auto = await Self.loop(fleet.engines[1], peers: victim)
        func drop(_ send: (PeerSocket) async throws -> Void) async throws -> String {
            try #require(try await Self.dropLine(after: send, as: liar, key: fleet.key, victim: victim, port: port))
        }
        func object(_ path: String, _ bytes: [UInt8]) -> [UInt8] { PeerFrame.object(path: path, bytes: bytes).encoded }

        // Forged: a byte of an authentic batch flipped.
        var forged = batches[0].bytes
        forged[forged.count / 2] ^= 0x01
        #expect(try await drop { try await $0.write(object(batches[0].path, forged), timeout: 1_000) }.contains("does not open"))
        // Moved: authentic bytes under another name (the path is authenticated with them).
        #expect(try await drop { try await $0.write(object(batches[1].path, batches[0].bytes), timeout: 1_000) }.contains("does not open"))
        // Another replica's batch: a peer ships its own only.
        let other = RemoteLayout.batch(fleet.stores[1].replicaID, seq: 1)
        #expect(try await drop { try await $0.write(object(other, batches[0].bytes), timeout: 1_000) }.contains("not a batch of its own"))
        // Oversized: a header claiming more than a batch may hold is refused before the body.
        let oversized = Array(object(batches[0].path, []).prefix(3)) + [0x20, 0, 0, 0] + Array(batches[0].path.utf8)
        #expect(try await drop { try await $0.write(oversized, timeout: 1_000) }.contains("over"))
        // Stalling: half a frame, then nothing.
        let half = Array(object(batches[0].path, batches[0].bytes).dropLast(batches[0].bytes.count / 2))
        #expect(try await drop { try await $0.write(half, timeout: 1_000) }.contains("sent nothing for"))
        // Garbage.
        #expect(try await drop { try await $0.write(Array("GET / HTTP/1.1\r\n\r\n".utf8), timeout: 1_000) }.contains("unknown type"))
        #expect(try fleet.stores[1].record(Self.note(1)) == nil, "nothing a liar sent was applied")
        #expect(await auto.status.counters.peerApplied == 0)
        #expect(await auto.status.counters.peerRejected == 2)

        // Replayed: the first batch applies once; sent again, its sender is dropped.
        let replayed = try await drop { socket in
            try await socket.write(object(batches[0].path, batches[0].bytes), timeout: 1_000)
            let applied = try await LiveSyncTests.eventually { try fleet.stores[1].record(Self.note(1)) != nil }
            #expect(applied)
            try await socket.write(object(batches[0].path, batches[0].bytes), timeout: 1_000)
        }
        #expect(replayed.contains("a replay"))
        let counters = await auto.status.counters
        #expect(counters.peerApplied == 1 && counters.peerDeliveries == 3, "the forged, the moved and the first of the replayed")
        #expect(try fleet.stores[1].record(Self.note(2)) == nil)
        await auto.stop()
    }
}
