import ConcordTestServers
import Foundation
import Testing

/// `sync --watch` syncs on an interval, picks up other replicas' changes, and stops cleanly
/// on SIGINT after finishing its current sync; it pushes what other processes commit to its
/// store, pulls as soon as the watched folder shows another replica's push, and polls with
/// `--poll`. Waits are generous deadlines for an observable outcome, never a measured time.
@Suite struct WatchTests {
    /// Starts `sync --watch` on `a.db` with `arguments`, stdout to `watch.out`.
    static func startWatch(_ cli: CLI, _ arguments: [String]) throws -> (Subprocess, URL) {
        var environment = ProcessInfo.processInfo.environment
        environment["CONCORD_PASSPHRASE"] = cli.passphrase
        let output = cli.folder.appendingPathComponent("watch.out")
        let process = try Subprocess.start(
            CLI.binary.path, ["sync", "--watch"] + arguments + ["--store", cli.path("a.db")],
            environment: environment, stdout: .file(output.path), stderr: .file(cli.path("watch.err")))
        return (process, output)
    }

    /// Whether `output` comes to satisfy `check` within `seconds`.
    static func eventually(_ output: URL, within seconds: Int = 30, _ check: (String) -> Bool) async throws -> Bool {
        for _ in 0..<(seconds * 20) {
            if check((try? String(contentsOf: output, encoding: .utf8)) ?? "") { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return check((try? String(contentsOf: output, encoding: .utf8)) ?? "")
    }

    /// A `concord put` in another terminal is pushed by the running watch, and another
    /// replica's push is pulled as soon as the folder shows it — with the default slowest
    /// poll of five minutes, only the push after the commit and the folder's notification
    /// can have done either within the test's deadline.
    @Test func watchPushesAnotherProcessesPutAndPullsAtOnce() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let (process, output) = try Self.startWatch(cli, ["--json"])
        #expect(try await Self.eventually(output) { $0.contains("\"pushed\"") }, "the first sync ran")
        try cli.on("a", ["put", "notes", "from-a", "text=typed elsewhere"])
        let pushed = try await Self.eventually(output) { $0.contains("\"pushed\":1") }
        #expect(pushed, "the watch pushed the other process's put")
        try cli.on("b", ["sync"])
        #expect(try cli.on("b", ["get", "notes", "from-a"]).stdout.contains("typed elsewhere"))
        try cli.on("b", ["put", "notes", "from-b", "text=hello"])
        try cli.on("b", ["sync"])
        let applied = try await Self.eventually(output) { $0.contains("\"applied\":1") }
        #expect(applied, "the watch pulled b's push")
        process.kill(SIGINT)
        #expect(process.wait() == .exited(0))
        #expect(try cli.on("a", ["get", "notes", "from-b"]).stdout.contains("hello"))
    }

    /// With `--poll` the folder is not watched, and the poll still brings other replicas'
    /// changes.
    @Test func watchWithPollStillConverges() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let (process, output) = try Self.startWatch(cli, ["--poll", "--interval", "0.5"])
        #expect(try await Self.eventually(output) { $0.contains("polling every 0.5 s after activity") && $0.contains("(--poll)") })
        try cli.on("b", ["put", "notes", "n", "text=polled"])
        try cli.on("b", ["sync"])
        let applied = try await Self.eventually(output) { $0.contains("applied 1 change from other replicas") }
        #expect(applied, "the poll pulled b's push")
        process.kill(SIGINT)
        #expect(process.wait() == .exited(0))
        #expect(try cli.on("a", ["get", "notes", "n"]).stdout.contains("polled"))
    }

    /// `concord status` says what `sync --watch` would use for the remote, and what a
    /// running one does.
    @Test func statusSaysHowTheReplicaIsConnected() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        let idle = try #require(try cli.on("a", ["status", "--offline", "--json"]).object()["live"] as? [String: Any])
        #expect(idle["running"] as? Bool == false)
        #if canImport(Glibc)
        #expect(idle["mode"] as? String == "watch")
        #expect((idle["description"] as? String)?.contains("(inotify)") == true)
        #endif
        #expect(try cli.on("a", ["status", "--offline"]).stdout.contains("live: no `sync --watch` running; it would be "))

