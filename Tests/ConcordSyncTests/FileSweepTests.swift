import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

private let day: Int64 = 86_400_000
private let note = RecordRef(collection: "notes", id: "n")

extension Store {
    /// The content of a file field's current version, from the local blob directory.
    fileprivate func readFile(_ ref: RecordRef, _ field: String) throws -> [UInt8]? {
        guard case let .file(file)? = try record(ref)?.first(where: { $0.name == field })?.value else { return nil }
        return try blobs.bytes(file.hash)
    }
}

/// The remote files of a fleet's folder.
private func remoteFiles(_ fleet: Fleet) async throws -> [String] {
    try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).map(\.path).sorted()
}

/// Blob collection (docs/ARCHITECTURE.md §4): files no batch, snapshot or retained version references
/// go after a grace period measured by object age; uploads have a deadline.
@Suite struct FileSweepTests {
    @Test func supersededFilesAreSweptOnlyAfterHistoryAndGrace() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let first = try a.attachFile(note, "doc", bytes: Array("first version".utf8))
        try await fleet.syncAll()
        _ = try a.attachFile(note, "doc", bytes: Array("second version".utf8))
        try await fleet.syncAll()
        #expect(try await remoteFiles(fleet).count == 2)

        // Batches go (covered, applied everywhere); the first version is still a retained
        // version on both replicas, and young: kept.
        let early = try await fleet.engines[0].compact()
        #expect(early.deletedBatches == [1, 2])
        #expect(early.files.deletedFiles.isEmpty)
        #expect(try await remoteFiles(fleet).count == 2)

        // Past the history window (30 days) and the grace period (7 days), and found
        // unreferenced for a whole grace period: collected, once.
        fleet.clock.advance(by: 31 * day)
        let noticed = try await fleet.engines[1].compact()
        #expect(noticed.files.deletedFiles.isEmpty)
        #expect(noticed.files.awaitingFiles == 1)
        fleet.clock.advance(by: 7 * day)
        let late = try await fleet.engines[1].compact()
        #expect(late.files.deletedFiles == [BlobName.remotePath(for: first.hash, key: try Self.blobNames(fleet))])
        #expect(late.files.referencedFiles == 1)
        #expect(try await remoteFiles(fleet).count == 1)
        #expect(try await fleet.engines[0].sweepFiles().deletedFiles.isEmpty)

        // A new replica still gets everything; the current file is there.
        var grown = fleet
        try await grown.add(name: "late")
        try await grown.syncAll()
        #expect(try grown.dumps().count == 1)
        #expect(try grown.stores[2].readFile(note, "doc") == Array("second version".utf8))

