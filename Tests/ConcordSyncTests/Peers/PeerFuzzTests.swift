import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// The sync fuzz's promise with peers (docs/ARCHITECTURE.md §7): three live replicas, all
/// connected over the peer channel on the loopback, write while their remote fails a seeded
/// share of calls, loses puts, serves stale and incomplete listings, and at times cannot be
/// reached at all; peers drop and redial; one replica may vanish for good part-way. After
/// the faults stop, the survivors must converge, hold every write they made, and the remote
/// must hold every batch of the vanished replica that a survivor applied (it met it only
/// over the LAN, perhaps: the remote stays the source of truth).
///
/// Real sockets and real time: `CONCORD_PEER_SCHEDULES` schedules (default 2, about a
/// second each) from `CONCORD_PEER_SEED` (default 1); the outcome never depends on timing.
@Suite(.timeLimit(.minutes(5))) struct PeerFuzzTests {
    static let schedules = Int(ProcessInfo.processInfo.environment["CONCORD_PEER_SCHEDULES"] ?? "") ?? 2
    static let firstSeed = UInt64(ProcessInfo.processInfo.environment["CONCORD_PEER_SEED"] ?? "") ?? 1

    @Test func faultySchedulesWithPeersConverge() async throws {
        for offset in 0..<Self.schedules {
            let seed = Self.firstSeed + UInt64(offset)
            try await Self.run(seed: seed)
        }
    }

    static func run(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let (fleet, faulty) = try await Fleet.wrapped(count: 3) { FaultyRemote(wrapping: $0, seed: seed) }
        try await fleet.syncAll(rounds: 1)
        let faults = FaultyRemote.Plan(
            failure: Double.random(in: 0...0.4, using: &random), lostPut: Double.random(in: 0...0.1, using: &random),
            staleListing: Double.random(in: 0...0.2, using: &random), incompleteListing: Double.random(in: 0...0.2, using: &random))
        let channels = fleet.engines.map { $0.peerChannel(configuration: PeerChannelTests.quick) }
        var ports: [UInt16] = []
        for channel in channels { ports.append(try channel.listen()) }
        var autos: [AutoSync] = []
        for (engine, channel) in zip(fleet.engines, channels) {
            var configuration = AutoSync.Configuration.live(slowestPull: 2_000)
            configuration.relayGrace = UInt64.random(in: 0...300, using: &random)
            configuration.backoff = Backoff(base: 50, max: 400)
            let auto = AutoSync(engine: engine, configuration: configuration, peers: channel)
            await auto.start()
            autos.append(auto)
        }
        // A mesh: each dials those after it, and redials after a drop.
        for (index, channel) in channels.enumerated() {
            for other in (index + 1)..<channels.count { channel.keepConnected(host: "127.0.0.1", port: ports[other]) }
        }
        faulty.plan = faults
        let vanishing = Bool.random(using: &random) ? 0 : nil
        var alive = [true, true, true]
        var written: [Int: Set<RecordRef>] = [:]
        for step in 0..<30 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: faulty.plan = FaultyRemote.Plan(failure: 1)  // unreachable
            case 1: faulty.plan = faults
            case 2:
                let index = Int.random(in: 0..<3, using: &random)
                if alive[index], let peer = channels[index].peers.randomElement(using: &random) {
                    channels[index].drop(peer.replica, reason: "dropped by the schedule")
                }
            case 3 where vanishing != nil && alive[vanishing!] && step > 10:
                await autos[vanishing!].stop()  // gone for good: never syncs again
                alive[vanishing!] = false
            default:
                let index = Int.random(in: 0..<3, using: &random)
                guard alive[index] else { break }
                let ref = RecordRef(collection: "notes", id: "n\(Int.random(in: 0..<12, using: &random))")
                try fleet.stores[index].set(ref, "by\(index)", .int(Int64(step)))
                written[index, default: []].insert(ref)
            }
            try await Task.sleep(for: .milliseconds(Int.random(in: 0...40, using: &random)))
        }
        faulty.faultsOff()
        let survivors = (0..<3).filter { alive[$0] }
        // Every survivor puts what it holds from a peer on the remote, then stops.
        for index in survivors {
            let settled = await LiveSyncTests.eventually(autos[index], within: 60) { $0.heldFromPeers == 0 && $0.consecutiveFailures == 0 }
            #expect(settled, "seed \(seed): replica \(index) settled")
        }
        for index in survivors { await autos[index].stop() }
        for _ in 0..<3 {
            for index in survivors { try await fleet.engines[index].sync() }
        }
        let dumps = Set(try survivors.map { try fleet.stores[$0].canonicalDump() })
        #expect(dumps.count == 1, "seed \(seed): the survivors converged")
        for index in survivors {
            for ref in written[index] ?? [] {
                let fields = try survivors.map { try fleet.stores[$0].record(ref)?.map(\.name) ?? [] }
                #expect(fields.allSatisfy { $0.contains("by\(index)") }, "seed \(seed): \(ref) by replica \(index) is everywhere")
            }
        }
        if let gone = vanishing, !alive[gone] {
            let origin = fleet.stores[gone].replicaID
            let reached = try survivors.map { try fleet.stores[$0].appliedSeqs()[origin] ?? 0 }.max() ?? 0
            for seq in stride(from: 1, through: reached, by: 1) {
                #expect(try await fleet.remote.get(RemoteLayout.batch(origin, seq: seq)) != nil, "seed \(seed): batch \(seq) of the vanished replica, applied by a survivor, is on the remote")
            }
        }
        for channel in channels { channel.stop() }
    }
}
