import ConcordCore
import ConcordRemote
import ConcordS3
import ConcordTestServers
import ConcordWebDAV
import Foundation
import Testing

/// `concord remote set https://…` and `s3://…` against real servers on loopback: a WebDAV
/// server that asks for a password (rclone with Basic auth) and an S3 server (moto).
@Suite struct HTTPRemoteTests {
    /// How a test reaches one server from the CLI: the `remote set` arguments and the
    /// environment that carries the password or the credentials.
    struct Target {
        let kind: ServerKind
        let server: RunningServer
        let url: String
        let arguments: [String]
        let environment: [String: String?]

        /// A CLI whose every run carries a fresh target's password or credentials.
        static func cli(_ kind: ServerKind) async throws -> (CLI, Target) {
            var cli = try CLI()
            let target = try await fresh(kind)
            cli.environment = target.environment
            return (cli, target)
        }

        static func fresh(_ kind: ServerKind) async throws -> Target {
            let server = try await LoopbackServers.shared.server(kind)
            let name = "c" + UUID().uuidString.prefix(12).lowercased()
            switch kind {
            case .rcloneAuth:
                let url = "\(server.origin)/stores/\(name)"
                return Target(
                    kind: kind, server: server, url: url, arguments: [url, "--user", ServerKind.webDAVUser],
                    environment: ["CONCORD_REMOTE_PASSWORD": ServerKind.webDAVPassword])
            default:
                let url = "s3://\(name)/team/store"
                return Target(
                    kind: kind, server: server, url: url, arguments: [url, "--endpoint", server.origin, "--region", "us-east-1"],
                    environment: ["AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": server.secretKey,
                                  "AWS_SESSION_TOKEN": nil, "AWS_PROFILE": nil])
            }
        }
    }

    static let kinds: [ServerKind] = [.rcloneAuth, .moto]

    @Test(arguments: kinds)
    func replicasConvergeThroughAnHTTPRemoteFromTheCLI(_ kind: ServerKind) async throws {
        let (cli, target) = try await Target.cli(kind)
        defer { cli.cleanUp() }

        try cli.on("a", ["init", "--name", "a"])
        let created = try cli.on("a", ["remote", "set"] + target.arguments + ["--create", "--json"]).object()
        #expect(created["created"] as? Bool == true)
        #expect(created["kind"] as? String == (kind == .moto ? "s3" : "webdav"))
        let stored = try #require(created["remote"] as? String)
        #expect(!stored.contains(ServerKind.webDAVPassword) && !stored.contains(target.server.secretKey))
        try cli.on("b", ["init", "--name", "b"])
        let joined = try cli.on("b", ["remote", "set"] + target.arguments + ["--json"]).object()
        #expect(joined["created"] as? Bool == false)
        #expect(joined["storeID"] as? String == created["storeID"] as? String)

        try cli.on("a", ["put", "games", "zelda", "title=Zelda", "level=1"])
        try Data("a save file".utf8).write(to: URL(fileURLWithPath: cli.path("save.txt")))
        try cli.on("a", ["attach", "saves", "slot1", "data", cli.path("save.txt")])
        try cli.on("b", ["put", "games", "zelda", "level=2"])
        try cli.on("b", ["add", "games", "zelda", "tags", "adventure"])
        try cli.syncAll(["a", "b"])
        let dump = try cli.dump("a")
        #expect(dump == (try cli.dump("b")))
        #expect(dump.contains("adventure") && dump.contains("Zelda"))
        try cli.on("b", ["export", "saves", "slot1", "data", cli.path("out.txt")])
        #expect(try String(contentsOfFile: cli.path("out.txt"), encoding: .utf8) == "a save file")

        let doctor = try cli.on("a", ["doctor", "--json"]).object()
        #expect(doctor["ok"] as? Bool == true)
        #expect(doctor["remote"] as? String == stored)
        let status = try cli.on("b", ["status", "--json"]).object()
        #expect((status["remoteReplicas"] as? [Any])?.count == 2)
        let compact = try cli.on("a", ["compact", "--json"]).object()
        #expect(compact["remoteTemporariesDeleted"] as? Int == 0)
        let shown = try cli.on("b", ["remote", "show", "--json"]).object()
        #expect(shown["remote"] as? String == stored)
        #expect(shown["folder"] is NSNull)

        // What the server holds is ciphertext under the layout's names only.
        let remote = try remote(of: target, stored: stored)
        let objects = try await remote.list(prefix: "")
        #expect(objects.contains { $0.path == "concord.json" })
        #expect(objects.contains { RemoteLayout.parse($0.path).map { if case .blob = $0 { true } else { false } } ?? false })
        for object in objects where object.path != "concord.json" {
            let bytes = try #require(try await remote.get(object.path))
            #expect(!String(decoding: bytes, as: UTF8.self).contains("Zelda"))
        }
    }

