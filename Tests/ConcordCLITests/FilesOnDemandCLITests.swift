import ConcordCore
import Foundation
import Testing

/// `concord files …` and `export` on demand, exactly as README "Large files and small
/// devices" names them.
@Suite struct FilesOnDemandCLITests {
    /// Replica a attaches `count` files; b is on demand and synced.
    private func setUp(_ cli: CLI, count: Int, size: Int) throws -> [Data] {
        try cli.replicas(["a", "b"])
        var contents: [Data] = []
        for index in 0..<count {
            var generator = SeededBytes(seed: UInt64(index + 1))
            let data = Data(generator.bytes(size + index))
            try data.write(to: cli.folder.appendingPathComponent("f\(index)"))
            try cli.on("a", ["attach", "photos", "p\(index)", "image", cli.path("f\(index)")])
            contents.append(data)
        }
        try cli.on("a", ["sync"])
        try cli.on("b", ["files", "policy", "on-demand"])
        try cli.on("b", ["sync"])
        return contents
    }

    @Test func exportFetchesOnDemandAndStatusCounts() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let contents = try setUp(cli, count: 3, size: 100_000)
        var status = try cli.on("b", ["files", "status", "--json"]).object()
        #expect(status["policy"] as? String == "on-demand")
        #expect(status["filesNotLocal"] as? Int == 3)
        #expect(status["bytesCached"] as? Int == 0)
        let get = try cli.on("b", ["get", "photos", "p1", "--json"]).object()
        #expect((get["files"] as? [String: String]) == ["image": "notLocal"])

        try cli.on("b", ["export", "photos", "p1", "image", cli.path("out")])
        #expect(try Data(contentsOf: cli.folder.appendingPathComponent("out")) == contents[1])
        status = try cli.on("b", ["files", "status", "--json"]).object()
        #expect(status["bytesCached"] as? Int == 100_001)
        #expect(((try cli.on("b", ["get", "photos", "p1", "--json"]).object())["files"] as? [String: String]) == ["image": "local"])
        let overall = try cli.on("b", ["status", "--offline", "--json"]).object()
        #expect((overall["files"] as? [String: Any])?["filesCached"] as? Int == 1)

