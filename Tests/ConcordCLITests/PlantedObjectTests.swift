import ConcordCore
import Foundation
import Testing

/// Whoever can write the storage, without the key, cannot make a replica hang, exhaust its
/// memory or disk, crash, or work for ever: at worst it stops with one line saying what is
/// wrong. These are the cases a person meets with the CLI.
@Suite struct PlantedObjectTests {
    static func replicaID(_ cli: CLI, _ name: String) throws -> String {
        try #require(try cli.on(name, ["status", "--offline", "--json"]).object()["replica"] as? String)
    }

    /// Writes `bytes` at `path` below the remote folder, as a stranger would.
    static func plant(_ cli: CLI, _ path: String, _ bytes: [UInt8] = Array("hello".utf8)) throws {
        let file = cli.path("remote/" + path)
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
    }

    /// A planted head name claiming seq ffffffffffffffff bounds where pull looks, but counts
    /// nothing: the progress line says the number is unknown, never 9223372036854775807.
    @Test func progressNeverCountsAPlantedHeadsClaimAsObjects() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.on("a", ["sync"])
        let aID = try Self.replicaID(cli, "a")
        try Self.plant(cli, "heads/\(aID)-ffffffffffffffff")
        let synced = try cli.on("b", ["sync"])
        #expect(!synced.stdout.contains("9223372036854775807"), "\(synced.stdout)")
        #expect(synced.stdout.contains("downloading (number of objects unknown)"), "\(synced.stdout)")
        #expect(try cli.dump("b").contains("one"))
        // With only authenticated heads, the count is the batches they announce: 1.
        try cli.on("a", ["put", "notes", "n2", "title=two"])
        try cli.on("a", ["sync"])
        try FileManager.default.removeItem(atPath: cli.path("remote/heads/\(aID)-ffffffffffffffff"))
        let counted = try cli.on("b", ["sync"])
        #expect(counted.stdout.contains("downloading (1 object)"), "\(counted.stdout)")
    }

    /// A junk first head of a replica nobody saw: `doctor` names it planted with the file to
    /// remove, `replicas forget` accepts its id, and `compact` is not held back by it.
    @Test func aJunkFirstHeadIsNamedByDoctorAndCanBeForgotten() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.syncAll(["a", "b"])
        let stranger = "0123456789abcdef0123456789abcdef"
        let junk = "heads/\(stranger)-0000000000000000"
        try Self.plant(cli, junk)
        let doctor = try cli.run(["doctor", "--json", "--store", cli.path("a.db")])
        #expect(doctor.status == 1)
        let problems = try #require(try doctor.object()["problems"] as? [[String: Any]])
        #expect(problems.count == 1 && problems.first?["kind"] as? String == "planted" && problems.first?["path"] as? String == junk, "\(problems)")
        #expect((problems.first?["action"] as? String)?.contains("remove \(junk)") == true, "\(problems)")
        let compacted = try cli.on("a", ["compact", "--json"]).object()
        #expect(compacted["batchesDeleted"] as? Int == 1, "\(compacted)")
        let forgotten = try cli.on("a", ["replicas", "forget", stranger, "--json"]).object()
        #expect(forgotten["id"] as? String == stranger && forgotten["status"] as? String == "forgotten", "\(forgotten)")
    }
}
