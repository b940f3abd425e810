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
}
