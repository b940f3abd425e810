import ConcordCore
import ConcordRemote
import ConcordS3
import ConcordTestServers
import ConcordWebDAV
import Foundation
import Testing

/// Several stores on one remote (README, "Several stores on one remote"): `remote set URL
/// --remote-store NAME [--create]`, `stores list`, `stores delete`, on a folder, a WebDAV
/// server (rclone) and an S3 server (moto) started on loopback.
@Suite struct RemoteStoresTests {
    /// Names that cannot occur by chance in ciphertext or in a layout name.
    static let personal = "Personal-Recipes-7f3a"
    static let team = "Team-Project-q9zx"
    static let otherPassphrase = "a different passphrase for the team"

    @Test func twoStoresAndTheRootStoreShareAFolderEachOpenedAloneAndOneDeletedAlone() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        var team = cli
        team.passphrase = Self.otherPassphrase
        let url = cli.remoteURL
        // Today's single store at the root keeps working beside the named ones.
        try cli.replicas(["root"])
        try cli.on("root", ["put", "notes", "n1", "text=RootValue"])
        try cli.on("root", ["sync"])

        for name in ["a", "b"] { try cli.on(name, ["init", "--name", name]) }
        try team.on("c", ["init", "--name", "c"])
        let createdA = try cli.on("a", ["remote", "set", url, "--remote-store", Self.personal, "--create", "--json"]).object()
        #expect(createdA["created"] as? Bool == true)
        let personalID = try #require(createdA["storeID"] as? String)
        let createdC = try team.on("c", ["remote", "set", url, "--remote-store", Self.team, "--create", "--json"]).object()
        let teamID = try #require(createdC["storeID"] as? String)
        #expect(personalID != teamID)
        let joined = try cli.on("b", ["remote", "set", url, "--remote-store", Self.personal, "--json"]).object()
        #expect(joined["created"] as? Bool == false)
        #expect(joined["storeID"] as? String == personalID)

        try cli.on("a", ["put", "recipes", "r1", "title=PersonalSoup"])
        try cli.on("b", ["put", "recipes", "r2", "title=PersonalBread"])
        try team.on("c", ["put", "tasks", "t1", "title=TeamSecretTask"])
        try Data("TeamSecretFile".utf8).write(to: URL(fileURLWithPath: cli.path("plan.txt")))
        try team.on("c", ["attach", "tasks", "t1", "plan", cli.path("plan.txt")])
        try team.on("c", ["sync"])
        for name in ["a", "b", "a"] { try cli.on(name, ["sync"]) }
        let dumpA = try cli.dump("a")
        #expect(dumpA == (try cli.dump("b")))
        #expect(dumpA.contains("PersonalSoup") && dumpA.contains("PersonalBread") && !dumpA.contains("TeamSecretTask") && !dumpA.contains("RootValue"))
        #expect(!(try team.dump("c")).contains("PersonalSoup"))
        #expect(!(try cli.dump("root")).contains("PersonalSoup"))

        // Each passphrase sees its own store's name, and only id, time and size of the others.
        let listed = try Self.stores(try cli.ok(["stores", "list", url, "--json"]).object())
        #expect(listed.count == 3)
        #expect(listed.first?["root"] as? Bool == true)
        let mine = try #require(listed.first { $0["id"] as? String == personalID })
        #expect(mine["name"] as? String == Self.personal && mine["opened"] as? Bool == true)
        #expect((mine["objects"] as? Int ?? 0) > 3 && (mine["bytes"] as? Int ?? 0) > 0 && (mine["created"] as? Int ?? 0) > 0)
        let theirs = try #require(listed.first { $0["id"] as? String == teamID })
        #expect(theirs["name"] is NSNull && theirs["opened"] as? Bool == false && (theirs["created"] as? Int ?? 0) > 0)
        let asTeam = try Self.stores(try team.ok(["stores", "list", url, "--json"]).object())
        #expect(asTeam.first { $0["id"] as? String == teamID }?["name"] as? String == Self.team)
        #expect(asTeam.first { $0["id"] as? String == personalID }?["name"] is NSNull)
        // Without any passphrase: no names at all, and no failure.
        let anonymous = try Self.stores(try cli.run(["stores", "list", url, "--json"], environment: ["CONCORD_PASSPHRASE": nil]).object())
        #expect(anonymous.count == 3 && anonymous.allSatisfy { $0["name"] is NSNull })

