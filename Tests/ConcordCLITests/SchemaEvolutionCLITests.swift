import Foundation
import SchemaEvolutionModels
import Testing

/// Two versions of an app's schema file from the command line (README, "Evolving your
/// model"): `schema apply` takes the newer one and refuses what would break, queries see
/// the new names, `status` tells the older device, and a minimum refuses its writes.
@Suite struct SchemaEvolutionCLITests {
    static func ids(_ result: CLI.Result) throws -> [String] {
        try #require(try result.object()["records"] as? [[String: Any]]).compactMap { $0["id"] as? String }
    }

    @Test func twoVersionsOfASchemaFileSyncAndTheOlderDeviceIsTold() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try GameSchema.version1.write(toFile: cli.path("v1.json"), atomically: true, encoding: .utf8)
        try GameSchema.version2.write(toFile: cli.path("v2.json"), atomically: true, encoding: .utf8)
        try cli.replicas(["phone", "laptop"])
        try cli.on("phone", ["schema", "apply", cli.path("v1.json")])
        try cli.on("phone", ["put", "games", "zelda", "title=Zelda", "level=5", "rating=4", "released=\"2024-03-01\"", "tags=[\"rpg\"]"])
        try cli.on("phone", ["put", "games", "odd", "title=Odd", "level=1", "released=\"someday\""])
        try cli.on("laptop", ["schema", "apply", cli.path("v1.json")])
        let applied = try cli.on("laptop", ["schema", "apply", cli.path("v2.json"), "--json"]).object()
        #expect((applied["declared"] as? [[String: Any]])?.first?["version"] as? Int == 2)
        #expect(try cli.on("phone", ["schema", "apply", cli.path("v1.json")]).stdout.contains("declared games (version 1)"))
        try cli.syncAll(["phone", "laptop"])
        // Applied again with the records there, the day that does not convert is said.
        let again = try cli.on("laptop", ["schema", "apply", cli.path("v2.json")])
        #expect(again.stdout.contains("games.released: 1 value kept as written, not read as date"))
        let unread = try cli.on("laptop", ["schema", "apply", cli.path("v2.json"), "--json"]).object()
        #expect(((unread["declared"] as? [[String: Any]])?.first?["unread"] as? [String: Any])?["released"] as? Int == 1)

        // Version 2 queries under the new names; the stored records are unchanged.
        let strong = try cli.on("laptop", ["query", "games", "--where", "tier>3", "--json"])
        #expect(try Self.ids(strong) == ["zelda"])
        let fields = try #require(((try strong.object()["records"] as? [[String: Any]])?.first)?["fields"] as? [String: Any])
        #expect(fields["tier"] as? Int == 5 && fields["level"] == nil)
        #expect(try Self.ids(cli.on("laptop", ["query", "games", "--where", "notes = \"\"", "--order", "title", "--json"])) == ["odd", "zelda"])
        #expect(try Self.ids(cli.on("laptop", ["query", "games", "--where", "released = null", "--json"])) == ["odd"])
        #expect(try cli.on("laptop", ["get", "games", "odd", "--json"]).stdout.contains("\"released\":\"someday\""))
        #expect(try cli.on("phone", ["query", "games", "--where", "level>3", "--json"]).stdout.contains("\"level\":5"))
        let shown = try cli.on("laptop", ["schema", "show", "--json"]).object()
        #expect(shown["version"] as? Int == 2)
        let declared = try #require(((shown["collections"] as? [String: Any])?["games"] as? [String: Any])?["fields"] as? [String: Any])
        #expect((declared["tier"] as? [String: Any])?["renamedFrom"] as? String == "level")
        #expect((declared["tags"] as? [String: Any])?["retired"] as? Bool == true)
        #expect(try cli.on("laptop", ["schema", "show"]).stdout.contains("tags: set<string> (retired"))

        // What would break is refused: exit 2, one line saying why, nothing changed.
        let laptop = ["--store", cli.path("laptop.db")]
        expectFailure(try cli.run(["schema", "apply", cli.path("v1.json")] + laptop), status: 2, mentioning: ["version 1 would go backwards"])
        try #"{"version": 3, "collections": {"games": {"fields": {"rating": {"type": "string"}}}}}"#.write(toFile: cli.path("v3.json"), atomically: true, encoding: .utf8)
        expectFailure(try cli.run(["schema", "apply", cli.path("v3.json")] + laptop), status: 2, mentioning: ["\"rating\"", "changes type from double to string with no conversion"])
        let refusal = try cli.run(["schema", "apply", cli.path("v3.json"), "--json"] + laptop).object()
        #expect((refusal["error"] as? [String: Any])?["code"] as? String == "incompatibleSchema")
        try #"{"version": 3, "collections": {"games": {"fields": {"level": {"type": "string"}}}}}"#.write(toFile: cli.path("v3.json"), atomically: true, encoding: .utf8)
        expectFailure(try cli.run(["schema", "apply", cli.path("v3.json")] + laptop), status: 2, mentioning: ["declare \"convertedFrom\": {\"type\": \"int\"}"])
        #expect(try cli.on("laptop", ["schema", "show", "--json"]).object()["version"] as? Int == 2)

        // The phone, on version 1, is told; the laptop is not.
        let newer = "another device uses a newer version of this app's data: update to see all of it"
        let phoneStatus = try cli.on("phone", ["status"]).stdout
        #expect(phoneStatus.contains(newer) && phoneStatus.contains("version 2 (newer)") && phoneStatus.contains("this replica writes version 1"))
        #expect(try cli.on("phone", ["status", "--json"]).object()["newerSchema"] as? Bool == true)
        #expect(!(try cli.on("laptop", ["status"]).stdout.contains(newer)))
        let listed = try #require(try cli.on("phone", ["replicas", "--json"]).object()["replicas"] as? [[String: Any]])
        #expect(listed.compactMap { ($0["schema"] as? [String: Any])?["writes"] as? Int }.sorted() == [1, 2])
        // It keeps working.
        try cli.on("phone", ["put", "games", "mana", "title=Mana", "level=4"])

        // Version 2 requires itself: the phone's writes are refused until it updates.
        try cli.on("laptop", ["schema", "minimum", "2"])
        try cli.syncAll(["laptop", "phone"])
        let refused = try cli.run(["put", "games", "mana", "level=6", "--store", cli.path("phone.db")])
        expectFailure(refused, status: 1, mentioning: ["version 2 or newer is required", "update the app"])
        #expect(try cli.on("phone", ["status"]).stdout.contains("local writes are refused"))
        #expect(try Self.ids(cli.on("laptop", ["query", "games", "--where", "tier=4", "--json"])) == ["mana"])
        try cli.on("phone", ["schema", "apply", cli.path("v2.json")])
        try cli.on("phone", ["put", "games", "mana", "level=6"])
        #expect(!(try cli.on("phone", ["status"]).stdout.contains(newer)))
    }
}
