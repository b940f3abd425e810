import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

private let day: Int64 = 86_400_000
private let note = RecordRef(collection: "notes", id: "n")

/// Snapshots are shared across replicas (docs/ARCHITECTURE.md §4, "Compaction"): a replica whose batches
/// another replica's snapshot already covers writes none, a replica's own snapshot goes once
/// another supersedes it, and whoever needs a compacted batch joins any snapshot covering it.
@Suite struct SharedSnapshotTests {
    func snapshots(_ fleet: Fleet) async throws -> [String] {
        try await fleet.remote.list(prefix: RemoteLayout.snapshotsPrefix).map(\.path).sorted()
    }

    @Test func replicasShareASnapshotAndDropTheirOwnOnceAnotherSupersedesIt() async throws {
        var fleet = try await Fleet(count: 4)
        let (a, b, c, d) = (fleet.engines[0], fleet.engines[1], fleet.engines[2], fleet.engines[3])
        // d pushes once, then lags behind.
        try fleet.stores[3].set(note, "d", .int(0))
        try await d.sync()
        for (index, engine) in [a, b, c].enumerated() {
            try fleet.stores[index].set(note, "r\(index)", .int(1))
            try await engine.sync()
        }
        for engine in [a, b, c] { try await engine.sync() }

        // a writes a snapshot; b's batches are all in it, so b shares it instead of writing
        // one, and deletes its batch once old enough (d has not applied it).
        let first = try await a.compact()
        let shared = try #require(first.snapshot)
        fleet.clock.advance(by: 10_000)
        let second = try await b.compact(batchGracePeriod: 1)
        #expect(second.snapshot == nil)
        #expect(second.sharedSnapshot == shared)
        #expect(second.deletedBatches == [1])
        #expect(try await snapshots(fleet) == [shared])

        // d misses b's batch: it catches up from a's snapshot and converges.
        let caughtUp = try await d.sync()
        #expect(caughtUp.joinedSnapshots == [shared])
        #expect(try fleet.stores[3].record(note)?.map(\.name) == ["d", "r0", "r1", "r2"])

        // c writes a newer snapshot covering everything a's did. Once every listing shows
        // it (two upload deadlines), a drops its own, and shares c's.
        for (index, store) in fleet.stores.enumerated() { try store.set(note, "r\(index)", .int(2)) }
        try await fleet.syncAll()
        let newer = try await c.writeSnapshot()
        #expect(try await snapshots(fleet) == [shared, newer].sorted())
        #expect(try await a.compact().droppedSnapshots.isEmpty)  // c's is too young yet
        fleet.clock.advance(by: 3 * day)
        let third = try await a.compact()
        #expect(third.droppedSnapshots == [shared])
        #expect(third.snapshot == nil)
        #expect(try await snapshots(fleet) == [newer])
        // Nobody drops the last one: c's own compaction keeps it.
        #expect(try await c.compact().droppedSnapshots.isEmpty)
        #expect(try await snapshots(fleet) == [newer])

        // A new replica bootstraps from c's snapshot, and everyone converges.
        try await fleet.add(name: "late")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try fleet.stores[4].record(note)?.first { $0.name == "r1" }?.value == .scalar(.int(2)))
    }

    /// With `snapshotSlack` 0 a replica never relies on another's snapshot for its newest
    /// batches: it writes its own whenever one of them is uncovered.
    @Test func aZeroSlackReplicaWritesItsOwn() async throws {
        var fleet = try await Fleet(count: 1)
        try await fleet.add(name: "strict")
        fleet.engines[1] = SyncEngine(
            store: fleet.stores[1], remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock, snapshotSlack: 0)
        for (index, store) in fleet.stores.enumerated() { try store.set(note, "r\(index)", .int(1)) }
        try await fleet.syncAll()
        let shared = try #require(try await fleet.engines[0].compact().snapshot)
        try fleet.stores[1].set(note, "r1", .int(2))
        try await fleet.engines[1].sync()
        let strict = try await fleet.engines[1].compact()
        #expect(strict.sharedSnapshot == nil)
        let own = try #require(strict.snapshot)
        #expect(try await snapshots(fleet) == [shared, own].sorted())
    }
}
