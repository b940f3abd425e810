import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

@Suite struct SyncTests {
    let note = RecordRef(collection: "notes", id: "n1")

    @Test func threeReplicasConvergeThroughAFolder() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, b, c) = (fleet.stores[0], fleet.stores[1], fleet.stores[2])
        try a.put(note, ["title": .scalar(.string("Zelda")), "level": .scalar(.int(1))])
        try await fleet.syncAll()
        try a.set(note, "level", .int(2))
        try b.set(note, "level", .int(3))
        try b.add(note, "tags", .string("classic"))
        try c.delete(RecordRef(collection: "notes", id: "gone"))
        let file = try c.attachFile(note, "cover", bytes: Array("cover image".utf8), mediaType: "image/png")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.first { $0.name == "cover" }?.value == .file(file))
        #expect(try a.blobs.bytes(file.hash) == Array("cover image".utf8))
        // Nothing left to send: an idle sync changes nothing.
        let report = try await fleet.engines[0].sync()
        #expect(report.applied == 0 && report.pushed == 0)
        let replicas = try await fleet.engines[1].replicas()
        #expect(Set(replicas.compactMap(\.deviceName)) == ["device0", "device1", "device2"])
    }

    /// A deleted `concord.json` is put back by the hourly loss check of a running engine,
    /// byte for byte the store's own (any replica keeps the one it unlocked); a remote that
    /// holds another store's `concord.json` is never overwritten.
    @Test func aDeletedConcordJSONIsPutBackAndAnotherStoresIsNeverOverwritten() async throws {
        let fleet = try await Fleet(count: 2)
        try fleet.stores[0].set(note, "title", .string("kept"))
        try await fleet.syncAll()
        let original = try #require(try await fleet.remote.get(RemoteLayout.manifestPath))
        try await fleet.remote.delete(RemoteLayout.manifestPath)
        fleet.clock.advance(by: 3_600_001)  // the loss check is due
        let report = try await fleet.engines[1].sync()
        #expect(report.remoteRolledBack.contains(RemoteLayout.manifestPath), "\(report.remoteRolledBack)")
        let restored = try #require(try await fleet.remote.get(RemoteLayout.manifestPath))
        #expect(try StoreManifest(json: restored).storeID == StoreManifest(json: original).storeID)
        #expect(try await SyncEngine.unlock(fleet.remote, passphrase: Fleet.passphrase).storeID == StoreManifest(json: original).storeID)
        // Another store's concord.json in its place: refused, and left as it is.
        try await fleet.remote.delete(RemoteLayout.manifestPath)
        _ = try await SyncEngine.createRemote(fleet.remote, passphrase: "another", limits: .minimum)
        let other = try #require(try await fleet.remote.get(RemoteLayout.manifestPath))
        #expect(try await SyncEngine.restoreManifest(fleet.remote, from: fleet.stores[0]) == nil)
        fleet.clock.advance(by: 3_600_001)
        let doctor = try await fleet.engines[0].doctor(repair: true)
        #expect(!doctor.isHealthy)
        #expect(doctor.findings.contains { $0.kind == .remoteEmptied }, "\(doctor.findings)")
        await #expect(throws: ConcordError.self) { try await fleet.engines[0].sync() }
        #expect(try await fleet.remote.get(RemoteLayout.manifestPath) == other)
    }

    /// Storage that tore the put of `concord.json` while reporting it done (or a truncated
    /// copy from a sync client): the hourly check puts the kept copy back and reads it back;
    /// a new passphrase set elsewhere is what each replica keeps from then on; a readable
    /// `concord.json` of a newer format is never overwritten.
    @Test func aTornConcordJSONIsPutBackAndTheKeptCopyFollowsANewPassphrase() async throws {
        let fleet = try await Fleet(count: 2)
        try fleet.stores[0].set(note, "title", .string("kept"))
        try await fleet.syncAll()
        // Another device sets a new passphrase: the hourly check keeps the new copy.
        try await SyncEngine.changePassphrase(fleet.remote, from: Fleet.passphrase, to: "renewed")
        let renewed = try #require(try await fleet.remote.get(RemoteLayout.manifestPath))
        fleet.clock.advance(by: 3_600_001)
        _ = try await fleet.engines[0].sync()
        _ = try await fleet.engines[1].sync()
        // Torn: the first half of it.
        try await fleet.remote.put(RemoteLayout.manifestPath, Array(renewed.prefix(renewed.count / 2)))
        await #expect(throws: ConcordError.self) { try await SyncEngine.unlock(fleet.remote, passphrase: "renewed") }
        fleet.clock.advance(by: 3_600_001)
        let report = try await fleet.engines[0].sync()
        #expect(report.remoteRolledBack.contains(RemoteLayout.manifestPath), "\(report.remoteRolledBack)")
        #expect(try await fleet.remote.get(RemoteLayout.manifestPath) == renewed)
        _ = try await SyncEngine.unlock(fleet.remote, passphrase: "renewed")
        // `doctor` names a torn one and `--repair` puts it back.
        try await fleet.remote.put(RemoteLayout.manifestPath, Array(renewed.prefix(10)))
        let doctor = try await fleet.engines[1].doctor(repair: true)
        #expect(doctor.findings.contains { $0.kind == .missingManifest && $0.repaired }, "\(doctor.findings)")
        #expect(try await fleet.remote.get(RemoteLayout.manifestPath) == renewed)
        // A web page in its place (a captive portal answering for the store) is not damage:
        // nothing is written over it.
        let portal = Array("\n<!DOCTYPE html><html><body>Sign in to the hotel Wi-Fi</body></html>".utf8)
        try await fleet.remote.put(RemoteLayout.manifestPath, portal)
        #expect(SyncEngine.looksLikeWebPage(portal) && !SyncEngine.isDamagedManifest(portal))
        #expect(try await SyncEngine.restoreManifest(fleet.remote, from: fleet.stores[0]) == nil)
        #expect(try await fleet.remote.get(RemoteLayout.manifestPath) == portal)
        // A readable manifest of a newer format is left as it is.
        var newer = String(decoding: renewed, as: UTF8.self)
        newer = newer.replacingOccurrences(of: "\"formatVersion\" : 1", with: "\"formatVersion\" : 2")
        #expect(newer.utf8.elementsEqual(renewed) == false)
        try await fleet.remote.put(RemoteLayout.manifestPath, Array(newer.utf8))
        #expect(try await SyncEngine.restoreManifest(fleet.remote, from: fleet.stores[0]) == nil)
        #expect(try await fleet.remote.get(RemoteLayout.manifestPath) == Array(newer.utf8))
    }

    @Test func wrongPassphraseIsReportedBeforeAnythingIsRead() async throws {
        let scratch = TemporaryDirectory("sync")
        let folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
        _ = try await SyncEngine.createRemote(folder, passphrase: "right", limits: .minimum)
        let counting = FaultyRemote(wrapping: folder, seed: 1)
        do {
            _ = try await SyncEngine.unlock(counting, passphrase: "wrong")
            Issue.record("a wrong passphrase unlocked the store")
        } catch {
            #expect(error.code == .wrongKey, "\(error)")
        }
        #expect(counting.counts.gets == 1 && counting.counts.lists == 0 && counting.counts.puts == 0)
        // A changed passphrase opens the same store; the old one no longer does.
        try await SyncEngine.changePassphrase(folder, from: "right", to: "new")
        _ = try await SyncEngine.unlock(folder, passphrase: "new")
        await #expect(throws: ConcordError.self) { try await SyncEngine.unlock(folder, passphrase: "right") }
    }

    @Test func recreatedRemoteIsReportedNotMerged() async throws {
        let fleet = try await Fleet(count: 1)
        try fleet.stores[0].set(note, "title", .string("mine"))
        try await fleet.syncAll(rounds: 1)
        // The remote is deleted and a new store created in its place.
        try FileManager.default.removeItem(atPath: fleet.scratch.file("remote"))
        let folder = try FolderRemote(root: fleet.scratch.file("remote"), createIfMissing: true)
        _ = try await SyncEngine.createRemote(folder, passphrase: Fleet.passphrase, limits: .minimum)
        do {
            try await fleet.engines[0].sync()
            Issue.record("a re-created remote was synced")
        } catch {
            #expect(error.code == .storeMismatch, "\(error)")
        }
    }

    @Test func remoteHoldsOnlyCiphertext() async throws {
        let fleet = try await Fleet(count: 2)
        let secrets = ["zelda-secret-id", "secret_field_name", "a very secret value", "secret file content"]
        try fleet.stores[0].put(RecordRef(collection: "games", id: secrets[0]), [secrets[1]: .scalar(.string(secrets[2]))])
        try fleet.stores[0].attachFile(RecordRef(collection: "games", id: secrets[0]), "file", bytes: Array(secrets[3].utf8))
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        let objects = try await fleet.remote.list(prefix: "")
        // concord.json, the batch, its head, the file, and the reader's head.
        #expect(objects.count == 5)
        #expect(objects.contains { $0.path.hasPrefix("blobs/") })
        for object in objects {
            let bytes = try #require(try await fleet.remote.get(object.path))
            for secret in secrets + ["games"] {
                #expect(bytes.firstRange(of: Array(secret.utf8)) == nil, "\(object.path) contains \(secret) in plaintext")
            }
        }
    }

    @Test func tamperedTruncatedSwappedAndReplayedObjectsApplyNothing() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, b, c) = (fleet.stores[0], fleet.stores[1], fleet.stores[2])
        // Two independent batches: b pushes without having seen a's.
        try a.set(note, "from", .string("a"))
        try await fleet.engines[0].sync(mode: .pushOnly)
        try b.set(RecordRef(collection: "notes", id: "b"), "from", .string("b"))
        try await fleet.engines[1].sync(mode: .pushOnly)
        let aDelta = RemoteLayout.batch(a.replicaID, seq: 1)
        let bDelta = RemoteLayout.batch(b.replicaID, seq: 1)
        let original = try #require(try await fleet.remote.get(aDelta))
        for damaged in [
            Array(original.dropLast(5)),  // truncated
            original.enumerated().map { $0.offset == 40 ? $0.element ^ 1 : $0.element },  // tampered
            try #require(try await fleet.remote.get(bDelta)),  // swapped: b's batch under a's name
        ] {
            try await fleet.remote.put(aDelta, damaged)
            let report = try await fleet.engines[2].sync(mode: .pullOnly)
            #expect(report.rejected.contains { $0.hasPrefix(aDelta) }, "\(report.rejected)")
            // Nothing of a's batch applied; b's batch still syncs.
            #expect(try c.record(note) == nil)
            #expect(try c.record(RecordRef(collection: "notes", id: "b")) != nil)
        }
        // Restored, it applies; replaying it again changes nothing.
        try await fleet.remote.put(aDelta, original)
        try await fleet.engines[2].sync(mode: .pullOnly)
        #expect(try c.record(note)?.first?.value == .scalar(.string("a")))
        let dump = try c.canonicalDump()
        try await fleet.engines[2].sync(mode: .pullOnly)
        #expect(try c.canonicalDump() == dump)
    }

    @Test func pushOnlyAndPullOnly() async throws {
        let fleet = try await Fleet(count: 2)
        try fleet.stores[0].set(note, "x", .int(1))
        try fleet.stores[1].set(note, "y", .int(2))
        try await fleet.engines[0].sync(mode: .pushOnly)
        try await fleet.engines[1].sync(mode: .pullOnly)
        #expect(try fleet.stores[1].record(note)?.map(\.name) == ["x", "y"])
        #expect(try fleet.stores[1].pendingChangeCount() > 0)  // pull-only pushed nothing
        try await fleet.engines[0].sync(mode: .pullOnly)
        #expect(try fleet.stores[0].record(note)?.map(\.name) == ["x"])
    }

    @Test func clockSkewIsAppliedAndReported() async throws {
        let fleet = try await Fleet(count: 1)
        let ahead = ManualClock(millis: fleet.clock.millisecondsSinceEpoch() + 86_400_000)
        let store = try Store(path: fleet.scratch.file("ahead.db"), configuration: .init(clock: ahead))
        let (key, id) = try await SyncEngine.unlock(fleet.remote, passphrase: Fleet.passphrase)
        let engine = SyncEngine(store: store, remote: fleet.remote, key: key, storeID: id, clock: ahead)
        try store.set(note, "from", .string("the future"))
        try await engine.sync()
        let report = try await fleet.engines[0].sync()
        #expect(report.skews.map(\.replica) == [store.replicaID])
        #expect(report.skews.first.map { $0.aheadBy >= 86_000_000 } == true)
        #expect(try await fleet.engines[0].clockSkews().map(\.replica) == [store.replicaID])
        #expect(try fleet.stores[0].record(note)?.first?.value == .scalar(.string("the future")))
    }

    @Test func progressIsReported() async throws {
        let fleet = try await Fleet(count: 2)
        for index in 0..<5 { try fleet.stores[0].set(RecordRef(collection: "c", id: "\(index)"), "v", .int(Int64(index))) }
        _ = try fleet.stores[0].seal()
        try fleet.stores[0].set(note, "v", .int(1))
        try await fleet.engines[0].sync()
        let phases = PhaseLog()
        try await fleet.engines[1].sync { phases.append($0.phase) }
        let seen = phases.values
        #expect(seen.contains(.downloading) && seen.contains(.applying) && seen.last == .done)
    }

    /// A batch in a format version this release does not read (as a release that reads only
    /// version 1 sees a version-2 batch) stops the pull of its origin with a report naming
    /// the version, applies nothing of it, lets every other origin sync, and is applied in
    /// full once it reads ("upgraded"): nothing is lost.
    @Test func aBatchInANewerFormatStopsItsOriginUntilItReadsAndLosesNothing() async throws {
        let fleet = try await Fleet(count: 3)
        let first = RecordRef(collection: "notes", id: "from0")
        let second = RecordRef(collection: "notes", id: "from1")
        try fleet.stores[0].put(first, ["title": .scalar(.string("kept"))])
        try fleet.stores[1].put(second, ["title": .scalar(.string("also kept"))])
        // The second device pushes first, so its batch does not depend on the first's.
        try await fleet.engines[1].sync()
        try await fleet.engines[0].sync()

        let origin = fleet.stores[0].replicaID
        let path = RemoteLayout.batch(origin, seq: 1)
        let plaintext = try #require(try fleet.stores[0].sealedBatch(seq: 1)?.bytes)
        #expect(DeltaCodec.version(of: plaintext) == DeltaCodec.currentVersion)
        var newer = plaintext
        newer[4] = DeltaCodec.readableVersions.upperBound + 1
        try await fleet.remote.put(path, EncryptedObject.encrypt(newer, path: path, key: fleet.key.subkey(for: .batches)))

        let report = try await fleet.engines[2].sync()
        #expect(report.rejected.contains { $0.hasPrefix(path) && $0.contains("format version \(newer[4]) is not supported") }, "\(report.rejected)")
        #expect(try fleet.stores[2].record(first) == nil)
        #expect(try fleet.stores[2].record(second) != nil)
        #expect(try fleet.stores[2].versionVector()[origin] == 0)

        // Readable again (what an upgrade does): the next sync applies it.
        try await fleet.remote.put(path, EncryptedObject.encrypt(plaintext, path: path, key: fleet.key.subkey(for: .batches)))
        try await fleet.syncAll()
        #expect(try fleet.stores[2].record(first)?.first { $0.name == "title" }?.value == .scalar(.string("kept")))
        #expect(try fleet.dumps().count == 1)
    }
}

