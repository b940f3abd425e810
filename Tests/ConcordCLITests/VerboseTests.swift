import Foundation
import Testing

/// `--verbose` prints what the library logs through swift-log on stderr; without it
/// nothing of it appears, and stdout stays the command's own (one JSON document with
/// `--json`).
@Suite struct VerboseTests {
    @Test func verbosePrintsTheLibrarysLogOnStderrOnly() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "games", "zelda", "title=Zelda"])

        let quiet = try cli.on("a", ["sync"])
        #expect(!quiet.stderr.contains("concord.sync"), "\(quiet.stderr)")

        let sync = try cli.on("a", ["sync", "--verbose", "--json"])
        #expect(sync.stderr.contains("concord.sync"), "\(sync.stderr)")
        #expect(sync.stderr.contains("sync done"), "\(sync.stderr)")
        #expect(sync.stderr.contains("replica="), "every entry names its replica: \(sync.stderr)")
        #expect((try sync.object())["pushed"] != nil, "stdout is still one JSON document: \(sync.stdout)")

        try cli.on("b", ["put", "games", "mario", "title=Mario"])
        let pulled = try cli.on("b", ["sync", "--verbose"])
        #expect(pulled.stderr.contains("applied=1") || pulled.stderr.contains("applied: 1"), "\(pulled.stderr)")

        let compact = try cli.on("a", ["compact", "--verbose"])
        #expect(compact.stderr.contains("concord.compaction"), "\(compact.stderr)")
        #expect(compact.stderr.contains("concord.sweep"), "\(compact.stderr)")

        let doctor = try cli.on("a", ["doctor", "--verbose"])
        #expect(doctor.stderr.contains("concord.doctor") && doctor.stderr.contains("doctor done"), "\(doctor.stderr)")
    }
}
