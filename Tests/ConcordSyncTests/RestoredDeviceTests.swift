import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import GRDB
import Testing

/// A device restored from a backup brings back an older copy of its store. Its replica id
/// is the same, so pushing as usual would give a batch name that others already applied
/// different contents.
@Suite struct RestoredDeviceTests {
    /// A consistent copy of `store`'s file, as a backup would take it.
    func backup(_ store: Store, to path: String) throws {
        try store.reader.backup(to: try DatabaseQueue(path: path))
    }

    /// a syncs; its store is backed up; it writes n2 and syncs; b pulls n2; the backup is
    /// restored and writes n3.
    func restoredScenario(compactFirst: Bool) async throws -> (fleet: Fleet, restoredStore: Store, restored: SyncEngine, batch2: [UInt8]?) {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(RecordRef(collection: "notes", id: "n1"), "title", .string("one"))
        try await fleet.syncAll()
        let copy = fleet.scratch.file("a-restored.db")
        try backup(a, to: copy)
        try a.set(RecordRef(collection: "notes", id: "n2"), "title", .string("two"))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        #expect(try b.record(RecordRef(collection: "notes", id: "n2")) != nil)
        let batch2Path = RemoteLayout.batch(a.replicaID, seq: 2)
        if compactFirst {
            // Compacted: a snapshot of a covers batch 2, and the batch is gone; only the
            // head and the snapshot tell.
            try await fleet.engines[0].writeSnapshot()
            try await fleet.remote.delete(batch2Path)
        }
        let batch2 = try await fleet.remote.get(batch2Path)
        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        #expect(restoredStore.replicaID == a.replicaID)
        try restoredStore.set(RecordRef(collection: "notes", id: "n3"), "title", .string("three"))
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        return (fleet, restoredStore, restored, batch2)
    }

    /// A restored copy with a backlog of sealed batches, its old head gone from the remote
    /// (nothing at sync start shows it is a copy): the first new batch name goes up alone,
    /// so finding it taken stops the push before a later batch of the backlog lands under
    /// the old id beside it (with 8 requests in flight they once went up together).
    @Test func aRestoredCopysBacklogNeverLandsBesideATakenName() async throws {
        let (fleet, restoredStore, restored, batch2) = try await restoredScenario(compactFirst: false)
        let old = fleet.stores[0].replicaID
        _ = try restoredStore.seal()
        try restoredStore.set(RecordRef(collection: "notes", id: "n4"), "title", .string("four"))
        _ = try restoredStore.seal()
        #expect(try restoredStore.sealedSeq() == 3)
        for head in try await fleet.remote.list(prefix: RemoteLayout.headsPrefix) where head.path.contains(old.description) {
            try await fleet.remote.delete(head.path)
        }
        let report = try await restored.sync()
        #expect(report.restoredCopy?.old == old, "\(report)")
        #expect(try await fleet.remote.get(RemoteLayout.batch(old, seq: 2)) == batch2)
        #expect(try await fleet.remote.get(RemoteLayout.batch(old, seq: 3)) == nil)
        try await fleet.engines[1].sync()
        try await restored.sync()
        try await fleet.engines[1].sync()
        #expect(try restoredStore.canonicalDump() == fleet.stores[1].canonicalDump())
        for id in ["n1", "n2", "n3", "n4"] {
            #expect(try fleet.stores[1].record(RecordRef(collection: "notes", id: id)) != nil, "\(id) missing")
        }
    }