final class PhaseLog: @unchecked Sendable {
    private let lock = NSLock()
    private var phases: [SyncProgress.Phase] = []
    func append(_ phase: SyncProgress.Phase) { lock.withLock { phases.append(phase) } }
    var values: [SyncProgress.Phase] { lock.withLock { phases } }
}

@Suite struct SnapshotTests {
    @Test func newReplicaBootstrapsFromTheNewestSnapshotThenPulls() async throws {
        var fleet = try await Fleet(count: 2)
        let note = RecordRef(collection: "notes", id: "n")
        try fleet.stores[0].put(note, ["title": .scalar(.string("before the snapshot"))])
        try fleet.stores[0].attachFile(note, "doc", bytes: Array("a file in the snapshot".utf8))
        try await fleet.syncAll()
        let path = try await fleet.engines[1].writeSnapshot()
        #expect(path.hasPrefix("snapshots/"))
        try fleet.stores[0].set(note, "after", .int(1))
        try await fleet.engines[0].sync()
        try await fleet.add(name: "newcomer")
        let progress = fleet.engines[2].progressUpdates()
        let report = try await fleet.engines[2].sync()
        #expect(report.bootstrapped == path)
        #expect(report.applied == 1)  // only the batch written after the snapshot
        #expect(try fleet.stores[2].canonicalDump() == fleet.stores[0].canonicalDump())
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        var phases: [SyncProgress.Phase] = []
        for await update in progress {
            phases.append(update.phase)
            if update.phase == .done { break }
        }
        #expect(phases.contains(.applying))
        // Older snapshots of a replica are deleted; the newest two stay.
        for _ in 0..<3 {
            try fleet.stores[1].set(note, "n", .int(Int64.random(in: 0...9)))
            try await fleet.engines[1].writeSnapshot()
        }
        let snapshots = try await fleet.remote.list(prefix: "snapshots/")
        #expect(snapshots.count == 2)
    }

