import Foundation
import Testing

/// `concord files prefetch` and `concord files policy … --collection C [--field F]
/// --prefetch-below SIZE`, exactly as README "Large files and small devices" names them.
@Suite struct FilesPrefetchCLITests {
    static let schema = """
        {"version": 1, "collections": {"photos": {"fields": {"image": {"type": "file"}}}, "notes": {"fields": {"body": {"type": "file"}}}}}
        """

    @Test func photosOnDemandNotesEagerAndPrefetchWithinTheBudget() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        var sizes: [String: Int] = [:]
        func attach(_ collection: String, _ id: String, _ field: String, size: Int) throws {
            var generator = SeededBytes(seed: UInt64(sizes.count + 1))
            try Data(generator.bytes(size)).write(to: cli.folder.appendingPathComponent(id))
            try cli.on("a", ["attach", collection, id, field, cli.path(id)])
            sizes[id] = size
        }
        for index in 0..<4 { try attach("photos", "p\(index)", "image", size: 5_000 + index) }
        try attach("photos", "big", "image", size: 200_000)
        try attach("notes", "n0", "body", size: 3_000)
        try cli.on("a", ["sync"])

        try Self.schema.write(toFile: cli.path("schema.json"), atomically: true, encoding: .utf8)
        try cli.on("b", ["schema", "apply", cli.path("schema.json")])
        let policy = try cli.on("b", ["files", "policy", "on-demand", "--collection", "photos", "--json"]).object()
        #expect(policy["policy"] as? String == "eager")
        #expect((policy["scopes"] as? [[String: String]]) == [["collection": "photos", "policy": "on-demand"]])
        try cli.on("b", ["sync"])
        var status = try cli.on("b", ["files", "status", "--json"]).object()
        #expect(status["filesNotLocal"] as? Int == 5, "the photos wait, the note came with its record")
        #expect(status["bytesCached"] as? Int == 3_000)

        let small = try cli.on("b", ["files", "prefetch", "--below", "10KiB", "--json"]).object()
        #expect(small["filesWanted"] as? Int == 4 && small["filesFetched"] as? Int == 4)
        #expect(small["bytesFetched"] as? Int == 20_006)
        #expect(small["stoppedAtBudget"] as? Bool == false)

        // The stored threshold, and a budget that leaves no room for the big photo.
        let stored = try cli.on("b", ["files", "policy", "on-demand", "--collection", "photos", "--budget", "100KiB", "--prefetch-below", "1MiB", "--json"]).object()
        #expect(stored["budget"] as? Int == 100 << 10 && stored["prefetchBelow"] as? Int == 1 << 20)
        let full = try cli.on("b", ["files", "prefetch", "--json"]).object()
        #expect(full["filesWanted"] as? Int == 1 && full["filesFetched"] as? Int == 0)
        #expect(full["stoppedAtBudget"] as? Bool == true && full["bytesLeft"] as? Int == 200_000)
        let text = try cli.on("b", ["files", "prefetch"]).stdout
        #expect(text.contains("stopped at the budget"), "\(text)")
        status = try cli.on("b", ["files", "status", "--json"]).object()
        #expect(status["filesNotLocal"] as? Int == 1 && status["bytesCached"] as? Int == 23_006)

        expectFailure(try cli.run(["files", "policy", "on-demand", "--field", "image", "--store", cli.path("b.db")]), status: 2, mentioning: ["--collection"])
        expectFailure(try cli.run(["files", "policy", "on-demand", "--collection", "albums", "--store", cli.path("b.db")]), status: 1, mentioning: ["albums"])
        expectFailure(try cli.run(["files", "prefetch", "--below", "12x", "--store", cli.path("b.db")]), status: 2, mentioning: ["12x"])
    }

    @Test func restoreFetchesAVersionThatIsNotLocal() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        var generator = SeededBytes(seed: 9)
        let first = Data(generator.bytes(30_000))
        try first.write(to: cli.folder.appendingPathComponent("v1"))
        try Data(generator.bytes(20_000)).write(to: cli.folder.appendingPathComponent("v2"))
        try cli.on("b", ["files", "policy", "on-demand"])
        try cli.on("a", ["attach", "photos", "p0", "image", cli.path("v1")])
        try cli.on("a", ["sync"])
        try cli.on("b", ["sync"])
        try cli.on("a", ["attach", "photos", "p0", "image", cli.path("v2")])
        try cli.on("a", ["sync"])
        try cli.on("b", ["sync"])
        let versions = try #require(try cli.on("b", ["versions", "photos", "p0", "image", "--json"]).object()["versions"] as? [[String: Any]])
        #expect(versions.first?["available"] as? Bool == false)
        let hash = try #require(versions.first?["hash"] as? String)
        try cli.on("b", ["restore", "photos", "p0", "image", hash])
        try cli.on("b", ["export", "photos", "p0", "image", cli.path("out")])
        #expect(try Data(contentsOf: cli.folder.appendingPathComponent("out")) == first)
    }

    /// A prefetch killed part-way (the fault library kills the process at its fifth rename:
    /// a content is renamed twice on its way into place, so two are placed by then) keeps
    /// what it had placed; run again, it asks only for the rest, and every content exports
    /// byte for byte.
    @Test func aPrefetchKilledPartWayResumesWithWhatIsLeft() throws {
        let faultLibrary = CLI.binary.deletingLastPathComponent().appendingPathComponent("libConcordFaultInjection.so").path
        try #require(FileManager.default.fileExists(atPath: faultLibrary), "\(faultLibrary) is missing: `swift build` builds it")
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        var contents: [String: Data] = [:]
        for index in 0..<6 {
            var generator = SeededBytes(seed: UInt64(40 + index))
            let id = "p\(index)"
            contents[id] = Data(generator.bytes(20_000 + index))
            try contents[id]!.write(to: cli.folder.appendingPathComponent(id))
            try cli.on("a", ["attach", "photos", id, "image", cli.path(id)])
        }
        try cli.on("a", ["sync"])
        try cli.on("b", ["files", "policy", "on-demand"])
        try cli.on("b", ["sync"])
        #expect(try cli.on("b", ["files", "status", "--json"]).object()["filesNotLocal"] as? Int == 6)
        let killed = try cli.run(["files", "prefetch", "--below", "1MiB", "--store", cli.path("b.db")],
                                 environment: ["LD_PRELOAD": faultLibrary, "CONCORD_FAULT": "rename:5:kill"])
        #expect(killed.status != 0)
        let left = try #require(try cli.on("b", ["files", "status", "--json"]).object()["filesNotLocal"] as? Int)
        #expect(left > 0 && left < 6, "the kill came part-way: \(6 - left) of 6 placed")
        let resumed = try cli.on("b", ["files", "prefetch", "--below", "1MiB", "--json"]).object()
        #expect(resumed["filesWanted"] as? Int == left && resumed["filesFetched"] as? Int == left, "\(resumed)")
        #expect(try cli.on("b", ["files", "status", "--json"]).object()["filesNotLocal"] as? Int == 0)
        for (id, bytes) in contents {
            try cli.on("b", ["export", "photos", id, "image", cli.path("out-\(id)")])
            #expect(try Data(contentsOf: cli.folder.appendingPathComponent("out-\(id)")) == bytes, "\(id)")
        }
    }
}
