import ConcordCore
import ConcordRemote
import ConcordTesting
import Foundation
import Testing

@Suite struct FolderRemoteTests {
    let folder = TemporaryFolder()
    let remote: FolderRemote

    init() throws {
        remote = try FolderRemote(root: folder.path)
    }

    @Test func conforms() async {
        let issues = await RemoteConformance.check(remote)
        #expect(issues == [])
        #expect(folder.everything() .allSatisfy { !$0.contains(FolderRemote.temporaryPrefix) })
    }

    @Test func objectsAreFilesAtTheirLayoutPaths() async throws {
        let head = RemoteLayout.head(Sample.a, seq: 3)
        try await remote.put(head, [1, 2, 3])
        let onDisk = try Data(contentsOf: URL(fileURLWithPath: folder.path + "/" + head))
        #expect([UInt8](onDisk) == [1, 2, 3])
        #expect(remote.root == folder.path)
    }

    @Test func foreignFilesInTheFolderAreIgnored() async throws {
        let a = "0123456789abcdeffedcba9876543210"
        let valid = [
            RemoteLayout.manifestPath,
            RemoteLayout.head(Sample.a, seq: 0x2a),
            RemoteLayout.batch(Sample.a, seq: 1),
            RemoteLayout.snapshot(Sample.b, seq: 9),
            RemoteLayout.blob(keyedName: Sample.keyedName),
        ]
        for (index, path) in valid.enumerated() { try await remote.put(path, Sample.bytes(index + 1)) }
        let foreign = [
            "heads/\(a)-000000000000002a (conflicted copy 2026-11-21).x",
            "heads/\(a)-000000000000002a.sync-conflict-20261121-101010-ABCDEFG",
            "concord (conflicted copy 2026-11-21).json",
            "~$file", ".DS_Store", "heads/.DS_Store", "desktop.ini",
            "heads/\(a.uppercased())-000000000000002B",
            "heads/\(a)-00000000000002b",
            "replicas/\(a)/deltas/0000000000000002.tmp",
            "replicas/\(a)/deltas/.syncthing.0000000000000002.tmp",
            "replicas/\(a)/deltas/0000000000000002~",
            "blobs/AB/AB\(String(Sample.keyedName.dropFirst(2)))",
            "blobs/ab/\(Sample.keyedName)",
            ".stversions/heads/\(a)-000000000000002c",
            "Dropbox/heads/\(a)-000000000000002d",
            "notes/shopping.txt",
            "heads/.concord-tmp-00000000000000ff",
        ]
        for path in foreign { folder.plant(path) }
        // A folder named like an object is not an object.
        try FileManager.default.createDirectory(
            atPath: folder.path + "/" + RemoteLayout.head(Sample.b, seq: 1), withIntermediateDirectories: true)

        let listed = try await remote.list(prefix: "")
        #expect(listed.map(\.path) == valid.sorted())
        #expect(try await remote.list(prefix: "heads/").map(\.path) == [RemoteLayout.head(Sample.a, seq: 0x2a)])
        #expect(try await remote.list(prefix: "blobs/ab/").isEmpty)
        #expect(try await remote.list(prefix: ".stversions/").isEmpty)
        #expect(try await remote.list(prefix: "notes/").isEmpty)
        // Foreign names cannot be read, written or deleted through the remote either.
        for path in foreign {
            await #expect(throws: ConcordError.self, "\(path)") { try await remote.get(path) }
            await #expect(throws: ConcordError.self, "\(path)") { try await remote.delete(path) }
        }
        #expect(FileManager.default.fileExists(atPath: folder.path + "/~$file"))
    }

    @Test func listingReportsSizeAndModificationTimeInMilliseconds() async throws {
        let path = RemoteLayout.batch(Sample.a, seq: 5)
        try await remote.put(path, Sample.bytes(1234))
        let object = try #require(try await remote.list(prefix: RemoteLayout.batchesPrefix(Sample.a)).first)
        #expect(object.path == path)
        #expect(object.size == 1234)
        let attributes = try FileManager.default.attributesOfItem(atPath: folder.path + "/" + path)
        let date = try #require(attributes[.modificationDate] as? Date)
        let expected = Int64(date.timeIntervalSince1970 * 1000)
        let modified = try #require(object.modified)
        #expect(abs(Int64(modified) - expected) <= 1, "milliseconds since the epoch, as the file system says")
    }

