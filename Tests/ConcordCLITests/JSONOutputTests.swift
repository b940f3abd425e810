import ConcordCore
import ConcordTestServers
import Foundation
import Testing

/// Every command's `--json` output is one JSON document in the documented shape.
@Suite struct JSONOutputTests {
    @Test func everyJSONOutputParses() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try Data("hello".utf8).write(to: cli.folder.appendingPathComponent("hello.txt"))
        try Data("bye".utf8).write(to: cli.folder.appendingPathComponent("bye.txt"))
        let store = ["--store", cli.path("a.db"), "--json"]
        var commands: [[String]] = [
            ["init", "--name", "a"],
            ["remote", "set", cli.remoteURL, "--create"],
            ["put", "games", "zelda", "title=Zelda", "level=3", "ratio=0.5", "done=true", "note=null", "tags=[\"x\",\"y\"]"],
            ["get", "games", "zelda"],
            ["list", "games"],
            ["add", "games", "zelda", "tags", "z"],
            ["remove", "games", "zelda", "tags", "x"],
            ["attach", "saves", "s1", "data", "hello.txt", "--type", "text/plain"],
            ["attach", "saves", "s1", "data", "bye.txt"],
            ["versions", "saves", "s1", "data"],
            ["export", "saves", "s1", "data", "out.txt"],
            ["conflicts"],
            ["sync"],
            ["sync", "--push-only"],
            ["sync", "--pull-only"],
            ["status"],
            ["status", "--offline"],
            ["replicas"],
            ["remote"],
            ["remote", "show"],
            ["doctor"],
            ["compact"],
            ["dump"],
            ["put", "tmp", "t1", "a=1"],
            ["delete", "tmp", "t1"],
        ]
        var documents: [String: [String: Any]] = [:]
        for command in commands {
            let result = try cli.ok(command + store)
            #expect(result.stdout.split(separator: "\n").count == 1, "\(command): one line on stdout: \(result.stdout)")
            documents[command.prefix(2).joined(separator: " ")] = try #require(try result.json() as? [String: Any], "\(command): \(result.stdout)")
        }
        let hash = try #require(((documents["versions saves"]?["versions"] as? [[String: Any]])?.first?["hash"]) as? String)
        commands = [["restore", "saves", "s1", "data", hash], ["export", "saves", "s1", "data", "old.txt", "--version", hash]]
        for command in commands {
            _ = try #require(try cli.ok(command + store).json() as? [String: Any])
        }

        // The record shape: {"collection","id","fields"}, fields typed as written.
        let record = try #require(documents["get games"])
        #expect(Set(record.keys) == ["collection", "id", "fields"])
        let fields = try #require(record["fields"] as? [String: Any])
        #expect(fields["title"] as? String == "Zelda")
        #expect(fields["level"] as? Int == 3)
        #expect(fields["ratio"] as? Double == 0.5)
        #expect(fields["done"] as? Bool == true)
        #expect(fields["note"] is NSNull)
        #expect(fields["tags"] as? [String] == ["x", "y"])
        #expect((documents["list games"]?["records"] as? [[String: Any]])?.count == 1)
        #expect(documents["conflicts"]?["conflicts"] as? [Any] != nil)
        #expect(documents["status"]?["replica"] is String)
        #expect((documents["replicas"]?["replicas"] as? [Any])?.count == 1)
        let file = try #require((documents["attach saves"]?["fields"] as? [String: Any])?["data"] as? [String: Any])
        #expect(Set(file.keys).isSubset(of: ["hash", "size", "type"]))

        // HASH is BLAKE2b-256 of the content, lowercase hex (checked against b2sum if present).
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/b2sum") {
            try Subprocess.run("/usr/bin/b2sum", ["-l", "256", cli.path("bye.txt")], stdout: .file(cli.path("b2sum.out")))
            let output = try String(contentsOfFile: cli.path("b2sum.out"), encoding: .utf8)
            #expect(output.hasPrefix(try #require(file["hash"] as? String)))
        }

        // The dump is the same bytes with or without --json, with sorted keys.
        let dump = try cli.ok(["dump", "--store", cli.path("a.db")]).stdout
        let dumpJSON = try cli.ok(["dump", "--store", cli.path("a.db"), "--json"]).stdout
        #expect(dump == dumpJSON)
        #expect(dump.hasPrefix("{\"collections\":{\"games\":"))
        #expect(documents["dump"]?["collections"] != nil)
    }

    @Test func failuresPrintAnErrorDocumentWithJSON() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let missing = try cli.run(["get", "games", "zelda", "--store", cli.path("none.db"), "--json"])
        #expect(missing.status == 1)
        let error = try #require(try missing.object()["error"] as? [String: Any])
        #expect(error["exitCode"] as? Int == 1)
        #expect((error["message"] as? String)?.contains(cli.path("none.db")) == true)
        let usage = try cli.run(["put", "games", "--json"])
        #expect(usage.status == 2)
        #expect((try usage.object()["error"] as? [String: Any])?["code"] as? String == "usage")
    }
}