        // Opening the personal store reads nothing of the team's: every file and folder of it
        // keeps the access time set here (a read or a listing would move it).
        let teamFolder = cli.path("remote/stores/\(teamID)")
        let old = timespec(tv_sec: 1_000_000_000, tv_nsec: 0)
        let teamEntries = try Self.entries(below: teamFolder)
        for entry in teamEntries { Self.setAccessTime(entry, old) }
        try cli.on("a", ["put", "recipes", "r3", "title=PersonalPie"])
        for name in ["a", "b"] { try cli.on(name, ["sync"]) }
        try cli.on("a", ["status"])
        try cli.on("a", ["doctor"])
        try cli.on("a", ["compact"])
        for entry in teamEntries {
            #expect(Self.accessTime(entry) == old.tv_sec, "opening the personal store touched \(entry)")
        }

        // No store name, record value or key on the remote in plaintext.
        for file in try Self.entries(below: cli.path("remote")) where !Self.isFolder(file) {
            let text = String(decoding: try Data(contentsOf: URL(fileURLWithPath: file)), as: UTF8.self)
            for secret in [Self.personal, Self.team, "PersonalSoup", "TeamSecretTask", "TeamSecretFile"] {
                #expect(!text.contains(secret), "\(file) holds \(secret) in plaintext")
            }
        }

