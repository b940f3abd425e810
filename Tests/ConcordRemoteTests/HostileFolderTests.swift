import ConcordCore
import ConcordRemote
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// Storage anyone can write: what a folder remote does with links, FIFOs, folders and huge
/// files planted at the store's names.
@Suite struct HostileFolderTests {
    let folder = TemporaryFolder()
    let outside = TemporaryFolder("concord-outside")
    let remote: FolderRemote

    init() throws {
        remote = try FolderRemote(root: folder.path)
    }

    var storage: FolderHostileStorage {
        let remote = remote
        return FolderHostileStorage(root: folder.path, outside: outside.path) {
            try remote.sweepTemporaryFiles(olderThan: 1, now: UInt64(Date().timeIntervalSince1970 * 1000) + 86_400_000)
        }
    }

    @Test func aFolderRemoteWithstandsHostileStorage() async {
        #expect(await HostileRemoteCheck.check(remote, storage: storage) == [])
        #expect(folder.everything().isEmpty, "the check removes what it planted")
    }

    /// The check is not vacuous: a remote that writes and deletes by path, following links
    /// (as FolderRemote did), is caught writing and deleting outside its root.
    @Test func theHostileCheckCatchesARemoteThatFollowsLinks() async {
        let issues = await HostileRemoteCheck.check(LinkFollowingRemote(safe: remote), storage: storage)
        #expect(issues.contains { $0.contains("with heads/ a symbolic link") && $0.contains("changed the folder outside the root") }, "\(issues)")
        #expect(issues.contains { $0.contains("blobs/ab/ a symbolic link") && $0.contains("changed the folder outside the root") }, "\(issues)")
    }

