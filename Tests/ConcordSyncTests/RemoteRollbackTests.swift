import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// The remote goes back in time: a folder restored from a backup, a bucket rolled back.
/// Every write pushed before the rollback survives as long as a replica holding it syncs.
@Suite struct RemoteRollbackTests {
    func ref(_ id: String) -> RecordRef { RecordRef(collection: "notes", id: id) }

    /// a pushed n1 and its device was lost before anyone applied it; then a stranger deleted
    /// its head. No head announces batch 1 and a never syncs again, so nobody would ever
    /// apply it. Once the batch is older than two upload deadlines (a live writer would have
    /// put its head long since), the periodic listing announces it, dated when it was
    /// uploaded, and every replica applies it.
    @Test func aBatchWhoseHeadWasDeletedAfterItsWriterWasLostIsAnnouncedAndApplied() async throws {
        var fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try await fleet.syncAll()
        try a.set(ref("n1"), "title", .string("a's last"))
        try await fleet.engines[0].sync()
        for head in try await fleet.remote.list(prefix: RemoteLayout.headsPrefix + a.replicaID.description) {
            try await fleet.remote.delete(head.path)
        }
        let engine = fleet.engines[1]
        // Soon after: the writer may still be putting its head, so nothing is announced.
        fleet.clock.advance(by: Int64(engine.lossCheckInterval))
        var report = try await engine.sync()
        #expect(report.lossChecked && report.announcedOrphans.isEmpty)
        #expect(try b.record(ref("n1")) == nil)
        // Two upload deadlines (a fifth of the file grace period each) later, it is.
        fleet.clock.advance(by: Int64(2 * engine.blobGracePeriod / 5 + engine.lossCheckInterval))
        report = try await engine.sync()
        #expect(report.announcedOrphans == [RemoteLayout.batch(a.replicaID, seq: 1)], "\(report)")
        #expect(try b.record(ref("n1"))?.first?.value == .scalar(.string("a's last")))
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].canonicalDump() == b.canonicalDump())
        // Announced once; a stays a replica that may come back (dated when it pushed).
        fleet.clock.advance(by: Int64(engine.lossCheckInterval))
        #expect(try await engine.sync().announcedOrphans.isEmpty)
        #expect(try await engine.replicas().first { $0.id == a.replicaID }?.status == .active)
    }

    /// a and b sync n1; the remote is copied aside; a writes n2, b writes m2, both sync
    /// (each has both); the old copy is put back.
    func rolledBack() async throws -> Fleet {
        let fleet = try await Fleet(count: 2)
        try fleet.stores[0].set(ref("n1"), "title", .string("one"))
        try await fleet.syncAll()
        let root = fleet.scratch.file("remote")
        let aside = fleet.scratch.file("remote-copy")
        try FileManager.default.copyItem(atPath: root, toPath: aside)
        try fleet.stores[0].set(ref("n2"), "title", .string("two"))
        try fleet.stores[1].set(ref("m2"), "title", .string("from b"))
        try await fleet.syncAll()
        #expect(try fleet.stores[0].record(ref("m2")) != nil && fleet.stores[1].record(ref("n2")) != nil)
        try FileManager.default.removeItem(atPath: root)
        try FileManager.default.moveItem(atPath: aside, toPath: root)
        return fleet
    }

    @Test func everyWriteSurvivesARollbackEvenIfItsWriterNeverReturns() async throws {
        var fleet = try await rolledBack()
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        // Only a syncs again: it republishes its own batch and head, and a snapshot for b's
        // batch it applied.
        let report = try await fleet.engines[0].sync()
        #expect(report.remoteRolledBack.contains(RemoteLayout.batch(a.replicaID, seq: 2)), "\(report.remoteRolledBack)")
        #expect(report.remoteRolledBack.contains(RemoteLayout.head(a.replicaID, seq: 2)), "\(report.remoteRolledBack)")
        #expect(report.remoteRolledBack.contains { $0.hasPrefix(RemoteLayout.snapshotsPrefix) }, "\(report.remoteRolledBack)")
        // A new replica gets n1, n2 and b's m2, though b never came back.
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].canonicalDump() == a.canonicalDump())
        #expect(try fleet.stores[2].record(ref("m2")) != nil)
        // A second sync of a finds nothing missing: no request beyond the listing's.
        let again = try await fleet.engines[0].sync()
        #expect(again.remoteRolledBack.isEmpty, "\(again.remoteRolledBack)")
        // b comes back: it republishes its own batch, and everyone converges.
        let fromB = try await fleet.engines[1].sync()
        #expect(fromB.remoteRolledBack.contains(RemoteLayout.batch(b.replicaID, seq: 1)) || fromB.remoteRolledBack.contains(RemoteLayout.head(b.replicaID, seq: 1)), "\(fromB.remoteRolledBack)")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
    }

    @Test func aRollbackNoticedByEveryReplicaConverges() async throws {
        var fleet = try await rolledBack()
        try await fleet.syncAll()
        try await fleet.add(name: "newcomer")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        for id in ["n1", "n2", "m2"] { #expect(try fleet.stores[2].record(ref(id)) != nil, "\(id) missing") }
        let doctor = try await fleet.engines[2].doctor()
        #expect(doctor.isHealthy, "\(doctor.problems)")
    }

    @Test func doctorNamesARollbackAndRepairHealsIt() async throws {
        var fleet = try await rolledBack()
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let report = try await fleet.engines[0].doctor()
        let rolled = report.problems.filter { $0.kind == .remoteRolledBack }
        #expect(Set(rolled.compactMap(\.replica)) == [a.replicaID, b.replicaID], "\(report.problems)")
        let repaired = try await fleet.engines[0].doctor(repair: true)
        let rolledRepaired = repaired.findings.filter { $0.kind == .remoteRolledBack }
        #expect(!rolledRepaired.isEmpty && rolledRepaired.allSatisfy { $0.repaired }, "\(repaired.findings)")
        // b never syncs again; a new replica still gets everything.
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        for id in ["n1", "n2", "m2"] { #expect(try fleet.stores[2].record(ref(id)) != nil, "\(id) missing") }
        #expect(try fleet.stores[2].canonicalDump() == (try a.canonicalDump()))
    }

    @Test func anIdleSyncOfAnIntactRemoteRepublishesNothing() async throws {
        let fleet = try await Fleet(count: 2) { FaultyRemote(wrapping: $0, seed: 3) }
        try fleet.stores[0].set(ref("n1"), "title", .string("one"))
        try await fleet.syncAll()
        let faulty = try #require(fleet.remote as? FaultyRemote)
        let before = faulty.counts
        let report = try await fleet.engines[1].sync()
        #expect(report.remoteRolledBack.isEmpty)
        #expect(faulty.counts.gets == before.gets && faulty.counts.puts == before.puts)
    }

    /// A head is rewritten in place under its name, so an older copy of it still
    /// authenticates: a rollback to it must not make a replica that synced since look silent.
    @Test func aRolledBackHeadDoesNotMakeAnActiveReplicaLookSilent() async throws {
        let fleet = try await Fleet(count: 2) { FaultyRemote(wrapping: $0, seed: 8) }
        let faulty = try #require(fleet.remote as? FaultyRemote)
        try fleet.stores[1].set(ref("n1"), "title", .string("one"))
        try await fleet.syncAll()
        let old = try await faulty.copy(prefix: "heads/")
        // 100 days of regular syncs: b's head is rewritten in place with newer times.
        for _ in 0..<20 {
            fleet.clock.advance(by: Int64(5 * SyncEngine.day))
            try await fleet.syncAll(rounds: 1)
        }
        let b = fleet.stores[1].replicaID
        // a has seen b's newest head (compaction, or `replicas`, reads every head).
        #expect(try await fleet.engines[0].replicas().first { $0.id == b }?.status == .active)
        try await faulty.rollback(to: old)
        let status = try await fleet.engines[0].replicas().first { $0.id == b }?.status
        #expect(status == .active, "a rolled-back head made b look \(String(describing: status))")
    }

    /// Batches deleted behind the replicas' backs while every head stays (a sync client
    /// removing what it took for conflicts): no heads listing shows it, so the hourly
    /// listing of every batch does. The writer republishes its own exact bytes; a replica
    /// that applied another's batch publishes it in a snapshot, so a newcomer converges
    /// though that writer never returns.
    @Test func batchesThatVanishWhileTheirHeadsStayArePublishedAgain() async throws {
        var fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(ref("n1"), "title", .string("one"))
        try await fleet.syncAll()
        try a.set(ref("n2"), "title", .string("two"))
        try await fleet.syncAll()
        let first = RemoteLayout.batch(a.replicaID, seq: 1)
        let bytes = try #require(try await fleet.remote.get(first))
        try await fleet.remote.delete(first)
        // Within the hour nothing lists the batches: the sync makes no extra request.
        #expect(try await fleet.engines[0].sync().remoteRolledBack.isEmpty)
        fleet.clock.advance(by: 3_600_001)
        let report = try await fleet.engines[0].sync()
        #expect(report.remoteRolledBack == [first, RemoteLayout.head(a.replicaID, seq: 2)], "\(report.remoteRolledBack)")
        #expect(try await fleet.remote.get(first) == bytes, "the same bytes under the same name")

        // Both of a's batches vanish, and a never syncs again: b holds them.
        for seq: UInt64 in [1, 2] { try await fleet.remote.delete(RemoteLayout.batch(a.replicaID, seq: seq)) }
        fleet.clock.advance(by: 3_600_001)
        let fromB = try await fleet.engines[1].sync()
        #expect(fromB.remoteRolledBack.count == 1 && fromB.remoteRolledBack[0].hasPrefix(RemoteLayout.snapshotsPrefix), "\(fromB.remoteRolledBack)")
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].canonicalDump() == b.canonicalDump())
        for id in ["n1", "n2"] { #expect(try fleet.stores[2].record(ref(id)) != nil, "\(id) missing") }
        // Covered by that snapshot now, the missing batches are no longer lost.
        fleet.clock.advance(by: 3_600_001)
        #expect(try await fleet.engines[1].sync().remoteRolledBack.isEmpty)
    }

    /// The remote goes back to a copy taken between a file's upload and its batch's (the
    /// Spin model's finding): the batch and head land, the file is gone. Within the hour
    /// the writer lists the files of its batches still there and uploads the lost one again.
    @Test func aLostFileOfABatchStillThereIsUploadedAgain() async throws {
        var fleet = try await Fleet(count: 1)
        let a = fleet.stores[0]
        try await fleet.syncAll()
        let note = ref("n1")
        let file = try a.attachFile(note, "cover", bytes: Array("the cover".utf8))
        try await fleet.syncAll()
        let path = try #require(try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).first?.path)
        try await fleet.remote.delete(path)
        try await fleet.add(name: "newcomer")
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].record(note) == nil, "not there without its file")
        fleet.clock.advance(by: 3_600_001)
        let report = try await fleet.engines[0].sync()
        #expect(report.lossChecked)
        #expect(report.remoteRolledBack == [path], "\(report.remoteRolledBack)")
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].canonicalDump() == a.canonicalDump())
        #expect(fleet.stores[1].blobs.contains(file.hash))
    }

    /// A file whose remote copy is torn, and whose writer will not put it again (here: its
    /// batch is compacted away, so only a snapshot references it; or the writer is gone):
    /// any replica holding the file puts it again at its hourly listing, and a newcomer
    /// that could not join the snapshot then converges. Before, only the writer repaired,
    /// and only the files of its own batches still on the remote.
    @Test func aTornFileAnotherReplicaHoldsIsPutAgainByIt() async throws {
        var fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let note = ref("n1")
        _ = try a.attachFile(note, "cover", bytes: Array(repeating: 9, count: 100_000))
        try await fleet.syncAll()
        #expect(try b.record(note) != nil)
        try await fleet.engines[0].writeSnapshot()
        try await fleet.remote.delete(RemoteLayout.batch(a.replicaID, seq: 1))
        let file = try #require(try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).first)
        let bytes = try #require(try await fleet.remote.get(file.path))
        try await fleet.remote.put(file.path, Array(bytes.prefix(11)))
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].record(note) == nil, "joined a snapshot without its file")
        // b, which is not the writer, holds the file: its hourly listing puts it again.
        fleet.clock.advance(by: 3_600_001)
        let report = try await fleet.engines[1].sync()
        #expect(report.lossChecked)
        #expect(report.remoteRolledBack.contains(file.path), "\(report.remoteRolledBack)")
        #expect(try await fleet.remote.get(file.path)?.count == bytes.count)
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].canonicalDump() == a.canonicalDump())
    }

    /// A put that stored a prefix and reported success (a misbehaving sync client): the
    /// batch and the file are listed, so nothing looks missing, but their sizes give them
    /// away. The writer's hourly listing puts both again; a newcomer then converges.
    @Test func aTornBatchAndFileThatReportedSuccessArePutAgain() async throws {
        var fleet = try await Fleet(count: 1)
        let a = fleet.stores[0]
        let note = ref("n1")
        try a.set(note, "title", .string("one"))
        _ = try a.attachFile(note, "cover", bytes: Array(repeating: 7, count: 100_000))
        try await fleet.syncAll()
        let batch = RemoteLayout.batch(a.replicaID, seq: 1)
        let file = try #require(try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).first?.path)
        let whole = try #require(try await fleet.remote.get(batch)).count
        func tear(_ path: String) async throws {
            let bytes = try #require(try await fleet.remote.get(path))
            try await fleet.remote.put(path, Array(bytes.prefix(bytes.count / 2)))
        }
        try await tear(file)
        try await fleet.add(name: "newcomer")
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].record(note) == nil, "held back while its file is torn")
        fleet.clock.advance(by: 3_600_001)
        #expect(try await fleet.engines[0].sync().remoteRolledBack == [file])
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].canonicalDump() == a.canonicalDump())

        try await tear(batch)
        try await fleet.add(name: "second")
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].record(note) == nil)
        fleet.clock.advance(by: 3_600_001)
        let report = try await fleet.engines[0].sync()
        #expect(report.remoteRolledBack.contains(batch), "\(report.remoteRolledBack)")
        #expect(try await fleet.remote.get(batch)?.count == whole)
        try await fleet.engines[2].sync()
        #expect(try fleet.stores[2].canonicalDump() == a.canonicalDump())
    }
}
