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

/// Retirement (docs/ARCHITECTURE.md §4): replicas silent past the retention period, or forgotten, are
/// not waited for; one that returns joins a snapshot and keeps its unpushed changes.
@Suite struct RetirementTests {
    @Test func aSilentReplicaIsRetiredAndComesBackWithoutLoss() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, c) = (fleet.stores[0], fleet.stores[2])
        try await fleet.syncAll()
        // c writes, but never pushes it, and goes silent.
        try c.set(note, "from-c", .string("written offline"))
        for round in 0..<3 {
            try a.set(note, "round", .int(Int64(round)))
            try await fleet.engines[0].sync()
            try await fleet.engines[1].sync()
        }
        let waiting = try await fleet.engines[0].compact()
        #expect(waiting.deletedBatches.isEmpty)
        #expect(waiting.retiredReplicas.isEmpty)

        // 91 days later, c is silent past the retention period: not waited for.
        fleet.clock.advance(by: 91 * day)
        try await fleet.engines[1].sync()
        let report = try await fleet.engines[0].compact()
        #expect(report.retiredReplicas == [c.replicaID])
        #expect(report.deletedBatches == [1, 2, 3])
        #expect(try await fleet.engines[1].replicas().first { $0.id == c.replicaID }?.status == .silent)

        // c returns: it joins a's snapshot and pushes its own change; everyone converges.
        let back = try await fleet.engines[2].sync()
        #expect(back.joinedSnapshots.count == 1)
        #expect(back.pushed == 1)
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.first { $0.name == "from-c" }?.value == .scalar(.string("written offline")))
        #expect(try await fleet.engines[0].replicas().allSatisfy { $0.status == .active })
    }

    @Test func forgetRetiresAReplicaOnEveryReplica() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, b, c) = (fleet.stores[0], fleet.stores[1], fleet.stores[2])
        try await fleet.syncAll()
        try c.set(note, "from-c", .string("never pushed yet"))
        try b.set(note, "from-b", .int(1))
        try await fleet.engines[1].sync()
        try await fleet.engines[0].sync()
        #expect(try await fleet.engines[1].compact().deletedBatches.isEmpty)  // c has not applied it

        // a forgets c; b honours it through a's head.
        let info = try await fleet.engines[0].forget(c.replicaID)
        #expect(info.status == .forgotten)
        let report = try await fleet.engines[1].compact()
        #expect(report.retiredReplicas == [c.replicaID])
        #expect(report.deletedBatches == [1])
        #expect(try await fleet.engines[1].replicas().first { $0.id == c.replicaID }?.status == .forgotten)

        // c comes back: nothing of its own is lost, and it is active again.
        fleet.clock.advance(by: 60_000)
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.first { $0.name == "from-c" }?.value == .scalar(.string("never pushed yet")))
        #expect(try await fleet.engines[0].replicas().first { $0.id == c.replicaID }?.status == .active)
    }

    @Test func forgetRefusesItselfAndUnknownReplicas() async throws {
        let fleet = try await Fleet(count: 2)
        try await fleet.syncAll()
        await #expect(throws: ConcordError.self) { try await fleet.engines[0].forget(fleet.stores[0].replicaID) }
        do {
            try await fleet.engines[0].forget(ReplicaID(high: 1, low: 2))
            Issue.record("forgetting an unknown replica succeeded")
        } catch {
            #expect(error.code == .notFound)
        }
    }
}

@Suite struct MetadataPurgeTests {
    @Test func aDeletionIsPurgedOnceEveryActiveReplicaHasSeenIt() async throws {
        var fleet = try await Fleet(count: 3)
        let (a, b, c) = (fleet.stores[0], fleet.stores[1], fleet.stores[2])
        try a.set(note, "title", .string("Plan"))
        try a.add(note, "tags", .string("work"))
        try await fleet.syncAll()
        try b.set(note, "body", .string("details"))
        try await fleet.syncAll()
        try a.delete(note)
        try await fleet.engines[0].sync()

        // b and c have not seen the deletion: nothing is purged, and a says why it waits.
        let early = try await fleet.engines[0].compact()
        #expect(early.metadata.purged.isEmpty)
        #expect(early.metadata.waiting == 1)
        #expect(try a.rawRecord(note) != nil)

        // Once their heads say they have seen it with nothing unsealed, a purges it; the
        // purge reaches b and c, and everyone's dump is as before.
        try await fleet.engines[1].sync()
        try await fleet.engines[2].sync()
        let dumps = try fleet.dumps()
        // Found stable now, it waits out twice the listing staleness first: a replica
        // whose head a stale listing does not show yet may hold an update it has not seen.
        let found = try await fleet.engines[0].compact()
        #expect(found.metadata.purged.isEmpty && found.metadata.waiting == 1)
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        let report = try await fleet.engines[0].compact()
        #expect(report.metadata.purged == [note])
        #expect(report.metadata.waiting == 0)
        try await fleet.syncAll()
        for store in [a, b, c] { #expect(try store.rawRecord(note) == nil) }
        #expect(try fleet.dumps() == dumps)
        #expect(try await fleet.engines[1].compact().metadata.purged.isEmpty)  // nothing left to purge

        // A replica bootstrapping now finds no trace of it in the snapshot.
        try await fleet.add(name: "d")
        try await fleet.engines[3].sync()
        #expect(try fleet.stores[3].rawRecord(note) == nil)

        // Re-created afterwards: only the new field, everywhere.
        try c.set(note, "title", .string("Again"))
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.map(\.name) == ["title"])
    }

