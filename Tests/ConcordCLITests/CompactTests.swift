import ConcordCore
import Foundation
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
}
