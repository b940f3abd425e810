import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// What a planted object may cost a replica: no more disk or memory than the object it
/// expects, and nothing left behind by a download or an attach that was cut off.
@Suite struct HostileBoundsTests {
    let note = RecordRef(collection: "notes", id: "n1")

    /// The files in `store`'s temporary folder.
    static func temporaryFiles(_ store: Store) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: store.blobs.directory + "/tmp")
    }

    @Test func aFileGrownOnTheRemoteIsRefusedAtTheSealedSizeOfItsReference() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let file = try a.write { tx throws(ConcordError) in try tx.attachFile(note, "doc", bytes: Array("the real file".utf8)) }
        try await fleet.engines[0].sync()
        let blob = try #require(try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).first).path
        // Grown in place to a sparse 3 GiB: costs the planter nothing.
        #expect(truncate(fleet.scratch.file("remote") + "/" + blob, off_t(3 << 30)) == 0)
        try b.set(RecordRef(collection: "notes", id: "from-b"), "title", .string("b's"))
        let report = try await fleet.engines[1].sync()
        let limit = BlobStream.sealedByteCount(plaintextByteCount: file.size)
        #expect(report.rejected.contains { $0.hasPrefix(blob) && $0.contains("over the limit of \(limit) bytes") }, "\(report.rejected)")
        #expect(try Self.temporaryFiles(b).isEmpty, "no download is left on disk")
        #expect(!b.blobs.contains(file.hash))
        // Everything else synced.
        #expect(report.pushed == 1)
        try await fleet.engines[0].sync()
        #expect(try a.record(RecordRef(collection: "notes", id: "from-b")) != nil)
    }

    @Test func doctorReadsAFileNoFurtherThanItsListedSize() async throws {
        let (fleet, remote) = try await Fleet.wrapped(count: 1, EndlessFiles.init)
        try fleet.stores[0].write { tx throws(ConcordError) in _ = try tx.attachFile(note, "doc", bytes: Array("the real file".utf8)) }
        try await fleet.engines[0].sync()
        let blob = try #require(try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).first)
        let size = try #require(blob.size)
        remote.endless.withLock { $0 = true }
        let report = try await fleet.engines[0].doctor()
        #expect(report.problems.contains { $0.path == blob.path && $0.message.contains("over the limit of \(size) bytes") }, "\(report.problems)")
        #expect(remote.delivered.withLock { $0 } <= size + UInt64(EndlessFiles.chunk), "the check stopped at the listed size")
    }

    /// With its own head gone, a replica checks that its snapshot is still there: a planted
    /// 4 GiB file at that name is refused at the snapshot limit, never read into memory.
    @Test func aPlantedFileAtTheOwnSnapshotsNameIsNotReadPastMaxSnapshotSize() async throws {
        let fleet = try await Fleet(count: 1)
        let a = fleet.stores[0]
        try a.set(note, "title", .string("one"))
        try await fleet.engines[0].sync()
        try a.set(note, "title", .string("two"))
        try await fleet.engines[0].sync()
        _ = try await fleet.engines[0].compact()
        let remote = fleet.scratch.file("remote") + "/"
        let snapshot = try #require(try await fleet.remote.list(prefix: RemoteLayout.snapshotsPrefix).first { $0.path.contains(a.replicaID.description) })
        for head in try await fleet.remote.list(prefix: RemoteLayout.headsPrefix) { try FileManager.default.removeItem(atPath: remote + head.path) }
        #expect(truncate(remote + snapshot.path, off_t(4 << 30)) == 0)
        let before = Self.peakMemory()
        try await fleet.engines[0].sync()
        let grown = Self.peakMemory() - min(before, Self.peakMemory())
        #expect(grown < 512 << 20, "the peak memory grew by \(grown >> 20) MiB; the snapshot limit is \(RemoteLayout.maxSnapshotSize >> 20) MiB")
        #expect(try await fleet.remote.list(prefix: RemoteLayout.headsPrefix).count == 1, "its head was published again")
    }

    /// The process's peak resident memory so far, in bytes.
    static func peakMemory() -> UInt64 {
        var usage = rusage()
        #if canImport(Glibc)
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        return UInt64(usage.ru_maxrss) * 1024
        #else
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        return UInt64(usage.ru_maxrss)
        #endif
    }

    @Test func temporaryFilesUnwrittenForTemporaryFileAgeAreSweptWhenTheStoreOpensAndAtCompact() async throws {
        let fleet = try await Fleet(count: 1)
        let store = fleet.stores[0]
        let folder = store.blobs.directory + "/tmp/"
        let old = Date(timeIntervalSinceNow: -Double(BlobStore.temporaryFileAge) / 1000 - 60)
        func plant(_ name: String, old isOld: Bool) throws {
            #expect(FileManager.default.createFile(atPath: folder + name, contents: Data([1, 2, 3])))
            if isOld { try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: folder + name) }
        }
        try plant("download-1", old: true)
        try plant("incoming-abcdef", old: true)
        try plant("download-2", old: false)
        try store.set(note, "title", .string("one"))
        let report = try await fleet.engines[0].compact()
        #expect(report.files.temporaryFiles == 2)
        #expect(try Self.temporaryFiles(store) == ["download-2"], "one being written may still be in use")
        // Opening a store sweeps too.
        try plant("download-3", old: true)
        let reopened = try Store(path: fleet.scratch.file("device0.db"), configuration: .init(clock: fleet.clock))
        #expect(try Self.temporaryFiles(reopened) == ["download-2"])
    }
}

/// A remote whose files, once ``endless`` is set, stream without end (up to 1 GiB) while
/// listings still give their real sizes: a server that sends more than it lists.
final class EndlessFiles: ForwardingRemote {
    static let chunk = 1 << 16
    let base: any Remote
    let endless = Mutex(false)
    let delivered = Mutex<UInt64>(0)
    init(_ base: any Remote) { self.base = base }

    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        guard endless.withLock({ $0 }) else { return try await base.getStream(path, write: write) }
        let filler = [UInt8](repeating: 0, count: Self.chunk)
        while delivered.withLock({ $0 }) < 1 << 30 {
            delivered.withLock { $0 += UInt64(filler.count) }
            try write(filler)
        }
        return true
    }
}