        // Pins: fetched by sync, kept by evict.
        try cli.on("b", ["files", "pin", "photos", "p2", "image"])
        try cli.on("b", ["sync"])
        let evicted = try cli.on("b", ["files", "evict", "--json"]).object()
        #expect(evicted["evicted"] as? Int == 1)
        #expect(evicted["bytesLeft"] as? Int == 100_002)
        status = try cli.on("b", ["files", "status", "--json"]).object()
        #expect((status["pins"] as? [[String: String]]) == [["collection": "photos", "id": "p2", "field": "image"]])
        try cli.on("b", ["files", "unpin", "photos", "p2", "image"])
        expectFailure(try cli.run(["files", "unpin", "photos", "p2", "image", "--store", cli.path("b.db")]), status: 1, mentioning: ["no pin"])
    }

    @Test func badSizesAndArgumentsAreUsageErrors() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("s", ["init"])
        let store = ["--store", cli.path("s.db")]
        for bad in ["12x", "MiB", "1.5GiB", "99999999999GiB"] {
            expectFailure(try cli.run(["files", "policy", "on-demand", "--budget", bad] + store), status: 2, mentioning: [bad])
        }
        expectFailure(try cli.run(["files", "policy", "on-demand", "--budget=-5"] + store), status: 2, mentioning: ["-5"])
        expectFailure(try cli.run(["files", "pin"] + store), status: 2, mentioning: ["collection"])
        expectFailure(try cli.run(["files", "policy", "lazy"] + store), status: 2, mentioning: ["lazy"])
        expectFailure(try cli.run(["files", "policy", "eager", "--budget", "1MiB"] + store), status: 2, mentioning: ["on-demand"])
        for (size, bytes) in [("100MiB", 100 << 20), ("2 KiB", 2048), ("1GiB", 1 << 30), ("777", 777)] {
            let document = try cli.run(["files", "policy", "on-demand", "--budget", size, "--json"] + store).object()
            #expect(document["budget"] as? Int == bytes)
        }
    }

    @Test func aContentTheRemoteLacksIsOneLineNamingTheFile() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        _ = try setUp(cli, count: 1, size: 5_000)
        let blobs = cli.folder.appendingPathComponent("remote/blobs")
        for shard in try FileManager.default.contentsOfDirectory(atPath: blobs.path) {
            try FileManager.default.removeItem(at: blobs.appendingPathComponent(shard))
        }
        let result = try cli.run(["export", "photos", "p0", "image", cli.path("out"), "--store", cli.path("b.db")])
        expectFailure(result, status: 1, mentioning: ["photos/p0 image", "the remote has no"])
        #expect(!FileManager.default.fileExists(atPath: cli.path("out")))
        let get = try cli.on("b", ["get", "photos", "p0", "--json"]).object()
        #expect((get["files"] as? [String: String]) == ["image": "unavailable"])
    }

    /// An export on demand of a 48 MiB file streams it: the exporting process's peak
    /// resident set (`/usr/bin/time -f %M`) exceeds that of exporting a 10 KB file by far
    /// less than the file.
    @Test(.enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/time")))
    func exportOnDemandStreamsInBoundedMemory() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let big = cli.folder.appendingPathComponent("big")
        #expect(FileManager.default.createFile(atPath: big.path, contents: nil))
        let handle = try FileHandle(forWritingTo: big)
        var generator = SeededBytes(seed: 48)
        let block = generator.bytes(1 << 20)
        for index in 0..<48 { try handle.write(contentsOf: Data([UInt8(index)]) + Data(block.dropFirst())) }
        try handle.close()
        try Data(generator.bytes(10_000)).write(to: cli.folder.appendingPathComponent("small"))
        try cli.on("a", ["attach", "videos", "big", "clip", big.path])
        try cli.on("a", ["attach", "videos", "small", "clip", cli.path("small")])
        try cli.on("a", ["sync"])
        try cli.on("b", ["files", "policy", "on-demand"])
        try cli.on("b", ["sync"])
        func peakKiB(_ id: String) throws -> Int {
            let result = try cli.run(["-f", "%M", CLI.binary.path, "export", "videos", id, "clip", cli.path("\(id).out"), "--store", cli.path("b.db")],
                                     executable: "/usr/bin/time")
            #expect(result.status == 0, "export \(id): \(result.stderr)")
            return Int(result.stderrLines.last.map(String.init) ?? "") ?? Int.max
        }
        let small = try peakKiB("small")
        let large = try peakKiB("big")
        #expect(try Data(contentsOf: cli.folder.appendingPathComponent("big.out")) == Data(contentsOf: big))
        print("export on demand: 48 MiB peaked at \(large) KiB, 10 KB at \(small) KiB")
        #expect(large - small < 24 << 10, "exporting 48 MiB on demand peaked at \(large) KiB, a 10 KB file at \(small) KiB")
    }

    /// One process evicts over and over while another exports: every export is whole and
    /// right, fetched again when it was evicted, never torn or missing.
    @Test func evictionInOneProcessNeverTearsAReadInAnother() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let contents = try setUp(cli, count: 3, size: 400_000)
        let evictor = Process()
        evictor.executableURL = URL(fileURLWithPath: "/bin/sh")
        evictor.arguments = ["-c", "for i in $(seq 40); do \"$0\" files evict --store \"$1\" >/dev/null || exit 1; done", CLI.binary.path, cli.path("b.db")]
        try evictor.run()
        var rounds = 0
        while evictor.isRunning || rounds < 3 {
            for (index, content) in contents.enumerated() {
                try cli.on("b", ["export", "photos", "p\(index)", "image", cli.path("out\(index)")])
                #expect(try Data(contentsOf: cli.folder.appendingPathComponent("out\(index)")) == content, "round \(rounds), file \(index)")
            }
            rounds += 1
        }
        evictor.waitUntilExit()
        #expect(evictor.terminationStatus == 0)
        #expect(rounds >= 3)
    }
}

/// Bytes from a seeded xorshift generator.
struct SeededBytes {
    var state: UInt64
    init(seed: UInt64) { state = seed &* 0x9E37_79B9_7F4A_7C15 | 1 }
    mutating func bytes(_ count: Int) -> [UInt8] {
        (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state >> 32)
        }
    }
}