        let (process, output) = try Self.startWatch(cli, ["--poll"])
        #expect(try await Self.eventually(output) { $0.contains("live sync with") })
        let running = try #require(try cli.on("a", ["status", "--offline", "--json"]).object()["live"] as? [String: Any])
        #expect(running["running"] as? Bool == true)
        #expect((running["pid"] as? NSNumber)?.int32Value == process.pid)
        #expect(running["mode"] as? String == "poll")
        #expect(try cli.on("a", ["status", "--offline"]).stdout.contains("live: `sync --watch` (process \(process.pid)) is polling every 1 s"))
        process.kill(SIGINT)
        #expect(process.wait() == .exited(0))
        let after = try #require(try cli.on("a", ["status", "--offline", "--json"]).object()["live"] as? [String: Any])
        #expect(after["running"] as? Bool == false)
    }

    @Test func watchSyncsUntilInterrupted() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        var environment = ProcessInfo.processInfo.environment
        environment["CONCORD_PASSPHRASE"] = cli.passphrase
        let output = cli.folder.appendingPathComponent("watch.out")
        let process = try Subprocess.start(
            CLI.binary.path, ["sync", "--watch", "--interval", "0.2", "--json", "--store", cli.path("a.db")],
            environment: environment, stdout: .file(output.path))
        try await Task.sleep(for: .milliseconds(500))
        try cli.on("b", ["put", "notes", "n", "text=hi"])
        try cli.on("b", ["sync"])
        var applied = false
        for _ in 0..<50 where !applied {
            try await Task.sleep(for: .milliseconds(100))
            applied = try String(contentsOf: output, encoding: .utf8).contains("\"applied\":1")
        }
        process.kill(SIGINT)
        #expect(process.wait() == .exited(0))
        #expect(applied, "the watching replica applied b's change")
        let lines = try String(contentsOf: output, encoding: .utf8).split(separator: "\n")
        #expect(lines.count >= 2)
        for line in lines {
            #expect((try? JSONSerialization.jsonObject(with: Data(line.utf8))) is [String: Any], "each sync prints one JSON line: \(line)")
        }
        #expect(try cli.on("a", ["get", "notes", "n"]).stdout.contains("\"hi\""))
    }

    /// A remote that cannot be reached when the watch starts (the drive not mounted yet, the
    /// server down) is tried again with backoff, not given up on; once it is back, the
    /// watch syncs as usual.
    @Test func watchRetriesARemoteThatIsNotThereAtFirst() async throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        try cli.on("a", ["put", "notes", "n", "text=offline"])
        try FileManager.default.moveItem(atPath: cli.path("remote"), toPath: cli.path("unmounted"))
        var environment = ProcessInfo.processInfo.environment
        environment["CONCORD_PASSPHRASE"] = cli.passphrase
        let output = cli.folder.appendingPathComponent("watch.out")
        let errors = cli.folder.appendingPathComponent("watch.err")
        let process = try Subprocess.start(
            CLI.binary.path, ["sync", "--watch", "--interval", "0.5", "--json", "--store", cli.path("a.db")],
            environment: environment, stdout: .file(output.path), stderr: .file(errors.path))
        var retried = false
        for _ in 0..<100 where !retried {
            try await Task.sleep(for: .milliseconds(100))
            retried = ((try? String(contentsOf: errors, encoding: .utf8)) ?? "").contains("cannot reach the remote")
        }
        #expect(retried, "the first failure is reported, and the watch goes on")
        try FileManager.default.moveItem(atPath: cli.path("unmounted"), toPath: cli.path("remote"))
        var pushed = false
        for _ in 0..<100 where !pushed {
            try await Task.sleep(for: .milliseconds(100))
            pushed = ((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("\"pushed\":1")
        }
        process.kill(SIGINT)
        #expect(process.wait() == .exited(0))
        #expect(pushed, "once the remote is back, the watch pushes what was written")
    }
}
