import Foundation
import Testing

/// `concord key rotate`: a rotation killed before its key object lands leaves no new
/// generation; one killed right after leaves a generation every recipient opens. Members
/// pick it up at their next sync; the replica left out is told in one line that it was
/// removed, and keeps its copy read-only.
@Suite struct KeyRotationCLITests {
    @Test func aRotationKilledPartWayConvergesAndTheRemovedReplicaIsToldAndKeepsItsCopy() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b", "c"])
        var keys: [String: String] = [:]
        for name in ["a", "b", "c"] {
            keys[name] = try #require(try cli.on(name, ["id", "create", "--json"]).object()["publicKey"] as? String)
            try cli.on(name, ["put", "notes", "from-\(name)", "text=before"])
        }
        try cli.syncAll(["a", "b", "c"])
        let cBefore = try cli.dump("c")
        let keyFolder = cli.path("remote/heads/keys")
        // Key objects by their names (a put killed before its rename leaves a temporary file,
        // which is no layout name).
        func keyObjects() -> [String] { ((try? FileManager.default.contentsOfDirectory(atPath: keyFolder)) ?? []).filter { !$0.hasPrefix(".") } }

        let faultLibrary = CLI.binary.deletingLastPathComponent().appendingPathComponent("libConcordFaultInjection.so").path
        try #require(FileManager.default.fileExists(atPath: faultLibrary), "\(faultLibrary) is missing: `swift build` builds it")
        let rotate = ["key", "rotate", try #require(keys["b"]), "--store", cli.path("a.db")]
        // Killed at its first rename — the key object's put moving into place: no new
        // generation; everyone, c included, syncs on as before.
        let first = try cli.run(rotate, environment: ["LD_PRELOAD": faultLibrary, "CONCORD_FAULT": "renameat:1:kill"])
        #expect(first.status != 0)
        #expect(keyObjects().isEmpty)
        try cli.syncAll(["a", "b", "c"])
        // Killed at its second rename — its head, after the key object landed: a generation
        // that every recipient opens.
        let second = try cli.run(rotate, environment: ["LD_PRELOAD": faultLibrary, "CONCORD_FAULT": "renameat:2:kill"])
        #expect(second.status != 0)
        #expect(keyObjects().count == 1)

        // a and b pick it up with no action and converge.
        try cli.on("a", ["put", "notes", "after-a", "text=secret-a"])
        for name in ["a", "b"] { try cli.on(name, ["sync"]) }
        try cli.on("b", ["put", "notes", "after-b", "text=secret-b"])
        for name in ["b", "a"] { try cli.on(name, ["sync"]) }
        #expect(try cli.dump("a") == cli.dump("b"))
        #expect(try cli.dump("a").contains("secret-b"))

        // c: its sync fails in one line saying so; it keeps what it had; writes are refused.
        expectFailure(try cli.run(["sync", "--store", cli.path("c.db")]), status: 1, mentioning: ["removed"])
        expectFailure(try cli.run(["put", "notes", "late", "text=x", "--store", cli.path("c.db")]), status: 1, mentioning: ["removed"])
        #expect(try cli.dump("c") == cBefore)
        let status = try cli.on("c", ["status", "--json"]).object()
        #expect((status["removed"] as? String)?.contains("removed") == true)
        let doctor = try cli.run(["doctor", "--store", cli.path("c.db")])
        #expect(doctor.status == 1 && doctor.stdout.contains("removed"))
        // What was written since the rotation is nowhere in plaintext.
        let remote = cli.path("remote")
        for path in FileManager.default.subpaths(atPath: remote) ?? [] {
            guard let data = FileManager.default.contents(atPath: remote + "/" + path) else { continue }
            #expect(!String(decoding: data, as: UTF8.self).contains("secret-"), "\(path)")
        }
    }
}