    @Test func aRetiredReplicasConcurrentUpdateComesBackWithEveryFieldItHeld() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, c) = (fleet.stores[0], fleet.stores[2])
        try a.set(note, "title", .string("Plan"))
        try await fleet.syncAll()
        // c updates the record offline, before it sees the deletion, and goes silent.
        try c.set(note, "from-c", .string("written offline"))
        try a.delete(note)
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        #expect(try await fleet.engines[0].compact().metadata.purged.isEmpty)

        // 91 days later c is retired: the deletion is stable among the active replicas.
        fleet.clock.advance(by: 91 * day)
        try await fleet.engines[1].sync()
        #expect(try await fleet.engines[0].compact().metadata.waiting == 1)
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        try await fleet.engines[1].sync()
        let report = try await fleet.engines[0].compact()
        #expect(report.retiredReplicas == [c.replicaID])
        #expect(report.metadata.purged == [note])

        // c returns: its update keeps every field it held, as if there had been no purge
        // (rule 4) — c writes back what the purge took — and all replicas converge.
        try await fleet.syncAll(rounds: 3)
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.map(\.name) == ["from-c", "title"])
        #expect(try a.record(note)?.first?.value == .scalar(.string("written offline")))
        #expect(try a.record(note)?.last?.value == .scalar(.string("Plan")))
    }
}

/// Snapshots are shared across replicas (docs/ARCHITECTURE.md §4, "Compaction"): a replica whose batches
/// another replica's snapshot already covers writes none, a replica's own snapshot goes once
/// another supersedes it, and whoever needs a compacted batch joins any snapshot covering it.
@Suite struct SharedSnapshotTests {
    func snapshots(_ fleet: Fleet) async throws -> [String] {
        try await fleet.remote.list(prefix: RemoteLayout.snapshotsPrefix).map(\.path).sorted()
    }

    @Test func replicasShareASnapshotAndDropTheirOwnOnceAnotherSupersedesIt() async throws {
        var fleet = try await Fleet(count: 4)
        let (a, b, c, d) = (fleet.engines[0], fleet.engines[1], fleet.engines[2], fleet.engines[3])
        // d pushes once, then lags behind.
        try fleet.stores[3].set(note, "d", .int(0))
        try await d.sync()
        for (index, engine) in [a, b, c].enumerated() {
            try fleet.stores[index].set(note, "r\(index)", .int(1))
            try await engine.sync()
        }
        for engine in [a, b, c] { try await engine.sync() }

        // a writes a snapshot; b's batches are all in it, so b shares it instead of writing
        // one, and deletes its batch once old enough (d has not applied it).
        let first = try await a.compact()
        let shared = try #require(first.snapshot)
        fleet.clock.advance(by: 10_000)
        let second = try await b.compact(batchGracePeriod: 1)
        #expect(second.snapshot == nil)
        #expect(second.sharedSnapshot == shared)
        #expect(second.deletedBatches == [1])
        #expect(try await snapshots(fleet) == [shared])

        // d misses b's batch: it catches up from a's snapshot and converges.
        let caughtUp = try await d.sync()
        #expect(caughtUp.joinedSnapshots == [shared])
        #expect(try fleet.stores[3].record(note)?.map(\.name) == ["d", "r0", "r1", "r2"])

        // c writes a newer snapshot covering everything a's did. Once every listing shows
        // it (two upload deadlines), a drops its own, and shares c's.
        for (index, store) in fleet.stores.enumerated() { try store.set(note, "r\(index)", .int(2)) }
        try await fleet.syncAll()
        let newer = try await c.writeSnapshot()
        #expect(try await snapshots(fleet) == [shared, newer].sorted())
        #expect(try await a.compact().droppedSnapshots.isEmpty)  // c's is too young yet
        fleet.clock.advance(by: 3 * day)
        let third = try await a.compact()
        #expect(third.droppedSnapshots == [shared])
        #expect(third.snapshot == nil)
        #expect(try await snapshots(fleet) == [newer])
        // Nobody drops the last one: c's own compaction keeps it.
        #expect(try await c.compact().droppedSnapshots.isEmpty)
        #expect(try await snapshots(fleet) == [newer])

        // A new replica bootstraps from c's snapshot, and everyone converges.
        try await fleet.add(name: "late")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try fleet.stores[4].record(note)?.first { $0.name == "r1" }?.value == .scalar(.int(2)))
    }

    /// With `snapshotSlack` 0 a replica never relies on another's snapshot for its newest
    /// batches: it writes its own whenever one of them is uncovered.
    @Test func aZeroSlackReplicaWritesItsOwn() async throws {
        var fleet = try await Fleet(count: 1)
        try await fleet.add(name: "strict")
        fleet.engines[1] = SyncEngine(
            store: fleet.stores[1], remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock, snapshotSlack: 0)
        for (index, store) in fleet.stores.enumerated() { try store.set(note, "r\(index)", .int(1)) }
        try await fleet.syncAll()
        let shared = try #require(try await fleet.engines[0].compact().snapshot)
        try fleet.stores[1].set(note, "r1", .int(2))
        try await fleet.engines[1].sync()
        let strict = try await fleet.engines[1].compact()
        #expect(strict.sharedSnapshot == nil)
        let own = try #require(strict.snapshot)
        #expect(try await snapshots(fleet) == [shared, own].sorted())
    }
}