    @Test func noTemporaryFileRemainsAfterPuts() async throws {
        try await remote.put(RemoteLayout.head(Sample.a, seq: 1), Sample.bytes(10))
        try await remote.put(RemoteLayout.head(Sample.a, seq: 1), Sample.bytes(20))
        var sent = 0
        try await remote.putStream(RemoteLayout.blob(keyedName: Sample.keyedName)) { () throws(ConcordError) -> [UInt8] in
            sent += 1
            return sent <= 3 ? Sample.bytes(70_000, salt: UInt8(sent)) : []
        }
        #expect(folder.everything() == [
            "blobs", "blobs/3f", "blobs/3f/\(Sample.keyedName)",
            "heads", "heads/\(Sample.a)-0000000000000001",
        ])
    }

    @Test func anInterruptedPutIsNeverListed() async throws {
        let head = RemoteLayout.head(Sample.a, seq: 7)
        // What a crash between creating the temporary file and renaming it leaves behind.
        folder.plant("heads/.concord-tmp-0123456789abcdef", "half of a hea")
        #expect(try await remote.list(prefix: "").isEmpty)
        #expect(try await remote.get(head) == nil)
        try await remote.put(head, [7])
        #expect(try await remote.list(prefix: "").map(\.path) == [head])
        #expect(try await remote.get(head) == [7])

        // The sweep keeps young temporaries (maybe another device's upload) and removes old ones.
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        #expect(try remote.sweepTemporaryFiles(olderThan: 3_600_000, now: now) == 0)
        #expect(try remote.sweepTemporaryFiles(olderThan: 3_600_000, now: now + 7_200_000) == 1)
        #expect(folder.everything() == ["heads", "heads/\(Sample.a)-0000000000000007"])
    }

    @Test func aStreamPutWhoseSourceFailsLeavesNothing() async throws {
        let path = RemoteLayout.batch(Sample.a, seq: 1)
        try await remote.put(path, [1, 2, 3])
        var calls = 0
        let error = try await #require(throws: ConcordError.self) {
            try await remote.putStream(path) { () throws(ConcordError) -> [UInt8] in
                calls += 1
                if calls == 3 { throw ConcordError(.malformed, "source broke") }
                return Sample.bytes(65536)
            }
        }
        #expect(error.code == .malformed)
        #expect(try await remote.get(path) == [1, 2, 3])
        #expect(folder.everything().allSatisfy { !$0.contains(FolderRemote.temporaryPrefix) })
    }

    @Test func streamsUse64KiBChunks() async throws {
        let path = RemoteLayout.snapshot(Sample.a, seq: 1)
        let bytes = Sample.bytes(3 * 65536 + 100)
        try await remote.put(path, bytes)
        var chunks: [Int] = []
        var received: [UInt8] = []
        let found = try await remote.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
            chunks.append(chunk.count)
            received += chunk
        }
        #expect(found)
        #expect(chunks == [65536, 65536, 65536, 100])
        #expect(received == bytes)
        #expect(try await remote.getStream(RemoteLayout.snapshot(Sample.a, seq: 2)) { (_: [UInt8]) throws(ConcordError) in } == false)
    }

    @Test func invalidPathsAreRefusedBeforeTouchingTheDisk() async throws {
        for path in ["../outside", "/etc/passwd", "heads/../../outside", "notes.txt", "heads/x (conflicted copy).txt", ""] {
            let error = try await #require(throws: ConcordError.self) { try await remote.put(path, [1]) }
            #expect(error.code == .invalidRemotePath)
        }
        await #expect(throws: ConcordError.self) { try await remote.list(prefix: "../") }
        #expect(folder.everything().isEmpty)
        #expect(!FileManager.default.fileExists(atPath: (folder.path as NSString).deletingLastPathComponent + "/outside"))
    }

    @Test func aMissingRootIsAnErrorNotAnEmptyStore() async throws {
        let parent = TemporaryFolder()
        let root = parent.path + "/store"
        let error = try #require(throws: ConcordError.self) { try FolderRemote(root: root) }
        #expect(error.code == .remote)
        #expect(error.message.contains(root))
        #expect(error.message.contains("does not exist"))

        let created = try FolderRemote(root: root + "/", createIfMissing: true)
        #expect(created.root == root)
        try await created.put(RemoteLayout.manifestPath, [1])
        try FileManager.default.removeItem(atPath: root)  // the drive was unmounted

        for call in ["list", "get", "put", "delete", "getStream"] {
            let failure = try await #require(throws: ConcordError.self, "\(call)") {
                switch call {
                case "list": _ = try await created.list(prefix: "heads/")
                case "get": _ = try await created.get(RemoteLayout.manifestPath)
                case "put": try await created.put(RemoteLayout.head(Sample.a, seq: 1), [1])
                case "delete": try await created.delete(RemoteLayout.manifestPath)
                default: _ = try await created.getStream(RemoteLayout.manifestPath) { (_: [UInt8]) throws(ConcordError) in }
                }
            }
            #expect(failure.code == .remote, "\(call)")
            #expect(failure.message.contains("does not exist"), "\(call): \(failure.message)")
        }
        #expect(!FileManager.default.fileExists(atPath: root), "a put must not re-create a missing root")
    }

    @Test func aRelativeRootIsMadeAbsolute() throws {
        let relative = try FolderRemote(root: ".")
        #expect(relative.root.hasPrefix("/"))
        #expect(!relative.root.hasSuffix("/") || relative.root == "/")
    }

    @Test func somethingInTheWayIsReportedWithThePathAndWhatToDo() async throws {
        // A folder where the manifest belongs, and a file where the heads folder belongs.
        try FileManager.default.createDirectory(atPath: folder.path + "/concord.json", withIntermediateDirectories: true)
        folder.plant("heads", "not a folder")
        let read = try await #require(throws: ConcordError.self) { try await remote.get(RemoteLayout.manifestPath) }
        #expect(read.code == .unreadableObject)
        #expect(read.message.contains("concord.json"))
        #expect(read.message.contains("remove it from the store folder"))
        let write = try await #require(throws: ConcordError.self) { try await remote.put(RemoteLayout.head(Sample.a, seq: 1), [1]) }
        #expect(write.code == .remote)
        #expect(write.message.contains(RemoteLayout.head(Sample.a, seq: 1)))
        // Neither blocks listing the rest.
        #expect(try await remote.list(prefix: "").isEmpty)
        #expect(try await remote.get(RemoteLayout.head(Sample.a, seq: 1)) == nil)
    }

    @Test func concurrentPutsToOneObjectLeaveOneWholeVersion() async throws {
        let path = RemoteLayout.head(Sample.a, seq: 1)
        let remote = remote
        let versions = (0..<6).map { Sample.bytes(100_000 + $0, salt: UInt8($0)) }
        await withTaskGroup(of: Void.self) { group in
            for version in versions {
                group.addTask { try? await remote.put(path, version) }
            }
        }
        let stored = try #require(try await remote.get(path))
        #expect(versions.contains(stored))
        #expect(folder.everything() == ["heads", "heads/\(Sample.a)-0000000000000001"])
    }
}
