import ConcordTestServers
import Foundation
import Testing

/// `sync --watch` runs the LAN peer channel by default: two watches connected by `--peer`
/// pass a `concord put` from one to the other while their remote folder is gone, and
/// `concord status` names the peer connected.
@Suite struct WatchPeersTests {
    static func startWatch(_ cli: CLI, _ replica: String, _ arguments: [String]) throws -> (Subprocess, URL) {
        var environment = ProcessInfo.processInfo.environment
        environment["CONCORD_PASSPHRASE"] = cli.passphrase
        let output = cli.folder.appendingPathComponent("\(replica).out")
        let process = try Subprocess.start(
            CLI.binary.path, ["sync", "--watch"] + arguments + ["--store", cli.path("\(replica).db")],
            environment: environment, stdout: .file(output.path), stderr: .file(cli.path("\(replica).err")))
        return (process, output)
    }

    @Test func twoWatchesPassAPutOverThePeerChannelWithTheRemoteGone() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let (a, aOutput) = try Self.startWatch(cli, "a", ["--peer-port", "0"])
        #expect(try await WatchTests.eventually(aOutput) { $0.contains("peers: listening on port ") })
        let said = try String(contentsOf: aOutput, encoding: .utf8)
        let port = try #require(said.split(separator: "\n").first { $0.hasPrefix("peers: listening on port ") }?.split(separator: " ")[4])
        let (b, bOutput) = try Self.startWatch(cli, "b", ["--peer-port", "0", "--peer", "127.0.0.1:\(port)"])
        #expect(try await WatchTests.eventually(bOutput) { $0.contains("connecting to 127.0.0.1:\(port)") })
        let connected = try await WatchTests.eventually(aOutput) { _ in
            (try? cli.run(["status", "--offline", "--store", cli.path("a.db")]).stdout.contains("peers: listening on port \(port); connected: ")) ?? false
        }
        #expect(connected, "a's status names b as connected")
        // The remote goes away (a drive unplugged); the put still reaches b, over the LAN.
        try FileManager.default.moveItem(atPath: cli.path("remote"), toPath: cli.path("remote-away"))
        try cli.on("a", ["put", "notes", "n", "text=over the LAN"])
        let arrived = try await WatchTests.eventually(bOutput) { _ in
            (try? cli.run(["get", "notes", "n", "--store", cli.path("b.db")]).stdout.contains("over the LAN")) ?? false
        }
        #expect(arrived, "b applied a's put from the peer channel")
        a.kill(SIGINT)
        b.kill(SIGINT)
        #expect(a.wait() == .exited(0))
        #expect(b.wait() == .exited(0))
        // --no-peers: no channel, and status says so.
        try FileManager.default.moveItem(atPath: cli.path("remote-away"), toPath: cli.path("remote"))
        let (quiet, quietOutput) = try Self.startWatch(cli, "a", ["--no-peers"])
        #expect(try await WatchTests.eventually(quietOutput) { $0.contains("live sync with") })
        #expect(try cli.on("a", ["status", "--offline"]).stdout.contains("peers: off"))
        #expect(!(try String(contentsOf: quietOutput, encoding: .utf8)).contains("peers: listening"))
        quiet.kill(SIGINT)
        #expect(quiet.wait() == .exited(0))
    }

    /// Two watches given no `--peer` find each other through the announcements they put on
    /// the remote, and a put crosses between them once the remote is gone; `concord status`
    /// names the peer announced.
    @Test func twoWatchesFindEachOtherThroughTheRemote() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let announcements = cli.path("remote") + "/heads/peers"
        func announced() -> Int { (try? FileManager.default.contentsOfDirectory(atPath: announcements).count) ?? 0 }
        let (a, aOutput) = try Self.startWatch(cli, "a", ["--peer-port", "0"])
        #expect(try await WatchTests.eventually(aOutput) { _ in announced() == 1 }, "a announced its channel")
        #expect(try await WatchTests.eventually(aOutput) { $0.contains("announcing it on the remote") })
        let (b, bOutput) = try Self.startWatch(cli, "b", ["--peer-port", "0"])
        let found = try await WatchTests.eventually(bOutput) { _ in
            (try? cli.run(["status", "--offline", "--store", cli.path("b.db")]).stdout.contains("; connected: ")) ?? false
        }
        #expect(found, "b connected to a, found through its announcement")
        let status = try cli.run(["status", "--offline", "--store", cli.path("b.db")]).stdout
        #expect(status.contains("announced peers: ") && status.contains(":") && !status.contains("announced peers: none"))
        try FileManager.default.moveItem(atPath: cli.path("remote"), toPath: cli.path("remote-away"))
        try cli.on("a", ["put", "notes", "n", "text=found on the remote"])
        let arrived = try await WatchTests.eventually(bOutput) { _ in
            (try? cli.run(["get", "notes", "n", "--store", cli.path("b.db")]).stdout.contains("found on the remote")) ?? false
        }
        #expect(arrived, "b applied a's put from the peer channel it discovered")
        try FileManager.default.moveItem(atPath: cli.path("remote-away"), toPath: cli.path("remote"))
        a.kill(SIGINT)
        b.kill(SIGINT)
        #expect(a.wait() == .exited(0))
        #expect(b.wait() == .exited(0))
        #expect(announced() == 0, "each withdrew its announcement as it stopped")
    }
}
