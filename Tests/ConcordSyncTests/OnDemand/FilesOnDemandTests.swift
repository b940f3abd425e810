import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import GRDB
import Testing

private func photo(_ index: Int) -> RecordRef { RecordRef(collection: "photos", id: "p\(index)") }

/// Files on demand (README, "Large files and small devices"): records first, contents when
/// read, shared downloads, a typed error for a content the remote lacks.
@Suite struct FilesOnDemandTests {
    /// Replica 0 writes `count` photos of `size` bytes and syncs; replica 1 is on demand.
    private func fleet(count: Int, size: Int = 50_000, budget: UInt64? = nil) async throws -> (Fleet, CountingRemote, [FileRef]) {
        let (fleet, counting) = try await Fleet.wrapped(count: 2) { CountingRemote($0) }
        var files: [FileRef] = []
        for index in 0..<count {
            files.append(try fleet.stores[0].attachFile(photo(index), "image", bytes: onDemandContent(index, size: size + index), mediaType: "image/jpeg"))
        }
        try await fleet.engines[0].sync()
        try fleet.stores[1].setFilePolicy(FilePolicy(.onDemand, budget: budget))
        return (fleet, counting, files)
    }

    @Test func recordsApplyAtOnceAndContentsComeWhenRead() async throws {
        let (fleet, counting, files) = try await fleet(count: 5)
        let b = fleet.stores[1]
        try b.declare(CollectionDeclaration("photos", fields: [.init("image", .file)]))
        let before = counting.bytesRead
        let report = try await fleet.engines[1].sync()
        #expect(report.applied == 1)
        #expect(report.filesFetched == 0)
        #expect(counting.bytesRead - before < 10_000, "the sync moved only the batch and the heads")
        #expect(try b.blobs.all().isEmpty)
        for (index, file) in files.enumerated() {
            #expect(try b.currentFile(photo(index), "image") == file, "hash, size and media type are known")
            #expect(try await fleet.engines[1].fileState(file.hash) == .notLocal)
        }
        let notLocal = try await b.reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM concord_c_photos WHERE concord_local__image = 0") }
        #expect(notLocal == 5)

        #expect(try await fleet.engines[1].bytes(of: files[2]) == onDemandContent(2, size: 50_002))
        #expect(try await fleet.engines[1].fileState(files[2].hash) == .local)
        #expect(try b.blobs.all() == [files[2].hash])
        let local = try await b.reader.read { db in try String.fetchAll(db, sql: "SELECT id FROM concord_c_photos WHERE concord_local__image = 1") }
        #expect(local == ["p2"], "the declared row turned local in the arrival's transaction")
        #expect(try fleet.dumps().count == 1, "the merged state is the same on both replicas")
    }

    @Test func concurrentReadersShareOneDownload() async throws {
        let (fleet, counting, files) = try await fleet(count: 1, size: 3 << 20)
        try await fleet.engines[1].sync()
        let gets = counting.fileGets
        let engine = fleet.engines[1]
        let expected = onDemandContent(0, size: 3 << 20)
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for _ in 0..<8 { group.addTask { try await engine.bytes(of: files[0]) == expected } }
            for try await same in group { #expect(same) }
        }
        #expect(counting.fileGets - gets == 1, "eight readers, one download")
        #expect(await engine.onDemandDownloadsStarted == 1)
    }

    @Test func contentGoneFromTheRemoteIsFileUnavailable() async throws {
        let (fleet, _, files) = try await fleet(count: 2)
        try await fleet.engines[1].sync()
        let blobNames = fleet.key.subkey(for: .blobNames)
        try await fleet.remote.delete(BlobName.remotePath(for: files[0].hash, key: blobNames))
        await #expect { try await fleet.engines[1].bytes(of: files[0]) } throws: { ($0 as? ConcordError)?.code == .fileUnavailable }
        guard case .unavailable = try await fleet.engines[1].fileState(files[0].hash) else {
            Issue.record("the state says unavailable")
            return
        }
        #expect(try fleet.stores[1].blobs.all().isEmpty, "nothing wrong was kept")
        #expect(try fleet.stores[1].fileCacheStatus().filesUnavailable == 1)
        // The other file still reads.
        #expect(try await fleet.engines[1].bytes(of: files[1]) == onDemandContent(1, size: 50_001))
    }

    @Test func aTamperedContentIsFileUnavailableAndNeverRead() async throws {
        let (fleet, _, files) = try await fleet(count: 1)
        try await fleet.engines[1].sync()
        let blobNames = fleet.key.subkey(for: .blobNames)
        let path = BlobName.remotePath(for: files[0].hash, key: blobNames)
        var sealed = try #require(try await fleet.remote.get(path))
        sealed[sealed.count / 2] ^= 1
        try await fleet.remote.put(path, sealed)
        await #expect { try await fleet.engines[1].bytes(of: files[0]) } throws: { ($0 as? ConcordError)?.code == .fileUnavailable }
        #expect(try fleet.stores[1].blobs.all().isEmpty)
    }

    @Test func aNewReplicaJoinsASnapshotWithoutItsFiles() async throws {
        let (fleet, counting, files) = try await fleet(count: 4, size: 200_000)
        _ = try await fleet.engines[0].writeSnapshot()
        var grown = fleet
        try await grown.add(name: "late")
        let late = grown.stores[2]
        try late.setFilePolicy(FilePolicy(.onDemand))
        let before = counting.bytesRead
        let report = try await grown.engines[2].sync()
        #expect(report.bootstrapped != nil)
        #expect(report.filesFetched == 0)
        #expect(counting.bytesRead - before < 50_000, "no file moved")
        #expect(try late.records(in: "photos").count == 4)
        #expect(try await grown.engines[2].bytes(of: files[3]) == onDemandContent(3, size: 200_003))
    }

    @Test func switchingToEagerFetchesWhatIsNotLocal() async throws {
        let (fleet, _, files) = try await fleet(count: 3)
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].blobs.all().isEmpty)
        try fleet.stores[1].setFilePolicy(.eager)
        let report = try await fleet.engines[1].sync()
        #expect(report.filesFetched == 3)
        #expect(Set(try fleet.stores[1].blobs.all()) == Set(files.map(\.hash)))
    }

    @Test func aWriteReferencesOnlyLocalContentSoAPushNeverLacksOne() async throws {
        let (fleet, _, files) = try await fleet(count: 1)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try await fleet.engines[1].sync()
        // A fork: both replicas write the field; b on demand holds neither a's version nor
        // (after an eviction) its own once pushed.
        _ = try a.attachFile(photo(0), "image", bytes: Array("a's edit".utf8))
        _ = try b.attachFile(photo(0), "image", bytes: Array("b's edit".utf8))
        try await fleet.syncAll()
        let fork = try #require(try b.conflicts().first)
        let theirs = try #require(fork.versions.first { !b.blobs.contains($0.file.hash) }?.file)
        // Keeping a version not local is refused until it is fetched.
        #expect { try b.write { tx throws(ConcordError) in try tx.keepVersion(photo(0), "image", hash: theirs.hash) } } throws: {
            ($0 as? ConcordError)?.code == .missingBlob
        }
        _ = try await fleet.engines[1].localFile(theirs)
        try b.write { tx throws(ConcordError) in try tx.keepVersion(photo(0), "image", hash: theirs.hash) }
        try await fleet.syncAll()
        #expect(try a.conflicts().isEmpty)
        #expect(try fleet.dumps().count == 1)
        _ = files
    }
}