        // The team store is in use (c synced just now): deleting it is refused unless forced.
        let personalBefore = try Self.snapshot(cli.path("remote/stores/\(personalID)"))
        expectFailure(try team.run(["stores", "delete", url, Self.team, "--store", cli.path("none.db")]), status: 1, mentioning: ["synced", "--force"])
        expectFailure(try cli.run(["stores", "delete", url, Self.team, "--force", "--store", cli.path("none.db")]), status: 1, mentioning: [Self.team])
        // A deletion killed part-way (before its third unlinkat, by the fault library) leaves
        // a store that still opens by its name, with its heads gone first; running it again,
        // now without --force, finishes it.
        let teamObjects = try Self.entries(below: teamFolder).filter { !Self.isFolder($0) }
        let faultLibrary = CLI.binary.deletingLastPathComponent().appendingPathComponent("libConcordFaultInjection.so").path
        try #require(FileManager.default.fileExists(atPath: faultLibrary), "\(faultLibrary) is missing: `swift build` builds it")
        let killed = try team.run(
            ["stores", "delete", url, Self.team, "--force", "--store", cli.path("none.db")],
            environment: ["LD_PRELOAD": faultLibrary, "CONCORD_FAULT": "unlinkat:3:kill"])
        #expect(killed.status != 0)
        let left = try Self.entries(below: teamFolder).filter { !Self.isFolder($0) }
        #expect(teamObjects.count >= 4 && left.count == teamObjects.count - 2)
        #expect(left.contains { $0.hasSuffix("/concord.json") } && !left.contains { $0.contains("/heads/") })
        #expect(try Self.stores(try team.ok(["stores", "list", url, "--json"]).object()).contains { $0["name"] as? String == Self.team })
        let deleted = try team.ok(["stores", "delete", url, Self.team, "--json", "--store", cli.path("none.db")]).object()
        #expect(deleted["id"] as? String == teamID)
        #expect(try Self.entries(below: teamFolder).allSatisfy(Self.isFolder))
        let after = try Self.stores(try cli.ok(["stores", "list", url, "--json"]).object())
        #expect(after.map { $0["id"] as? String } == listed.filter { $0["id"] as? String != teamID }.map { $0["id"] as? String })
        #expect(try Self.snapshot(cli.path("remote/stores/\(personalID)")) == personalBefore)
        for name in ["a", "root"] { try cli.on(name, ["sync"]) }
        #expect(try cli.dump("a").contains("PersonalPie"))
        #expect(try cli.dump("root").contains("RootValue"))
        // The root store's doctor takes the named stores' folders for theirs, not for foreign files.
        let rootDoctor = try cli.on("root", ["doctor", "--json"]).object()
        #expect(rootDoctor["ok"] as? Bool == true && (rootDoctor["ignored"] as? [Any])?.isEmpty == true, "\(rootDoctor)")
        expectFailure(try team.run(["remote", "set", url, "--remote-store", Self.team, "--store", cli.path("c.db")]), status: 1, mentioning: ["no store named", "--create"])
    }

    @Test(arguments: [ServerKind.rcloneAuth, .moto])
    func twoStoresOnAnHTTPRemoteAreListedOpenedAloneAndOneDeletedAlone(_ kind: ServerKind) async throws {
        let (cli, target) = try await HTTPRemoteTests.Target.cli(kind)
        defer { cli.cleanUp() }
        var team = cli
        team.passphrase = Self.otherPassphrase
        try cli.on("a", ["init", "--name", "a"])
        try cli.on("b", ["init", "--name", "b"])
        try team.on("c", ["init", "--name", "c"])
        let personalID = try #require(try cli.on("a", ["remote", "set"] + target.arguments + ["--remote-store", Self.personal, "--create", "--json"]).object()["storeID"] as? String)
        let teamID = try #require(try team.on("c", ["remote", "set"] + target.arguments + ["--remote-store", Self.team, "--create", "--json"]).object()["storeID"] as? String)
        try cli.on("b", ["remote", "set"] + target.arguments + ["--remote-store", Self.personal])
        try cli.on("a", ["put", "recipes", "r1", "title=PersonalSoup"])
        try team.on("c", ["put", "tasks", "t1", "title=TeamSecretTask"])
        try team.on("c", ["sync"])

        let listed = try Self.stores(try cli.ok(["stores", "list"] + target.arguments + ["--json"]).object())
        #expect(Set(listed.compactMap { $0["id"] as? String }) == [personalID, teamID])
        #expect(listed.first { $0["id"] as? String == personalID }?["name"] as? String == Self.personal)
        #expect(listed.first { $0["id"] as? String == teamID }?["name"] is NSNull)

        // On the WebDAV server, the team store's folder is made unreadable to the server
        // itself: any request for its objects or listing would fail the personal store's sync.
        let teamOnDisk = target.server.directory + "/data" + (URLComponents(string: target.url)?.path ?? "") + "/stores/\(teamID)"
        if kind == .rcloneAuth { #expect(chmod(teamOnDisk, 0) == 0) }
        for name in ["a", "b"] { try cli.on(name, ["sync"]) }
        try cli.on("a", ["doctor"])
        if kind == .rcloneAuth { #expect(chmod(teamOnDisk, 0o777) == 0) }
        #expect(try cli.dump("b").contains("PersonalSoup"))

        // No plaintext store name or value in any object of the remote.
        var seen = 0
        for folder in ["", "/stores/\(personalID)", "/stores/\(teamID)"] {
            let remote = try Self.remote(target, folder: folder)
            for object in try await remote.list(prefix: "") {
                let bytes = try #require(try await remote.get(object.path))
                let text = String(decoding: bytes, as: UTF8.self)
                #expect(!text.contains(Self.personal) && !text.contains(Self.team) && !text.contains("PersonalSoup") && !text.contains("TeamSecretTask"))
                seen += 1
            }
        }
        #expect(seen >= 8)

        let deleted = try team.ok(["stores", "delete"] + target.arguments + [Self.team, "--force", "--json", "--store", cli.path("none.db")]).object()
        #expect((deleted["objectsDeleted"] as? Int ?? 0) >= 3)
        let after = try Self.stores(try cli.ok(["stores", "list"] + target.arguments + ["--json"]).object())
        #expect(after.compactMap { $0["id"] as? String } == [personalID])
        try cli.on("b", ["sync"])
        #expect(try cli.dump("b").contains("PersonalSoup"))
    }

    @Test func plantedNamesUnderStoresAreIgnoredAndALinkedStoreFolderIsRefused() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let url = cli.remoteURL
        for name in ["a", "b"] { try cli.on(name, ["init", "--name", name]) }
        let mine = try #require(try cli.on("a", ["remote", "set", url, "--remote-store", "mine", "--create", "--json"]).object()["storeID"] as? String)
        try cli.on("b", ["remote", "set", url, "--remote-store", "mine"])
        try cli.on("a", ["put", "c", "r", "v=1"])
        try cli.on("a", ["sync"])
        let manifest = try Data(contentsOf: URL(fileURLWithPath: cli.path("remote/stores/\(mine)/concord.json")))
        let garbage = String(repeating: "0", count: 31) + "1"
        let copied = String(repeating: "0", count: 31) + "2"
        let plants: [(String, Data)] = [
            ("remote/stores/not-a-store-id/concord.json", manifest),
            ("remote/stores/\(mine.uppercased())/concord.json", manifest),
            ("remote/stores/\(mine)/concord.json (conflicted copy)", manifest),
            ("remote/stores/\(garbage)/concord.json", Data("{\"formatVersion\": 1, torn".utf8)),
            ("remote/stores/\(copied)/concord.json", manifest),
            ("remote/stores/concord.json", manifest),
        ]
        for (path, bytes) in plants {
            try FileManager.default.createDirectory(atPath: (cli.path(path) as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try bytes.write(to: URL(fileURLWithPath: cli.path(path)))
        }
        // A real store elsewhere, linked in under the remote's stores/.
        try cli.on("d", ["init"])
        let elsewhere = try #require(try cli.on("d", ["remote", "set", "file://" + cli.path("other"), "--remote-store", "elsewhere", "--create", "--json"]).object()["storeID"] as? String)
        try FileManager.default.createSymbolicLink(atPath: cli.path("remote/stores/\(elsewhere)"), withDestinationPath: cli.path("other/stores/\(elsewhere)"))

        let listed = try Self.stores(try cli.ok(["stores", "list", url, "--json"]).object())
        #expect(Set(listed.compactMap { $0["id"] as? String }) == [mine, garbage, copied])
        #expect(listed.first { $0["id"] as? String == mine }?["name"] as? String == "mine")
        #expect(listed.first { $0["id"] as? String == garbage }?["problem"] is String)
        #expect((listed.first { $0["id"] as? String == copied }?["problem"] as? String)?.contains("copied") == true)
        try cli.on("b", ["sync"])
        #expect(try cli.dump("b") == (try cli.dump("a")))
        try cli.on("a", ["doctor"])

        // The store's own folder replaced by a link to a copy of it: refused, never followed.
        try FileManager.default.moveItem(atPath: cli.path("remote/stores/\(mine)"), toPath: cli.path("moved"))
        try FileManager.default.createSymbolicLink(atPath: cli.path("remote/stores/\(mine)"), withDestinationPath: cli.path("moved"))
        try cli.on("a", ["put", "c", "r", "v=2"])
        let before = try Self.snapshot(cli.path("moved"))
        let refused = try cli.run(["sync", "--store", cli.path("a.db")])
        #expect(refused.status == 1 && refused.stderrLines.count == 1 && refused.stderr.contains("link"), "\(refused.stderr)")
        #expect(try Self.snapshot(cli.path("moved")) == before)
    }

    // MARK: Helpers

    static func stores(_ document: [String: Any]) throws -> [[String: Any]] {
        try #require(document["stores"] as? [[String: Any]], "no stores array: \(document)")
    }

    /// Every file and folder below `folder` (not following links).
    static func entries(below folder: String) throws -> [String] {
        let found = try FileManager.default.subpathsOfDirectory(atPath: folder).map { folder + "/" + $0 }
        return [folder] + found
    }

    static func isFolder(_ path: String) -> Bool {
        var isFolder: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) && isFolder.boolValue
    }

    /// Each file's path and contents below `folder`.
    static func snapshot(_ folder: String) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for entry in try entries(below: folder) where !isFolder(entry) {
            result[entry] = try Data(contentsOf: URL(fileURLWithPath: entry))
        }
        return result
    }

    static func setAccessTime(_ path: String, _ time: timespec) {
        // The modification time stays as it is (UTIME_OMIT).
        var times = [time, timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]
        _ = utimensat(AT_FDCWD, path, &times, AT_SYMLINK_NOFOLLOW)
    }

    static func accessTime(_ path: String) -> Int {
        var info = stat()
        _ = lstat(path, &info)
        #if canImport(Darwin)
        return info.st_atimespec.tv_sec
        #else
        return info.st_atim.tv_sec
        #endif
    }

    /// The remote's root, or `folder` below it, opened with the server's credentials.
    static func remote(_ target: HTTPRemoteTests.Target, folder: String) throws -> any Remote {
        let components = try #require(URLComponents(string: target.url))
        if target.kind == .rcloneAuth {
            return try WebDAVRemote(url: target.url + folder + "/", user: ServerKind.webDAVUser, password: ServerKind.webDAVPassword)
        }
        return try S3Remote(
            bucket: try #require(components.host), prefix: components.path + folder, endpoint: target.server.origin,
            credentials: .init(accessKey: target.server.accessKey, secretKey: target.server.secretKey))
    }
}