    @Test func writesThroughALinkedFolderAreRefusedAndOutsideFilesSurvive() async throws {
        let old = RemoteLayout.head(Sample.a, seq: 1)
        try Data("precious".utf8).write(to: URL(fileURLWithPath: outside.path + "/" + String(old.dropFirst(6))))
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/heads", withDestinationPath: outside.path)

        let write = try await #require(throws: ConcordError.self) { try await remote.put(RemoteLayout.head(Sample.a, seq: 2), [1]) }
        #expect(write.code == .remote)
        #expect(write.message.contains("heads is a symbolic link"), "\(write.message)")
        let delete = try await #require(throws: ConcordError.self) { try await remote.delete(old) }
        #expect(delete.code == .remote)
        let read = try await #require(throws: ConcordError.self) { try await remote.get(old) }
        #expect(read.code == .unreadableObject)
        #expect(try await remote.list(prefix: "heads/").isEmpty)
        #expect(try remote.inspect(prefix: "").skipped == [FolderRemote.Listing.Skipped(path: "heads", kind: "a symbolic link")])
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path) == [String(old.dropFirst(6))])
        #expect(try String(contentsOfFile: outside.path + "/" + String(old.dropFirst(6)), encoding: .utf8) == "precious")
    }

    @Test func theSweepNeverDeletesThroughALink() async throws {
        let stray = outside.path + "/.concord-tmp-0000000000000001"
        try Data("not Concord's".utf8).write(to: URL(fileURLWithPath: stray))
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/heads", withDestinationPath: outside.path)
        try FileManager.default.createSymbolicLink(atPath: folder.path + "/.concord-tmp-00000000000000aa", withDestinationPath: stray)
        folder.plant("snapshots/.concord-tmp-00000000000000bb", "a torn put of ours")
        let far = UInt64(Date().timeIntervalSince1970 * 1000) + 86_400_000
        #expect(try remote.sweepTemporaryFiles(olderThan: 1, now: far) == 1)
        #expect(FileManager.default.fileExists(atPath: stray))
        #expect(folder.everything() == [".concord-tmp-00000000000000aa", "heads", "snapshots"])
    }

    @Test func listingsSkipWhatIsNotAFileAndReportIt() async throws {
        let kept = RemoteLayout.head(Sample.b, seq: 1)
        try await remote.put(kept, [1])
        try storage.plantFolder(RemoteLayout.snapshot(Sample.a, seq: 2))
        try storage.plantLink(RemoteLayout.head(Sample.a, seq: 3), to: "/dev/zero")
        try storage.plantLink("blobs", to: outside.path)
        folder.plant("replicas", "a file where a folder belongs")
        #expect(try await remote.list(prefix: "").map(\.path) == [kept])
        let skipped = try remote.inspect(prefix: "").skipped
        #expect(skipped.map(\.description) == [
            "blobs (a symbolic link)",
            "heads/\(Sample.a)-0000000000000003 (a symbolic link)",
            "replicas (a file)",
            "snapshots/\(Sample.a)-0000000000000002 (a folder)",
        ])
        // A FIFO where a batch belongs.
        try FileManager.default.removeItem(atPath: folder.path + "/replicas")
        try storage.plantFIFO(RemoteLayout.batch(Sample.a, seq: 1))
        #expect(try remote.inspect(prefix: "replicas/").skipped.map(\.kind) == ["a FIFO (named pipe)"])
    }

    @Test func aFolderWhereAnObjectBelongsIsUnreadableNamingIt() async throws {
        try storage.plantFolder(RemoteLayout.manifestPath)
        let error = try await #require(throws: ConcordError.self) { try await remote.get(RemoteLayout.manifestPath) }
        #expect(error.code == .unreadableObject)
        #expect(error.message.contains("concord.json"))
        #expect(error.message.contains("it is a folder, not a file"))
        #expect(error.message.contains("remove it from the store folder"))
    }

    /// A device node at an object's name (`/dev/zero`'s numbers: an endless read) is
    /// never opened. Where mknod is not permitted (not root), a link to `/dev/zero` stands in.
    @Test func aDeviceAtAnObjectsNameIsNeverOpened() async throws {
        let path = RemoteLayout.batch(Sample.a, seq: 1)
        try storage.plantFolder(String(RemoteLayout.batchesPrefix(Sample.a).dropLast()))
        #if canImport(Darwin)
        let zero = dev_t(1 << 24 | 5)  // makedev(1, 5) is a C macro
        #else
        let zero = dev_t(1 << 8 | 5)
        #endif
        let node = mknod(folder.path + "/" + path, S_IFCHR | 0o644, zero) == 0
        if !node { try storage.plantLink(path, to: "/dev/zero") }
        let error = try await #require(throws: ConcordError.self) { try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path)) }
        #expect(error.code == .unreadableObject)
        #expect(error.message.contains(node ? "a character device" : "a symbolic link"), "\(error.message)")
        let stream = try await #require(throws: ConcordError.self) { try await remote.getStream(path) { (_: [UInt8]) throws(ConcordError) in } }
        #expect(stream.code == .unreadableObject)
        #expect(try await remote.list(prefix: "").isEmpty)
        #expect(try remote.inspect(prefix: "replicas/").skipped.map(\.path) == [path])
    }

    @Test func aBoundedGetReadsNoMoreThanTheLimitAllows() async throws {
        let path = RemoteLayout.head(Sample.a, seq: 1)
        try await remote.put(path, Sample.bytes(100))
        #expect(try await remote.get(path, limit: 100) == Sample.bytes(100))
        let over = try await #require(throws: ConcordError.self) { try await remote.get(path, limit: 99) }
        #expect(over.code == .limitExceeded)
        #expect(over.message.contains(path) && over.message.contains("100 bytes") && over.message.contains("limit of 99 bytes"), "\(over.message)")
        #expect(try await remote.get(RemoteLayout.head(Sample.a, seq: 2), limit: 10) == nil)

        try storage.plantSparseFile(RemoteLayout.manifestPath, size: HostileRemoteCheck.sparseSize)
        let sparse = try await #require(throws: ConcordError.self) {
            try await remote.get(RemoteLayout.manifestPath, limit: RemoteLayout.maxObjectSize(for: .manifest))
        }
        #expect(sparse.code == .limitExceeded)
        #expect(sparse.message.contains("2147483648 bytes"), "\(sparse.message)")
    }

    @Test func aPutOverItsKindsLimitIsRefusedBeforeWriting() async throws {
        let limit = RemoteLayout.maxObjectSize(for: .manifest)
        let error = try await #require(throws: ConcordError.self) {
            try await remote.put(RemoteLayout.manifestPath, [UInt8](repeating: 1, count: Int(limit) + 1))
        }
        #expect(error.code == .limitExceeded)
        #expect(folder.everything().isEmpty)
        try await remote.put(RemoteLayout.manifestPath, [UInt8](repeating: 1, count: Int(limit)))
        #expect(try await remote.get(RemoteLayout.manifestPath, limit: limit)?.count == Int(limit))
    }
}

/// FolderRemote as it was: put and delete by path through Foundation, following every link;
/// reads and listings go to the safe remote (so nothing in the check hangs).
struct LinkFollowingRemote: Remote {
    let safe: FolderRemote

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        let full = safe.root + "/" + path
        do {
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
        } catch {
            throw ConcordError(.remote, "\(error)")
        }
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await safe.get(path) }
    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? { try await safe.get(path, limit: limit) }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { try await safe.list(prefix: prefix) }

    func delete(_ path: String) async throws(ConcordError) {
        unlink(safe.root + "/" + path)
    }

    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try await safe.putStream(path, read: read)
    }

    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await safe.getStream(path, write: write)
    }
}