    /// A snapshot counts as covering batches only once every record of it reads: an
    /// authentic snapshot of another replica that claims this replica's batches but holds a
    /// defect after its records is not shared by compaction, so its batches are not deleted on
    /// its strength; the replica writes its own, and a newcomer gets every write.
    @Test func compactionDoesNotShareASnapshotWhoseRecordsAreMalformed() async throws {
        var fleet = try await Fleet(count: 1)
        let notes = (0..<3).map { RecordRef(collection: "notes", id: "n\($0)") }
        for note in notes {
            try fleet.stores[0].put(note, ["title": .scalar(.string(note.id))])
            try await fleet.engines[0].sync()
        }
        let me = fleet.stores[0].replicaID
        let pushed = try fleet.stores[0].sealedSeq()
        let planted = ReplicaID(high: 0xbad, low: 2)
        let path = RemoteLayout.snapshot(planted, seq: 1)
        let plaintext = try SnapshotObjectCodec.encode(SnapshotContents(state: try fleet.stores[0].state(), appliedSeqs: [me: pushed])) + [0]
        try await fleet.remote.put(path, EncryptedObject.encrypt(plaintext, path: path, key: fleet.key.subkey(for: .snapshots)))
        fleet.clock.advance(by: 10_000)

        let compaction = try await fleet.engines[0].compact(batchGracePeriod: 1)
        #expect(compaction.sharedSnapshot == nil)
        #expect(compaction.snapshot != nil)
        try await fleet.add(name: "newcomer")
        let report = try await fleet.engines[1].sync()
        #expect(report.bootstrapped == compaction.snapshot)
        for note in notes { #expect(try fleet.stores[1].record(note) != nil, "\(note.id) lost") }
        #expect(try fleet.stores[1].canonicalDump() == fleet.stores[0].canonicalDump())
    }

    /// A new replica joins its first snapshot as it reads it. A newer snapshot that
    /// authenticates but holds a defect only after its last record (a stray byte) — found
    /// once records were read — is passed over with nothing of it written, and the replica
    /// bootstraps from the older good one.
    @Test func aSnapshotMalformedAfterItsRecordsIsPassedOverWithNothingWritten() async throws {
        var fleet = try await Fleet(count: 1)
        let note = RecordRef(collection: "notes", id: "n")
        try fleet.stores[0].put(note, ["title": .scalar(.string("kept"))])
        try await fleet.syncAll()
        let good = try await fleet.engines[0].writeSnapshot()

        let planted = ReplicaID(high: 0xbad, low: 1)
        var records = try fleet.stores[0].state().records
        records[RecordRef(collection: "notes", id: "planted")] = records[note]
        let state = StoreState(context: try fleet.stores[0].state().context, records: records)
        let path = RemoteLayout.snapshot(planted, seq: 1)
        let plaintext = try SnapshotObjectCodec.encode(SnapshotContents(state: state, appliedSeqs: [:])) + [0]
        fleet.clock.advance(by: 1_000)  // the newest on the remote: tried first
        try await fleet.remote.put(path, EncryptedObject.encrypt(plaintext, path: path, key: fleet.key.subkey(for: .snapshots)))

        try await fleet.add(name: "newcomer")
        let report = try await fleet.engines[1].sync()
        #expect(report.rejected.contains { $0.hasPrefix(path) && $0.contains("after the end of the snapshot") }, "\(report.rejected)")
        #expect(report.bootstrapped == good)
        #expect(try fleet.stores[1].record(RecordRef(collection: "notes", id: "planted")) == nil)
        #expect(try fleet.stores[1].canonicalDump() == fleet.stores[0].canonicalDump())
    }
}

@Suite struct CompactionTests {
    @Test func compactionDeletesCoveredBatchesAndLaggardsJoinTheSnapshot() async throws {
        var fleet = try await Fleet(count: 3)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        let note = RecordRef(collection: "notes", id: "n")
        // b syncs once, then goes quiet (a laggard); c keeps up.
        try await fleet.engines[1].sync()
        for round in 0..<4 {
            try a.set(note, "round", .int(Int64(round)))
            try await fleet.engines[0].sync()
            try await fleet.engines[2].sync()
        }
        // Not everyone has applied a's batches: nothing is deleted without a grace period.
        let cautious = try await fleet.engines[0].compact()
        #expect(cautious.snapshot != nil)
        #expect(cautious.deletedBatches.isEmpty)
        // With a grace period that has passed, the covered batches go. (Object ages come
        // from the folder's real modification times, so the clock moves to real time.)
        fleet.clock.set(SystemClock().millisecondsSinceEpoch() + 10_000)
        let report = try await fleet.engines[0].compact(batchGracePeriod: 1)
        #expect(report.deletedBatches == [1, 2, 3, 4])
        #expect(try await fleet.remote.list(prefix: RemoteLayout.batchesPrefix(a.replicaID)).isEmpty)
        // The laggard joins a's snapshot instead and keeps its own unpushed change.
        try b.set(note, "mine", .string("unpushed"))
        let caughtUp = try await fleet.engines[1].sync()
        #expect(caughtUp.joinedSnapshots.count == 1)
        #expect(try b.record(note)?.map(\.name) == ["mine", "round"])
        // A new replica bootstraps from a snapshot though the batches are gone.
        try await fleet.add(name: "late")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try fleet.stores[3].record(note)?.first { $0.name == "round" }?.value == .scalar(.int(3)))
    }
}

