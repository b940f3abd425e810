import ConcordCore
import Foundation
import GRDB
import Testing

@Suite struct CompactTests {
    /// `concord compact` writes a snapshot and deletes the batches every replica has
    /// applied; a replica added afterwards still converges (it joins the snapshot).
    @Test func compactDeletesAppliedBatchesAndNewReplicasStillConverge() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "games", "zelda", "title=Zelda"])
        try cli.syncAll(["a", "b"])
        try cli.on("a", ["put", "games", "zelda", "level=2"])
        try cli.syncAll(["a", "b"])
        let report = try cli.on("a", ["compact", "--json"]).object()
        #expect(report["snapshotWritten"] is String)
        #expect(report["batchesDeleted"] as? Int == 2)
        let batches = try FileManager.default.subpathsOfDirectory(atPath: cli.path("remote")).filter { $0.contains("/deltas/0") }
        #expect(batches.isEmpty, "\(batches)")
        try cli.replicas(["c"])
        try cli.syncAll(["a", "b", "c"])
        #expect(try cli.dump("c") == cli.dump("a"))
    }

    /// A second replica's `concord compact` shares the first one's snapshot instead of
    /// writing its own, and still deletes its batches; the remote holds one snapshot.
    @Test func compactSharesAnotherReplicasSnapshot() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "games", "zelda", "title=Zelda"])
        try cli.on("b", ["put", "games", "mario", "title=Mario"])
        try cli.syncAll(["a", "b"])
        let first = try cli.on("a", ["compact", "--json"]).object()
        let written = try #require(first["snapshotWritten"] as? String)
        let second = try cli.on("b", ["compact", "--json"]).object()
        #expect(second["snapshotWritten"] is NSNull)
        #expect(second["snapshotShared"] as? String == written)
        #expect(second["snapshotsDropped"] as? [Any] != nil)
        #expect(second["batchesDeleted"] as? Int == 1)
        let snapshots = try FileManager.default.subpathsOfDirectory(atPath: cli.path("remote")).filter { $0.hasSuffix(written) || $0.contains("snapshots/") }
        #expect(snapshots.count == 1 && snapshots[0].hasSuffix(written), "\(snapshots)")
        try cli.replicas(["c"])
        try cli.syncAll(["a", "b", "c"])
        #expect(try cli.dump("c") == cli.dump("a"))
    }

    /// `concord compact` purges a deleted record's metadata once every replica has seen
    /// the deletion, and says how many records still wait.
    @Test func compactPurgesADeletionEveryReplicaHasSeen() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "games", "zelda", "title=Zelda", "level=2"])
        try cli.syncAll(["a", "b"])
        try cli.on("a", ["delete", "games", "zelda"])
        try cli.on("a", ["sync"])
        let waiting = try cli.on("a", ["compact", "--json"]).object()
        #expect(waiting["recordsPurged"] as? Int == 0)
        #expect(waiting["recordsAwaitingPurge"] as? Int == 1)
        try cli.syncAll(["b", "a"])
        // Found stable now: it waits out twice the listing staleness (2.8 days with the
        // default 7-day grace) before purging. The store is told it found it that long ago.
        let found = try cli.on("a", ["compact", "--json"]).object()
        #expect(found["recordsPurged"] as? Int == 0)
        #expect(found["recordsAwaitingPurge"] as? Int == 1)
        let database = try DatabaseQueue(path: cli.path("a.db"))
        try database.write { db in
            try db.execute(sql: "UPDATE concord_stable_since SET since = since - ?", arguments: [3 * 86_400_000])
            #expect(db.changesCount == 1)
        }
        try database.close()
        let purged = try cli.on("a", ["compact", "--json"]).object()
        #expect(purged["recordsPurged"] as? Int == 1)
        #expect(purged["recordsAwaitingPurge"] as? Int == 0)
        #expect(purged["purgeSkipped"] is NSNull)
        try cli.syncAll(["a", "b"])
        #expect(try cli.dump("b") == cli.dump("a"))
        #expect(try cli.on("b", ["compact", "--json"]).object()["recordsAwaitingPurge"] as? Int == 0)
    }

    /// `concord replicas forget` retires a replica on every replica: compaction stops
    /// waiting for it, `replicas` shows it forgotten, and when it syncs again it is active
    /// and loses nothing.
    @Test func forgetRetiresAReplicaThatComesBackWithoutLoss() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b", "c"])
        try cli.syncAll(["a", "b", "c"])
        try cli.on("c", ["put", "games", "zelda", "note=offline"])  // c never pushes it
        try cli.on("a", ["put", "games", "zelda", "title=Zelda"])
        try cli.syncAll(["a", "b"])
        #expect(try cli.on("a", ["compact", "--json"]).object()["batchesDeleted"] as? Int == 0)  // c has not applied it

        expectFailure(try cli.run(["replicas", "forget", "a", "--store", cli.path("a.db")]), status: 1, mentioning: ["this replica"])
        expectFailure(try cli.run(["replicas", "forget", "nobody", "--store", cli.path("a.db")]), status: 1, mentioning: ["nobody"])
        let forgotten = try cli.on("b", ["replicas", "forget", "c", "--json"]).object()
        #expect(forgotten["status"] as? String == "forgotten")
        #expect(forgotten["name"] as? String == "c")
        let compacted = try cli.on("a", ["compact", "--json"]).object()
        #expect(compacted["batchesDeleted"] as? Int == 1)
        #expect((compacted["retiredReplicas"] as? [String])?.count == 1)
        let listed = try #require(try cli.on("a", ["replicas", "--json"]).object()["replicas"] as? [[String: Any]])
        #expect(listed.first { $0["name"] as? String == "c" }?["status"] as? String == "forgotten")

        try cli.syncAll(["c", "a", "b"])
        #expect(try cli.dump("c") == cli.dump("a"))
        #expect(try cli.dump("a").contains("offline"))
        let after = try #require(try cli.on("a", ["replicas", "--json"]).object()["replicas"] as? [[String: Any]])
        #expect(after.allSatisfy { $0["status"] as? String == "active" })
    }
}
