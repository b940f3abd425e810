import ConcordTestServers
import Foundation
import Testing

/// `sync --watch` syncs on an interval, picks up other replicas' changes, and stops cleanly
/// on SIGINT after finishing its current sync.
@Suite struct WatchTests {
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
