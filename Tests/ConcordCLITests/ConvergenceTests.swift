import ConcordCore
import ConcordTesting
import Foundation
import Testing

/// Three stores sync through a folder remote with the real binary and converge.
@Suite struct ConvergenceTests {
    static let names = ["laptop", "phone", "tablet"]

    @Test func threeStoresConvergeAfterConcurrentEdits() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(Self.names)
        try cli.on("laptop", ["put", "games", "zelda", "title=\"Zelda\"", "level=1", "tags=[\"adventure\"]"])
        try cli.syncAll(Self.names)
        #expect(Set(try Self.names.map(cli.dump)).count == 1)

        // Offline, all three edit the same record at once.
        try cli.on("laptop", ["put", "games", "zelda", "level=2"])
        try cli.on("phone", ["put", "games", "zelda", "level=3"])
        try cli.on("phone", ["add", "games", "zelda", "tags", "classic"])
        try cli.on("tablet", ["remove", "games", "zelda", "tags", "adventure"])
        try cli.on("laptop", ["add", "games", "zelda", "tags", "adventure"])
        try cli.on("tablet", ["put", "games", "metroid", "title=Metroid"])
        try cli.syncAll(Self.names)

        let dumps = try Self.names.map(cli.dump)
        #expect(Set(dumps).count == 1, "dumps differ:\n\(dumps.joined(separator: "\n"))")
        let record = try cli.on("tablet", ["get", "games", "zelda", "--json"]).object()
        let fields = try #require(record["fields"] as? [String: Any])
        #expect([2, 3].contains(fields["level"] as? Int), "level is one of the concurrent writes")
        #expect(fields["tags"] as? [String] == ["adventure", "classic"], "add wins over the concurrent remove")
        #expect(dumps[0].contains("\"metroid\""))
    }

    /// Seeded random concurrent writes from three replicas; replays with CONCORD_SEED.
    @Test func seededConcurrentWritesConverge() throws {
        let seed = ProcessInfo.processInfo.environment["CONCORD_SEED"].flatMap { UInt64($0) } ?? 0xC0C0_2026
        var generator = SeededGenerator(seed: seed)
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(Self.names)
        for _ in 0..<2 {
            for name in Self.names {
                let id = "r\(generator.int(1...3))"
                switch generator.int(0...3) {
                case 0: try cli.on(name, ["put", "items", id, "n=\(generator.int(0...99))", "by=\(name)"])
                case 1: try cli.on(name, ["add", "items", id, "tags", "t\(generator.int(1...3))"])
                case 2: try cli.on(name, ["put", "items", id, "note=\"from \(name)\""])
                default:
                    if try cli.run(["get", "items", id, "--store", cli.path("\(name).db")]).status == 0 {
                        try cli.on(name, ["delete", "items", id])
                    }
                }
            }
            try cli.on(Self.names[generator.int(0...2)], ["sync"])
        }
        try cli.syncAll(Self.names)
        let dumps = try Self.names.map(cli.dump)
        #expect(Set(dumps).count == 1, "seed \(seed): dumps differ:\n\(dumps.joined(separator: "\n"))")
    }
}