    @Test(arguments: kinds)
    func theDemoRunsThroughAnHTTPRemoteAndLeavesNothingBehind(_ kind: ServerKind) async throws {
        let (cli, target) = try await Target.cli(kind)
        defer { cli.cleanUp() }
        if kind == .moto {
            // The bucket must exist for the demo to leave it empty (it creates a missing one).
            try cli.on("setup", ["init"])
            try cli.on("setup", ["remote", "set"] + target.arguments + ["--create"])
        }
        let json = try cli.ok(["demo", "--json", "--remote"] + target.arguments).object()
        #expect(json["identical"] as? Bool == true)
        #expect(json["conflictsFound"] as? Int == 2)
        #expect(json["conflictsLeft"] as? Int == 0)
        #expect((json["remoteObjects"] as? Int ?? 0) > 5)
        let used = try #require(json["remote"] as? String)
        #expect(used.contains("concord-demo-"))
        let remote = try remote(of: target, stored: used)
        if let webDAV = remote as? WebDAVRemote {
            #expect(try await webDAV.rootExists() == false)
        } else {
            #expect(try await remote.list(prefix: "").isEmpty)
        }
    }

    @Test func wrongOrMissingCredentialsAndMissingStorageAreOneLineErrors() async throws {
        var cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init"])
        let webDAV = try await Target.fresh(.rcloneAuth)
        let s3 = try await Target.fresh(.moto)

        // WebDAV: no such folder without --create; a wrong password; no password at all.
        cli.environment = webDAV.environment
        expectFailure(try cli.run(["remote", "set"] + webDAV.arguments + ["--store", cli.path("a.db")]), status: 1, mentioning: ["does not exist", "--create"])
        expectFailure(
            try cli.run(["remote", "set"] + webDAV.arguments + ["--create", "--store", cli.path("a.db")], environment: ["CONCORD_REMOTE_PASSWORD": "wrong"]),
            status: 1, mentioning: ["401", "password"])
        expectFailure(
            try cli.run(["remote", "set"] + webDAV.arguments + ["--create", "--store", cli.path("a.db")], environment: ["CONCORD_REMOTE_PASSWORD": nil]),
            status: 1, mentioning: ["CONCORD_REMOTE_PASSWORD"])

        // S3: no such bucket without --create; no credentials anywhere.
        cli.environment = s3.environment
        expectFailure(try cli.run(["remote", "set"] + s3.arguments + ["--store", cli.path("a.db")]), status: 1, mentioning: ["bucket", "--create"])
        expectFailure(
            try cli.run(["remote", "set"] + s3.arguments + ["--create", "--store", cli.path("a.db")],
                        environment: ["AWS_ACCESS_KEY_ID": nil, "AWS_SECRET_ACCESS_KEY": nil, "HOME": cli.folder.path]),
            status: 1, mentioning: ["AWS_ACCESS_KEY_ID"])
        // Nothing was recorded by the failed attempts.
        #expect(try cli.on("a", ["remote", "show", "--json"]).object()["remote"] is NSNull)

        // A folder that disappears after set-up is named as such at the next sync.
        cli.environment = webDAV.environment
        try cli.on("a", ["remote", "set"] + webDAV.arguments + ["--create"])
        try cli.on("a", ["put", "games", "zelda", "title=Zelda"])
        try cli.on("a", ["sync"])
        let stored = try #require(try cli.on("a", ["remote", "show", "--json"]).object()["remote"] as? String)
        let remote = try #require(try remote(of: webDAV, stored: stored) as? WebDAVRemote)
        try await remote.deleteRoot()
        expectFailure(try cli.run(["sync", "--store", cli.path("a.db")]), status: 1, mentioning: ["does not exist", "nothing local was lost"])
        #expect(try cli.dump("a").contains("Zelda"))
    }

    @Test func garbageRemoteArgumentsAreUsageErrors() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init"])
        let store = ["--store", cli.path("a.db")]
        let cases: [([String], [String])] = [
            (["s3:///prefix"], ["bucket"]),
            (["https://user:secret@example.com/dav"], ["password"]),
            (["https://example.com/dav?x=1"], ["query"]),
            (["file:///tmp/x", "--endpoint", "https://example.com"], ["--endpoint"]),
            (["s3://bucket/p", "--user", "alice"], ["--user"]),
            (["https://alice@example.com/dav", "--user", "bob"], ["alice", "bob"]),
            (["s3://bucket/p", "--endpoint", "ftp://example.com"], ["endpoint"]),
            (["s3://bucket/p", "--region", "us east"], ["region"]),
            (["s3://bucket/p?colour=red"], ["colour"]),
            (["s3://bucket/a/../b"], [".."]),
            (["ftp://example.com/x"], ["https://", "s3://"]),
        ]
        for (arguments, words) in cases {
            expectFailure(try cli.run(["remote", "set"] + arguments + store), status: 2, mentioning: words)
        }
        expectFailure(try cli.run(["demo", "--user", "alice"]), status: 2, mentioning: ["--remote"])
    }

    /// The remote a stored URL names, opened by the tests with the server's credentials.
    func remote(of target: Target, stored: String) throws -> any Remote {
        let components = try #require(URLComponents(string: stored))
        if target.kind == .rcloneAuth {
            var url = components
            url.user = nil
            return try WebDAVRemote(url: try #require(url.string), user: ServerKind.webDAVUser, password: ServerKind.webDAVPassword)
        }
        return try S3Remote(
            bucket: try #require(components.host), prefix: components.path, endpoint: target.server.origin,
            credentials: .init(accessKey: target.server.accessKey, secretKey: target.server.secretKey))
    }
}