        // Writing the collected content again uploads it again (this replica's upload of it
        // is older than the deadline), and every replica gets it.
        _ = try a.attachFile(note, "doc", bytes: Array("first version".utf8))
        let report = try await fleet.engines[0].sync()
        #expect(report.filesUploaded == 1)
        try await grown.syncAll()
        #expect(try b.readFile(note, "doc") == Array("first version".utf8))
        #expect(try grown.dumps().count == 1)
    }

    /// Two replicas; the first attaches `content`, and its process dies right after the
    /// file upload: the file is on the remote, its batch and head are not.
    static func uploadWithoutItsBatch(_ content: String) async throws -> Fleet {
        var faulty: FaultyRemote!
        let fleet = try await Fleet(count: 2) { folder in
            faulty = FaultyRemote(wrapping: folder, seed: 7)
            return faulty
        }
        try await fleet.syncAll()
        _ = try fleet.stores[0].attachFile(note, "doc", bytes: Array(content.utf8))
        faulty.crash(afterMutations: 0, effect: .applied)
        await #expect(throws: ConcordError.self) { try await fleet.engines[0].sync() }
        faulty.restart()
        #expect(try await remoteFiles(fleet).count == 1)
        return fleet
    }

    @Test func anUploadWhoseBatchIsNotPushedYetIsNeverSwept() async throws {
        let fleet = try await Self.uploadWithoutItsBatch("uploaded, batch not yet")

        // Unreferenced, but younger than the grace period: kept, however often one collects.
        fleet.clock.advance(by: 6 * day)
        let report = try await fleet.engines[1].sweepFiles()
        #expect(report.deletedFiles.isEmpty)
        #expect(report.youngFiles == 1)

        // Past the upload deadline, the push uploads the file again before its batch, so it
        // is young when the batch lands; collection past the first upload's grace keeps it.
        let resumed = try await fleet.engines[0].sync()
        #expect(resumed.filesUploaded == 1)
        fleet.clock.advance(by: 2 * day)
        #expect(try await fleet.engines[1].sweepFiles().deletedFiles.isEmpty)
        try await fleet.syncAll()
        #expect(try fleet.stores[1].readFile(note, "doc") == Array("uploaded, batch not yet".utf8))
        #expect(try fleet.dumps().count == 1)
    }

    @Test func anOrphanUploadIsSweptAfterTheGracePeriod() async throws {
        // A file uploaded whose batch does not come for weeks.
        let fleet = try await Self.uploadWithoutItsBatch("abandoned")
        fleet.clock.advance(by: 8 * day)
        let noticed = try await fleet.engines[1].sweepFiles()
        #expect(noticed.deletedFiles.isEmpty)
        #expect(noticed.awaitingFiles == 1)
        fleet.clock.advance(by: 7 * day)
        let report = try await fleet.engines[1].sweepFiles()
        #expect(report.deletedFiles.count == 1)
        #expect(try await remoteFiles(fleet).isEmpty)
        // The writer's batch still references the file: its next push uploads it again
        // (its upload is past the deadline), so nothing is lost.
        let resumed = try await fleet.engines[0].sync()
        #expect(resumed.filesUploaded == 1)
        try await fleet.syncAll()
        #expect(try fleet.stores[1].readFile(note, "doc") == Array("abandoned".utf8))
    }

    /// Object age is not trusted blindly: a file restored from a backup, or copied by a
    /// sync client, carries an old timestamp; while a batch or a snapshot still references
    /// it, no collection deletes it, however old it looks and however often one collects.
    @Test func aReferencedFileWithAnOldTimestampIsNeverSwept() async throws {
        var fleet = try await Fleet(count: 2)
        _ = try fleet.stores[0].attachFile(note, "doc", bytes: Array("kept".utf8))
        try await fleet.syncAll()
        let files = try await remoteFiles(fleet)
        #expect(files.count == 1)
        let yearAgo = Date(timeIntervalSince1970: Double(fleet.clock.millisecondsSinceEpoch()) / 1000 - 365 * 86_400)
        func age() throws {
            for path in files {
                try FileManager.default.setAttributes([.modificationDate: yearAgo], ofItemAtPath: fleet.scratch.file("remote") + "/" + path)
            }
        }
        try age()
        // Referenced by a batch: kept.
        fleet.clock.advance(by: 20 * day)
        for engine in fleet.engines { #expect(try await engine.sweepFiles().deletedFiles.isEmpty) }
        // Compaction moves the reference into a snapshot and deletes the batch: still kept.
        for _ in 0..<3 {
            fleet.clock.advance(by: 20 * day)
            try age()
            try await fleet.syncAll()
            for engine in fleet.engines {
                _ = try await engine.compact()
                #expect(try await engine.sweepFiles().deletedFiles.isEmpty)
            }
        }
        #expect(try await fleet.remote.list(prefix: RemoteLayout.batchesPrefix(fleet.stores[0].replicaID)).isEmpty, "the batch was compacted")
        #expect(try await remoteFiles(fleet) == files)
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].readFile(note, "doc") == Array("kept".utf8))
    }

    @Test func anUnreadableBatchStopsTheSweep() async throws {
        let fleet = try await Fleet(count: 2)
        _ = try fleet.stores[0].attachFile(note, "doc", bytes: Array("one".utf8))
        try await fleet.syncAll()
        _ = try fleet.stores[0].attachFile(note, "doc", bytes: Array("two".utf8))
        try await fleet.syncAll()
        // Damage a batch: what it references is unknown, so nothing is collected.
        let path = RemoteLayout.batch(fleet.stores[0].replicaID, seq: 1)
        let bytes = try #require(try await fleet.remote.get(path))
        try await fleet.remote.put(path, Array(bytes.prefix(bytes.count / 2)))
        fleet.clock.advance(by: 40 * day)
        let report = try await fleet.engines[1].sweepFiles()
        #expect(report.skipped?.contains(path) == true)
        #expect(report.deletedFiles.isEmpty)
        #expect(try await remoteFiles(fleet).count == 2)
    }

    @Test func aSnapshotUploadsTheOldFilesItReferences() async throws {
        var fleet = try await Fleet(count: 2)
        _ = try fleet.stores[0].attachFile(note, "doc", bytes: Array("old file".utf8))
        try await fleet.syncAll()
        // The file's object is deleted behind the store's back (as a collector acting on a
        // listing that missed every reference would); the batch that referenced it is gone.
        fleet.clock.advance(by: 10 * day)
        let compacted = try await fleet.engines[0].compact()
        #expect(compacted.deletedBatches == [1])
        for path in try await remoteFiles(fleet) { try await fleet.remote.delete(path) }
        // b's snapshot references the file: writing it uploads the file first.
        try fleet.stores[1].set(note, "title", .string("b's change"))
        try await fleet.engines[1].sync()
        try await fleet.engines[1].writeSnapshot()
        #expect(try await remoteFiles(fleet).count == 1)
        try await fleet.add(name: "late")
        try await fleet.syncAll()
        #expect(try fleet.stores[2].readFile(note, "doc") == Array("old file".utf8))
        #expect(try fleet.dumps().count == 1)
    }

    static func blobNames(_ fleet: Fleet) throws -> SubKey {
        fleet.key.subkey(for: .blobNames)
    }
}