    @Test(arguments: [false, true])
    func aRestoredStoreContinuesUnderANewIdAndLosesNothing(batchCompacted: Bool) async throws {
        var (fleet, restoredStore, restored, batch2) = try await restoredScenario(compactFirst: batchCompacted)
        let old = fleet.stores[0].replicaID
        let report = try await restored.sync()
        // The copy noticed, and continues under a new id; the old id's batch 2 is untouched.
        let change = try #require(report.restoredCopy)
        #expect(change.old == old && change.new != old && restoredStore.replicaID == change.new)
        #expect(try await fleet.remote.get(RemoteLayout.batch(old, seq: 2)) == batch2)
        #expect(try await fleet.remote.list(prefix: RemoteLayout.batchesPrefix(old)).count == (batchCompacted ? 1 : 2))
        // It recovered n2 from the remote: from the batch, or the snapshot covering it.
        #expect(try restoredStore.record(RecordRef(collection: "notes", id: "n2")) != nil)
        // Every replica, and a new one, converge: n1, n2 and n3 everywhere.
        try await fleet.engines[1].sync()
        try await restored.sync()
        try await fleet.engines[1].sync()
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        let dumps = Set([try restoredStore.canonicalDump(), try fleet.stores[1].canonicalDump(), try fleet.stores[2].canonicalDump()])
        #expect(dumps.count == 1)
        for store in [restoredStore, fleet.stores[1]] {
            for id in ["n1", "n2", "n3"] {
                #expect(try store.record(RecordRef(collection: "notes", id: id)) != nil, "\(id) missing")
            }
        }
        // Its later writes go out under the new id, and the old one is retired.
        try restoredStore.set(RecordRef(collection: "notes", id: "n4"), "title", .string("four"))
        try await restored.sync()
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].record(RecordRef(collection: "notes", id: "n4")) != nil)
        let replicas = try await fleet.engines[1].replicas()
        #expect(replicas.first { $0.id == old }?.status == .forgotten)
        #expect(replicas.first { $0.id == change.new }?.status == .active)
    }
    /// The restored copy has nothing to push and its own head is torn, so neither its head
    /// nor a push can tell; another replica's batch that depends on its lost change does.
    @Test func aRestoredCopyWithATornHeadAndNothingToPushIsToldByAnotherReplicasBatch() async throws {
        var fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try await fleet.syncAll()
        let copy = fleet.scratch.file("a-restored.db")
        try backup(a, to: copy)
        try a.set(RecordRef(collection: "notes", id: "n1"), "title", .string("one"))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        try b.set(RecordRef(collection: "notes", id: "n1"), "body", .string("b saw a's n1"))
        try await fleet.engines[1].sync()
        // a's newest head is torn by an interrupted rewrite; then a's device is restored.
        let head = try #require(try await fleet.remote.list(prefix: RemoteLayout.headsPrefix).map(\.path)
            .first { $0.hasPrefix(RemoteLayout.headsPrefix + a.replicaID.description) })
        try await fleet.remote.put(head, [])
        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        let report = try await restored.sync()
        let change = try #require(report.restoredCopy)
        #expect(change.old == a.replicaID && restoredStore.replicaID == change.new)
        #expect(report.waiting == 0)
        #expect(try restoredStore.record(RecordRef(collection: "notes", id: "n1"))?.count == 2)
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        try await restored.sync()
        #expect(Set([try restoredStore.canonicalDump(), try b.canonicalDump(), try fleet.stores[2].canonicalDump()]).count == 1)
    }


    /// The copy sealed its own n9 under the old id's seq 1 before it synced, so at the
    /// sync's start its sealed seq matches the old id's head and nothing tells. b's batch
    /// depends on a's batch 1 (b removed the tag a added), and the copy's own later write
    /// makes its stamp for a look past what b depends on: applying b's batch would let it
    /// think it had seen a's batch 1, and once it found out it was a copy, applying a's
    /// batch 1 would bring back the tag b had removed, on the copy alone. The stamp b depends on is
    /// not the end of any batch this store sealed, so the copy knows before it applies.
    @Test func aRestoredCopyThatSealedPastItsBackupIsToldByABatchThatDependsOnWritesItNeverMade() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try await fleet.syncAll()
        let copy = fleet.scratch.file("a-restored.db")
        try backup(a, to: copy)
        let n1 = RecordRef(collection: "notes", id: "n1")
        try a.set(n1, "title", .string("one"))
        try a.add(n1, "tags", .string("draft"))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        try b.remove(n1, "tags", .string("draft"))
        try await fleet.engines[1].sync()

        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        fleet.clock.advance(by: 60_000)  // the copy writes later than a did
        try restoredStore.set(RecordRef(collection: "notes", id: "n9"), "title", .string("the copy's"))
        #expect(try restoredStore.seal()?.seq == 1)
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        let report = try await restored.sync()
        let change = try #require(report.restoredCopy)
        #expect(change.old == a.replicaID && restoredStore.replicaID == change.new)
        try await fleet.engines[1].sync()
        try await restored.sync()
        try await fleet.engines[1].sync()
        for store in [restoredStore, b] {
            let tags = try store.record(n1)?.first { $0.name == "tags" }?.value
            #expect(tags == nil || tags == .set([]), "the tag b removed came back: \(String(describing: tags))")
            #expect(try title(store, n1) == "one")
            #expect(try title(store, RecordRef(collection: "notes", id: "n9")) == "the copy's")
        }
        #expect(try restoredStore.canonicalDump() == b.canonicalDump())
    }

    /// a writes n1 and syncs; storage tears batch 1 and reports its put as done; a's store
    /// is backed up; a writes n2 and syncs. Returns the fleet, the backup's path, batch 1's
    /// name and its whole bytes.
    func tornBatchBackedUp() async throws -> (fleet: Fleet, copy: String, batch1: String, whole: [UInt8]) {
        let fleet = try await Fleet(count: 2)
        let a = fleet.stores[0]
        try await fleet.syncAll()
        try a.set(n1, "title", .string("one"))
        try await fleet.engines[0].sync()
        let batch1 = RemoteLayout.batch(a.replicaID, seq: 1)
        let whole = try #require(try await fleet.remote.get(batch1))
        try await fleet.remote.put(batch1, Array(whole.prefix(whole.count / 2)))
        let copy = fleet.scratch.file("a-restored.db")
        try backup(a, to: copy)
        try a.set(n2, "title", .string("two"))
        try await fleet.engines[0].sync()
        return (fleet, copy, batch1, whole)
    }

    /// a's batch 1 was torn by storage that reported its put as done, and a's store was
    /// backed up after it; a pushed batch 2, and its device was restored. Nobody could
    /// apply batch 1, nor batch 2 after it, and once the copy retires the old id nobody
    /// would put batch 1 back: the copy does, byte for byte (it sealed it before the backup,
    /// so these are the bytes its lost store pushed), before it continues under a new id.
    @Test func aRestoredCopyPutsBackItsTornBatchBeforeItRetiresItsOldId() async throws {
        let (fleet, copy, batch1, whole) = try await tornBatchBackedUp()
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let waiting = try await fleet.engines[1].sync()
        #expect(waiting.waiting > 0 || !waiting.rejected.isEmpty)
        #expect(try b.record(n1) == nil)

        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        try restoredStore.set(n3, "title", .string("three"))
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        let report = try await restored.sync()
        #expect(report.restoredCopy?.old == a.replicaID)
        #expect(report.remoteRolledBack.contains(batch1), "\(report)")
        #expect(try await fleet.remote.get(batch1) == whole)
        try await fleet.engines[1].sync()
        try await restored.sync()
        for store in [restoredStore, b] {
            #expect(try title(store, n1) == "one")
            #expect(try title(store, n2) == "two")
            #expect(try title(store, n3) == "three")
        }
        #expect(try restoredStore.canonicalDump() == b.canonicalDump())
    }

    /// As above, but the copy's storage tears every put and reports it done: the copy puts
    /// batch 1 back three times at most, then stops with one line and keeps its id (a
    /// retired id with a torn batch could never be mended). Once the storage stops lying,
    /// the next sync puts it back whole and continues under a new id.
    @Test func aRestoredCopyKeepsItsIdWhileItsTornBatchCannotBePutBackWholeAndTriesAtMostThreeTimes() async throws {
        let (fleet, copy, batch1, whole) = try await tornBatchBackedUp()
        let (a, b) = (fleet.stores[0], fleet.stores[1])

        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        try restoredStore.set(n3, "title", .string("three"))
        let lying = FaultyRemote(wrapping: fleet.remote, seed: 7, plan: FaultyRemote.Plan(tornPut: 1, tornPutReportsSuccess: true))
        let restored = SyncEngine(store: restoredStore, remote: lying, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        let error = await #expect(throws: ConcordError.self) { try await restored.sync() }
        #expect(error?.code == .remote && error?.message.contains("three times") == true, "\(String(describing: error))")
        #expect(lying.counts.tornPuts == 3, "one put of the batch per round, three rounds")
        #expect(restoredStore.replicaID == a.replicaID, "the id is kept while its batch is torn")

        lying.faultsOff()
        let report = try await restored.sync()
        #expect(report.restoredCopy?.old == a.replicaID)
        #expect(try await fleet.remote.get(batch1) == whole)
        try await fleet.engines[1].sync()
        for id in [n1, n2, n3] { #expect(try b.record(id) != nil, "\(id.id) missing") }
    }

    let n1 = RecordRef(collection: "notes", id: "n1"), n2 = RecordRef(collection: "notes", id: "n2"), n3 = RecordRef(collection: "notes", id: "n3")

    /// Two replicas; a writes n1 and both sync; a's store is backed up (to the path returned).
    func backedUpAfterN1() async throws -> (Fleet, String) {
        let fleet = try await Fleet(count: 2)
        try fleet.stores[0].set(RecordRef(collection: "notes", id: "n1"), "title", .string("one"))
        try await fleet.syncAll()
        let copy = fleet.scratch.file("a-restored.db")
        try backup(fleet.stores[0], to: copy)
        return (fleet, copy)
    }

    func title(_ store: Store, _ ref: RecordRef) throws -> String? {
        guard case let .scalar(.string(title))? = try store.record(ref)?.first(where: { $0.name == "title" })?.value else { return nil }
        return title
    }

    /// a's store uploaded batch 2 and was lost before it wrote the head that announces it;
    /// the device is restored from a backup taken before. Nobody would ever apply n2: the
    /// copy finds out (from its push of its own n3, or from the periodic listing when it
    /// has nothing to push) and announces the old id's batch, so n2 reaches every replica.
    @Test(arguments: [true, false])
    func aRestoredCopyAnnouncesTheBatchesItsLostStoreNeverAnnounced(copyWrites: Bool) async throws {
        let (first, copy) = try await backedUpAfterN1()
        var fleet = first
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let head1 = RemoteLayout.head(a.replicaID, seq: 1)
        let head1Bytes = try #require(try await fleet.remote.get(head1))
        try a.set(n2, "title", .string("two"))
        try await fleet.engines[0].sync()
        // The head that announced batch 2 was never written: the remote is as a push leaves
        // it when it dies between the batch and the head.
        try await fleet.remote.delete(RemoteLayout.head(a.replicaID, seq: 2))
        try await fleet.remote.put(head1, head1Bytes)
        try await fleet.engines[1].sync()
        #expect(try b.record(n2) == nil)

        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        if copyWrites { try restoredStore.set(n3, "title", .string("three")) }
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        // Past the periodic listing's interval, so the copy with nothing to push looks.
        fleet.clock.advance(by: Int64(restored.lossCheckInterval))
        let report = try await restored.sync()
        let change = try #require(report.restoredCopy)
        #expect(change.old == a.replicaID && restoredStore.replicaID == change.new)
        #expect(report.announcedOrphans == [RemoteLayout.batch(a.replicaID, seq: 2)])
        #expect(try title(restoredStore, n2) == "two")
        // Announced under the old id, which stays retired.
        #expect(try await fleet.remote.list(prefix: RemoteLayout.headsPrefix + a.replicaID.description).map(\.path) == [RemoteLayout.head(a.replicaID, seq: 2)])
        try await fleet.engines[1].sync()
        try await fleet.add(name: "newcomer")
        try await fleet.engines[2].sync()
        try await restored.sync()
        for store in [restoredStore, b, fleet.stores[2]] {
            #expect(try title(store, n2) == "two")
            #expect(try title(store, n3) == (copyWrites ? "three" : nil))
        }
        #expect(Set([try restoredStore.canonicalDump(), try b.canonicalDump(), try fleet.stores[2].canonicalDump()]).count == 1)
        #expect(try await fleet.engines[1].replicas().first { $0.id == a.replicaID }?.status == .forgotten)
        // Announced once: the next syncs find nothing more to announce.
        #expect(try await restored.sync().announcedOrphans.isEmpty)
    }

    /// The copy's only evidence is a snapshot: its own head is torn, its batch 2 compacted,
    /// and it catches up on b through b's snapshot, which holds a's n2. Joining that would
    /// make the copy seal its next batch under name 2 again (the original is gone, so no
    /// byte comparison can tell), and b, which applied the original, would never see n3.
    @Test func aRestoredCopyWhoseOnlyEvidenceIsASnapshotContinuesUnderANewId() async throws {
        let (fleet, copy) = try await backedUpAfterN1()
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(n2, "title", .string("two"))
        try await fleet.engines[0].sync()
        try b.set(RecordRef(collection: "notes", id: "m1"), "title", .string("b's"))
        try await fleet.engines[1].sync()
        try await fleet.engines[1].writeSnapshot()
        // b's batch and a's batch 2 compacted away; a's head torn by an interrupted rewrite.
        try await fleet.remote.delete(RemoteLayout.batch(b.replicaID, seq: 1))
        try await fleet.remote.delete(RemoteLayout.batch(a.replicaID, seq: 2))
        try await fleet.remote.put(RemoteLayout.head(a.replicaID, seq: 2), [])

        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        try restoredStore.set(n3, "title", .string("three"))
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        let report = try await restored.sync()
        let change = try #require(report.restoredCopy)
        #expect(change.old == a.replicaID && restoredStore.replicaID == change.new)
        #expect(try await fleet.remote.get(RemoteLayout.batch(a.replicaID, seq: 2)) == nil, "batch name 2 of the old id was written again")
        try await fleet.engines[1].sync()
        try await restored.sync()
        for store in [restoredStore, b] {
            #expect(try title(store, n2) == "two")
            #expect(try title(store, n3) == "three")
        }
        #expect(try restoredStore.canonicalDump() == b.canonicalDump())
    }
}
