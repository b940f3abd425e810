import ConcordTestServers
import Foundation
import Testing

/// `schema apply`, `schema show` and `query`: declared collections from a schema file,
/// queried as README's "Querying" says, bad input exiting 2, `--follow` printing each change.
@Suite struct QueryCLITests {
    static let schema = """
        {"version": 1, "collections": {"games": {"fields": {
           "title": {"type": "string", "index": true, "search": true},
           "level": {"type": "int", "index": true}, "rating": {"type": "double"},
           "tags": {"type": "set<string>"}, "cover": {"type": "file"}}}}}
        """

    /// A store "a" holding four games, one with a level that is not an int, and the schema.
    static func games(_ cli: CLI) throws {
        try cli.on("a", ["init", "--name", "a"])
        try cli.on("a", ["put", "games", "zelda", "title=Zelda", "level=5", "rating=4.5", "tags=[\"rpg\",\"adventure\"]"])
        try cli.on("a", ["put", "games", "tetris", "title=Tetris", "level=2", "tags=[\"puzzle\"]"])
        try cli.on("a", ["put", "games", "mana", "title=Mana", "level=4", "rating=4", "tags=[\"rpg\"]"])
        try cli.on("a", ["put", "games", "odd", "title=Odd", "level=\"high\""])
        try schema.write(toFile: cli.path("schema.json"), atomically: true, encoding: .utf8)
        try cli.on("a", ["schema", "apply", cli.path("schema.json")])
    }

    static func ids(_ result: CLI.Result) throws -> [String] {
        let records = try #require(try result.object()["records"] as? [[String: Any]])
        return records.compactMap { $0["id"] as? String }
    }

