import Foundation
import Testing

/// `doctor` finds a torn batch and a missing one; `--repair` on their writer re-uploads them.
@Suite struct DoctorTests {
    @Test func tornAndMissingBatchesAreFoundAndRepairedByTheirWriter() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        for value in 1...3 {
            try cli.on("a", ["put", "items", "i", "n=\(value)"])
            try cli.on("a", ["sync"])
        }
        #expect(try cli.on("b", ["doctor", "--json"]).object()["ok"] as? Bool == true)

        let replica = try #require(try cli.on("a", ["status", "--offline", "--json"]).object()["replica"] as? String)
        let deltas = cli.path("remote/replicas/\(replica)/deltas")
        let torn = deltas + "/0000000000000001"
        let bytes = try Data(contentsOf: URL(fileURLWithPath: torn))
        try bytes.prefix(bytes.count / 2).write(to: URL(fileURLWithPath: torn))
        try FileManager.default.removeItem(atPath: deltas + "/0000000000000002")
        try Data("a sync client's copy".utf8).write(to: URL(fileURLWithPath: deltas + "/0000000000000001 (conflicted copy)"))

        let report = try cli.run(["doctor", "--json", "--store", cli.path("b.db")])
        #expect(report.status == 1)
        let problems = try #require(try report.object()["problems"] as? [[String: Any]])
        #expect(Set(problems.compactMap { $0["kind"] as? String }) == ["damaged", "missingBatch"])
        #expect(problems.allSatisfy { ($0["note"] as? String)?.contains("doctor --repair") == true })
        #expect((try report.object()["ignored"] as? [String])?.count == 1)

        // b cannot repair a's batches; a can.
        #expect(try cli.run(["doctor", "--repair", "--store", cli.path("b.db")]).status == 1)
        let repaired = try cli.on("a", ["doctor", "--repair", "--json"]).object()
        #expect(repaired["ok"] as? Bool == true)
        #expect((repaired["problems"] as? [[String: Any]])?.allSatisfy { $0["repaired"] as? Bool == true } == true)

        // A fresh replica now catches up through the repaired batches.
        try cli.replicas(["c"])
        try cli.on("c", ["sync"])
        #expect(try cli.dump("c") == (try cli.dump("a")))
    }
}
