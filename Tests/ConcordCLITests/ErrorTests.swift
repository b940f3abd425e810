import ConcordCore
import Foundation
import Testing

/// Bad input exits non-zero with one line naming the problem: 2 for bad usage, 1 for an
/// operation that failed.
@Suite struct ErrorTests {
    @Test(arguments: [
        ["put", "games"],
        ["frobnicate"],
        ["put", "games", "zelda", "not-an-assignment"],
        ["put", "games", "zelda", "x=[1"],
        ["sync", "--push-only", "--pull-only"],
        ["sync", "--watch", "--interval", "-1"],
        ["sync", "--interval", "5"],
        ["sync", "--poll"],
        ["resolve", "saves", "s1", "data"],
        ["resolve", "saves", "s1", "data", "--keep", "nothex"],
        ["remote", "set", "ftp://example.com/x"],
        ["get"],
    ])
    func badArgumentsExitTwo(arguments: [String]) throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let result = try cli.run(arguments)
        expectFailure(result, status: 2, mentioning: ["--help"])
        #expect(result.stdout.isEmpty)
    }

    @Test func missingStoreExitsOneNamingThePath() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let path = cli.path("nowhere.db")
        for command in [["get", "games", "zelda"], ["list", "games"], ["sync"], ["dump"], ["status"]] {
            let result = try cli.run(command + ["--store", path])
            expectFailure(result, status: 1, mentioning: [path, "concord init"])
        }
        // $CONCORD_STORE is honoured the same way.
        let viaEnvironment = try cli.run(["dump"], environment: ["CONCORD_STORE": path])
        expectFailure(viaEnvironment, status: 1, mentioning: [path])
    }

    @Test func wrongPassphraseExitsOne() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        try cli.on("b", ["init"])
        let store = ["--store", cli.path("b.db")]
        let joining = try cli.run(["remote", "set", cli.remoteURL] + store, environment: ["CONCORD_PASSPHRASE": "wrong"])
        expectFailure(joining, status: 1, mentioning: ["passphrase does not unlock"])
        try cli.on("b", ["remote", "set", cli.remoteURL])
        let syncing = try cli.run(["sync"] + store, environment: ["CONCORD_PASSPHRASE": "wrong"])
        expectFailure(syncing, status: 1, mentioning: ["passphrase does not unlock"])
    }

    @Test func missingPassphraseWithoutTerminalSaysHowToGiveIt() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        let result = try cli.run(["sync", "--store", cli.path("a.db")], environment: ["CONCORD_PASSPHRASE": String?.none])
        expectFailure(result, status: 1, mentioning: ["CONCORD_PASSPHRASE", "--key-file"])
    }

    @Test func unreachableRemoteExitsOne() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init"])
        let store = ["--store", cli.path("a.db")]
        expectFailure(try cli.run(["remote", "set", "file:///nonexistent"] + store), status: 1, mentioning: ["/nonexistent"])
        // A remote that vanishes (an unmounted drive) fails the sync, naming the folder.
        try cli.ok(["remote", "set", cli.remoteURL, "--create"] + store)
        try FileManager.default.moveItem(atPath: cli.path("remote"), toPath: cli.path("unmounted"))
        expectFailure(try cli.run(["sync"] + store), status: 1, mentioning: [cli.path("remote")])
    }

    @Test func operationsOnMissingThingsExitOne() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init"])
        let store = ["--store", cli.path("a.db")]
        expectFailure(try cli.run(["get", "games", "nope"] + store), status: 1, mentioning: ["games/nope"])
        expectFailure(try cli.run(["sync"] + store), status: 1, mentioning: ["remote set"])
        expectFailure(try cli.run(["attach", "a", "b", "f", "missing.bin"] + store), status: 1, mentioning: ["missing.bin"])
        expectFailure(try cli.run(["init"] + store), status: 1, mentioning: ["already exists"])
    }
}