    @Test func queriesFilterOrderAndCount() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try Self.games(cli)
        let strong = try cli.on("a", ["query", "games", "--where", "level>3", "--order", "level:desc", "--json"])
        #expect(try Self.ids(strong) == ["zelda", "mana"])
        // The same shape as `list --json`, in the query's order.
        let list = try cli.on("a", ["list", "games", "--json"]).object()["records"] as? [[String: Any]]
        let zelda = try #require(list?.first { $0["id"] as? String == "zelda" })
        let first = try #require((try strong.object()["records"] as? [[String: Any]])?.first)
        #expect(NSDictionary(dictionary: first).isEqual(to: zelda))
        #expect(try Self.ids(cli.on("a", ["query", "games", "--where", "tags contains \"rpg\"", "--where", "title prefix \"Ze\"", "--json"])) == ["zelda"])
        #expect(try Self.ids(cli.on("a", ["query", "games", "--where", "level in [2,5]", "--order", "title", "--json"])) == ["tetris", "zelda"])
        #expect(try Self.ids(cli.on("a", ["query", "games", "--order", "rating", "--limit", "2", "--offset", "1", "--json"])) == ["tetris", "mana"])
        // A value that does not fit its type is null in the table and reads back as written.
        #expect(try Self.ids(cli.on("a", ["query", "games", "--where", "level = null", "--json"])) == ["odd"])
        #expect(try cli.on("a", ["get", "games", "odd", "--json"]).stdout.contains("\"level\":\"high\""))
        #expect(try Self.ids(cli.on("a", ["query", "games", "--where", "title match \"zel*\"", "--json"])) == ["zelda"])
        let count = try cli.on("a", ["query", "games", "--where", "rating >= 4", "--count", "--json"]).object()
        #expect(count["count"] as? Int == 2)
        let shown = try cli.on("a", ["schema", "show", "--json"]).object()
        #expect(((shown["collections"] as? [String: Any])?["games"] as? [String: Any])?["fields"] is [String: Any])
    }

    @Test func badInputExitsTwo() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try Self.games(cli)
        let store = ["--store", cli.path("a.db")]
        for arguments in [
            ["query", "games", "--where", "nope=1"],
            ["query", "games", "--where", "level=\"x\""],
            ["query", "games", "--where", "level~3"],
            ["query", "games", "--where", "tags>1"],
            ["query", "games", "--order", "tags"],
            ["query", "undeclared"],
            ["query", "games", "--where", "level match \"x\""],
            ["query", "games", "--where", "title match \"\\\"open\""],
        ] {
            expectFailure(try cli.run(arguments + store), status: 2, mentioning: [])
        }
        let failure = try cli.run(["query", "games", "--where", "nope=1", "--json"] + store).object()
        #expect((failure["error"] as? [String: Any])?["code"] as? String == "unknownField")
        try "{\"version\": 0, \"collections\": {}}".write(toFile: cli.path("bad.json"), atomically: true, encoding: .utf8)
        expectFailure(try cli.run(["schema", "apply", cli.path("bad.json")] + store), status: 2, mentioning: ["version"])
        try "{\"version\": 1, \"collections\": {\"g\": {\"fields\": {\"x\": {\"type\": \"set<file>\"}}}}}".write(toFile: cli.path("bad.json"), atomically: true, encoding: .utf8)
        expectFailure(try cli.run(["schema", "apply", cli.path("bad.json")] + store), status: 2, mentioning: ["type"])
    }

    @Test func followPrintsTheResultAgainWhenItChanges() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try Self.games(cli)
        let output = cli.folder.appendingPathComponent("follow.out")
        let process = try Subprocess.start(
            CLI.binary.path, ["query", "games", "--where", "level>=5", "--follow", "--json", "--store", cli.path("a.db")],
            environment: ProcessInfo.processInfo.environment, stdout: .file(output.path))
        func lines() -> [Substring] { ((try? String(contentsOf: output, encoding: .utf8)) ?? "").split(separator: "\n") }
        for _ in 0..<100 where lines().isEmpty { try await Task.sleep(for: .milliseconds(100)) }
        try cli.on("a", ["put", "games", "mana", "level=6"])
        for _ in 0..<100 where lines().count < 2 { try await Task.sleep(for: .milliseconds(100)) }
        process.kill(SIGINT)
        _ = process.wait()
        let documents = lines()
        #expect(documents.count == 2, "one document, then one after the change: \(documents)")
        let ids = try documents.map { line in
            try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["records"] as? [[String: Any]]).compactMap { $0["id"] as? String }
        }
        #expect(ids == [["zelda"], ["mana", "zelda"]])
    }

    /// `--conflicted` and `--conflict KIND` keep the records with an open conflict: here a
    /// delete on one replica concurrent with an update on the other.
    @Test func conflictedKeepsTheRecordsWithAnOpenConflict() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let names = ["a", "b"]
        try cli.replicas(names)
        try cli.on("a", ["put", "games", "zelda", "title=Zelda", "level=5"])
        try cli.on("a", ["put", "games", "mana", "title=Mana", "level=4"])
        try cli.syncAll(names)
        try cli.on("a", ["delete", "games", "zelda"])
        try cli.on("b", ["put", "games", "zelda", "level=6"])
        try cli.syncAll(names)
        try Self.schema.write(toFile: cli.path("schema.json"), atomically: true, encoding: .utf8)
        for name in names {
            try cli.on(name, ["schema", "apply", cli.path("schema.json")])
            #expect(try Self.ids(cli.on(name, ["query", "games", "--json"])) == ["mana", "zelda"])
            #expect(try Self.ids(cli.on(name, ["query", "games", "--conflicted", "--json"])) == ["zelda"], "\(name)")
            #expect(try Self.ids(cli.on(name, ["query", "games", "--conflict", "deleteUpdate", "--where", "level>5", "--json"])) == ["zelda"])
            #expect(try Self.ids(cli.on(name, ["query", "games", "--conflict", "fileFork", "--json"])).isEmpty)
            #expect(try cli.on(name, ["query", "games", "--conflicted", "--count", "--json"]).object()["count"] as? Int == 1)
        }
        expectFailure(try cli.run(["query", "games", "--conflict", "fork", "--store", cli.path("a.db")]), status: 2, mentioning: ["fileFork"])
        try cli.on("a", ["resolve", "games", "zelda", "--keep-record"])
        #expect(try Self.ids(cli.on("a", ["query", "games", "--conflicted", "--json"])).isEmpty)
    }
}
