import ConcordCore
import Foundation
import Testing

/// A file fork shows on every replica and is resolved everywhere by one `resolve` and sync.
@Suite struct ConflictTests {
    @Test func fileForkAppearsEverywhereAndResolvesEverywhere() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let names = ["laptop", "phone", "tablet"]
        try cli.replicas(names)
        for (name, text) in [("original", "level 1"), ("forest", "forest save"), ("dungeon", "dungeon save, longer")] {
            try Data(text.utf8).write(to: cli.folder.appendingPathComponent("\(name).sav"))
        }
        try cli.on("laptop", ["attach", "saves", "slot1", "data", "original.sav"])
        try cli.syncAll(names)
        try cli.on("laptop", ["attach", "saves", "slot1", "data", "forest.sav"])
        try cli.on("phone", ["attach", "saves", "slot1", "data", "dungeon.sav"])
        try cli.syncAll(names)

        var forkVersions: [String: Int] = [:]
        for name in names {
            let document = try cli.on(name, ["conflicts", "--json"]).object()
            let conflicts = try #require(document["conflicts"] as? [[String: Any]])
            #expect(conflicts.count == 1, "\(name): \(conflicts)")
            let fork = try #require(conflicts.first)
            #expect(fork["kind"] as? String == "fileFork")
            #expect(fork["collection"] as? String == "saves")
            #expect(fork["id"] as? String == "slot1")
            #expect(fork["field"] as? String == "data")
            let versions = try #require(fork["versions"] as? [[String: Any]])
            #expect(versions.count == 2)
            for version in versions {
                #expect(Set(version.keys) == ["hash", "size", "replica"])
                forkVersions[try #require(version["hash"] as? String)] = try #require(version["size"] as? Int)
            }
        }
        #expect(forkVersions.count == 2, "every replica lists the same two versions")

        // The tablet, which wrote neither version, keeps the phone's.
        let dungeon = try #require(forkVersions.first { $0.value == "dungeon save, longer".utf8.count }?.key)
        try cli.on("tablet", ["resolve", "saves", "slot1", "data", "--keep", dungeon])
        try cli.syncAll(names)
        for name in names {
            let document = try cli.on(name, ["conflicts", "--json"]).object()
            #expect((document["conflicts"] as? [Any])?.isEmpty == true, "\(name) still lists a conflict")
            try cli.on(name, ["export", "saves", "slot1", "data", "\(name).out"])
            #expect(try String(contentsOfFile: cli.path("\(name).out"), encoding: .utf8) == "dungeon save, longer")
        }
        #expect(Set(try names.map(cli.dump)).count == 1)
    }

    @Test func deleteConcurrentWithUpdateIsListedAndKept() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let names = ["a", "b"]
        try cli.replicas(names)
        try cli.on("a", ["put", "notes", "n1", "text=hello"])
        try cli.syncAll(names)
        try cli.on("a", ["delete", "notes", "n1"])
        try cli.on("b", ["put", "notes", "n1", "text=edited"])
        try cli.syncAll(names)
        for name in names {
            let conflicts = try #require(try cli.on(name, ["conflicts", "--json"]).object()["conflicts"] as? [[String: Any]])
            #expect(conflicts.count == 1)
            #expect(conflicts.first?["kind"] as? String == "deleteUpdate")
            #expect(Set(conflicts.first?.keys.map { $0 } ?? []) == ["kind", "collection", "id"])
        }
        try cli.on("a", ["resolve", "notes", "n1", "--keep-record"])
        try cli.syncAll(names)
        for name in names {
            #expect(try cli.on(name, ["conflicts"]).stdout.contains("no open conflicts"))
            let fields = try #require(try cli.on(name, ["get", "notes", "n1", "--json"]).object()["fields"] as? [String: Any])
            #expect(fields["text"] as? String == "edited")
        }
    }
}