@Suite struct IdleSyncTests {
    /// docs/ARCHITECTURE.md §4: an idle pull costs exactly one listing — it grows neither with history
    /// nor with the number of batches — and an idle push costs nothing.
    @Test func idleSyncCostsExactlyOneListing() async throws {
        let fleet = try await Fleet(count: 3) { FaultyRemote(wrapping: $0, seed: 1) }
        let counter = try #require(fleet.remote as? FaultyRemote)
        for round in 0..<5 {
            for (index, store) in fleet.stores.enumerated() {
                try store.set(RecordRef(collection: "c", id: "\(index)"), "round", .int(Int64(round)))
            }
            try await fleet.syncAll()
        }
        try await fleet.syncAll()  // everyone has advertised what it applied
        counter.resetCounts()
        for engine in fleet.engines {
            let report = try await engine.sync()
            #expect(report.applied == 0 && report.pushed == 0)
        }
        #expect(counter.counts.lists == 3)
        #expect(counter.counts.requests == 3)
    }

    /// A hundred replicas on one remote: an idle sync is still one listing, and a pull of one
    /// new batch among a hundred replicas' heads costs a fixed handful of requests — never
    /// one per replica.
    @Test func aHundredReplicasCostAnIdleSyncOneListingAndANewBatchAHandfulOfRequests() async throws {
        let fleet = try await Fleet(count: 101) { FaultyRemote(wrapping: $0, seed: 1) }
        let counter = try #require(fleet.remote as? FaultyRemote)
        // A hundred writers push one batch each; the observer (the last store) pulls them all.
        for index in 0..<100 {
            try fleet.stores[index].set(RecordRef(collection: "c", id: "\(index)"), "v", .int(Int64(index)))
            try await fleet.engines[index].sync(mode: .pushOnly)
        }
        let observer = fleet.engines[100]
        #expect(try await observer.sync().applied == 100)
        try await observer.sync()  // it has advertised what it applied
        counter.resetCounts()
        let idle = try await observer.sync()
        #expect(idle.applied == 0 && idle.pushed == 0)
        #expect(counter.counts.lists == 1 && counter.counts.requests == 1, "\(counter.counts)")

        // One writer pushes one new batch: the observer lists the heads, reads the writer's
        // new head and that batch, and rewrites its own head to say what it applied.
        try fleet.stores[42].set(RecordRef(collection: "c", id: "42"), "v", .int(4_242))
        try await fleet.engines[42].sync(mode: .pushOnly)
        counter.resetCounts()
        let pull = try await observer.sync()
        #expect(pull.applied == 1)
        #expect(try fleet.stores[100].record(RecordRef(collection: "c", id: "42"))?.first?.value == .scalar(.int(4_242)))
        #expect(counter.counts.lists == 1 && counter.counts.gets == 2 && counter.counts.puts == 1, "\(counter.counts)")
        #expect(counter.counts.requests == 4, "\(counter.counts)")
    }
}
