import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// `SyncEngine.doctor(repair:)` against every fault ``FaultyRemote`` can inject: each test
/// injects one fault into one push of replica a (its file, batch or head), checks what
/// doctor reports from an observer (b) and from the writer (a), repairs from a, then checks
/// that every replica converges and that doctor finds nothing more.
@Suite struct DoctorTests {
    // MARK: One test per fault

    @Test func failedHeadPutLeavesAnUnannouncedBatch() async throws {
        let scenario = try await FaultedPush(seed: 1)
        try await scenario.push(faulting: .head, with: .plan(.init(failure: 1)))
        try await scenario.check(observer: [scenario.unannounced], writer: [scenario.unannounced])
    }

    /// A planted object at an own batch name whose seq does not fit a store's seq (2^63 and
    /// past): `doctor --repair` reports and goes on (it once trapped, reading the store's
    /// sealed batch of that seq), and the store applies no such seq.
    @Test func aPlantedOwnBatchNamePastTheLargestSeqDoesNotTrapDoctorRepair() async throws {
        let fleet = try await Fleet(count: 1)
        try fleet.stores[0].set(RecordRef(collection: "notes", id: "n"), "title", .string("kept"))
        try await fleet.syncAll()
        #expect(try fleet.stores[0].sealedBatch(seq: 1 << 63) == nil)
        #expect(try fleet.stores[0].sealedBatch(seq: .max) == nil)
        for seq: UInt64 in [1 << 63, .max - 1] {
            try await fleet.remote.put(RemoteLayout.batch(fleet.stores[0].replicaID, seq: seq), Array("junk".utf8))
        }
        let report = try await fleet.engines[0].doctor(repair: true)
        #expect(report.findings.contains { $0.path.hasSuffix("8000000000000000") }, "\(report.findings)")
        try await fleet.engines[0].sync()
        #expect(try fleet.stores[0].record(RecordRef(collection: "notes", id: "n")) != nil)
    }

    /// Objects planted beyond anything their replica announced — a batch of this replica
    /// past what it sealed, a head of it at ffffffffffffffff, a first head of a replica
    /// nobody saw — are named `planted` with the file to remove, and `--repair` claims to
    /// repair none of them, on the first run or the second (it once "published the batch
    /// again in a snapshot" on every run, and called all three damaged).
    @Test func plantedNamesAreNamedPlantedAndRepairClaimsNoneOfThemOnAnyRun() async throws {
        let fleet = try await Fleet(count: 2)
        let a = fleet.stores[0]
        try a.set(RecordRef(collection: "notes", id: "n"), "title", .string("kept"))
        try await fleet.syncAll()
        let stranger = try #require(ReplicaID(hex: "0123456789abcdef0123456789abcdef"))
        let planted = [RemoteLayout.batch(a.replicaID, seq: 7), RemoteLayout.head(a.replicaID, seq: .max), RemoteLayout.head(stranger, seq: 0)]
        for path in planted { try await fleet.remote.put(path, Array("junk".utf8)) }
        for run in 1...2 {
            let report = try await fleet.engines[0].doctor(repair: true)
            let found = report.findings.filter { planted.contains($0.path) }
            #expect(found.map(\.path).sorted() == planted.sorted(), "run \(run): \(report.findings)")
            for finding in found {
                #expect(finding.kind == .planted, "run \(run): \(finding)")
                #expect(!finding.repaired && finding.repair == nil, "run \(run): \(finding)")
                #expect(finding.action.contains("remove \(finding.path)"), "run \(run): \(finding)")
            }
            #expect(Set(report.problems.map(\.path)) == Set(planted), "run \(run): \(report.problems)")
        }
        // Removed by hand, nothing is left to report.
        for path in planted { try await fleet.remote.delete(path) }
        #expect(try await fleet.engines[0].doctor().isHealthy)
    }

    @Test func slowCallsLeaveTheRemoteHealthy() async throws {
        let scenario = try await FaultedPush(seed: 2)
        scenario.faulty.plan = .init(slow: 1)
        try await scenario.fleet.engines[0].sync()
        // Doctor itself runs with every call slow.
        try await scenario.check(observer: [], writer: [])
        scenario.faulty.faultsOff()
    }

    @Test(arguments: PushStep.allCases)
    func lostPut(at step: PushStep) async throws {
        let scenario = try await FaultedPush(seed: 3)
        try await scenario.push(faulting: step, with: .plan(.init(lostPut: 1)))
        switch step {
        case .file:
            // The push went on: the batch references a file the remote never got.
            try await scenario.check(observer: [scenario.missingFile], writer: [scenario.missingFile])
        case .batch:
            // The head announces a batch that is not there; the observer cannot tell what
            // references the file, the writer can (its own sealed batch).
            try await scenario.check(observer: [scenario.missingBatch, scenario.orphan], writer: [scenario.missingBatch])
        case .head:
            // The push then deleted the older head: a has batches and no head at all.
            try await scenario.check(observer: [scenario.missingHead], writer: [scenario.missingHead])
        }
    }

    @Test(arguments: PushStep.allCases, [false, true])
    func tornPut(at step: PushStep, reportsSuccess: Bool) async throws {
        let scenario = try await FaultedPush(seed: 4)
        try await scenario.push(faulting: step, with: .plan(.init(tornPut: 1, tornPutReportsSuccess: reportsSuccess)))
        switch (step, reportsSuccess) {
        case (.file, _):
            try await scenario.check(observer: [scenario.damagedFile], writer: [scenario.damagedFile])
        case (.batch, _):
            try await scenario.check(observer: [scenario.damagedBatch, scenario.orphan], writer: [scenario.damagedBatch])
        case (.head, false):
            // The push stopped: the older head is still there, and a torn head claims
            // nothing, so batch 2 is not announced yet.
            try await scenario.check(observer: [scenario.damagedHead, scenario.unannounced], writer: [scenario.damagedHead, scenario.unannounced])
        case (.head, true):
            // The older head was deleted too: a has batches but no readable head.
            try await scenario.check(observer: [scenario.damagedHead, scenario.missingHead], writer: [scenario.damagedHead, scenario.missingHead])
        }
    }

    @Test(arguments: PushStep.allCases)
    func lostAcknowledgement(at step: PushStep) async throws {
        let scenario = try await FaultedPush(seed: 5)
        try await scenario.push(faulting: step, with: .plan(.init(lostAcknowledgement: 1)))
        // Lost replies change nothing doctor reads: it runs with every reply lost.
        scenario.faulty.plan = .init(lostAcknowledgement: 1)
        let observed = try await scenario.fleet.engines[1].doctor()
        scenario.faulty.faultsOff()
        switch step {
        case .file:
            // Only the file landed: no batch references it yet (a notice, not a problem).
            #expect(FaultedPush.keys(observed) == [scenario.orphan])
            #expect(observed.isHealthy)
            try await scenario.check(observer: [scenario.orphan], writer: [])
        case .batch:
            #expect(FaultedPush.keys(observed) == [scenario.unannounced])
            try await scenario.check(observer: [scenario.unannounced], writer: [scenario.unannounced])
        case .head:
            // The new head landed, but the push stopped before deleting the older one.
            #expect(FaultedPush.keys(observed) == [scenario.staleHead])
            try await scenario.check(observer: [scenario.staleHead], writer: [scenario.staleHead])
        }
    }

    @Test func lostDeleteLeavesAStaleHead() async throws {
        let scenario = try await FaultedPush(seed: 6)
        try await scenario.push(faultingCall: .headDelete, with: .plan(.init(lostDelete: 1)))
        try await scenario.check(observer: [scenario.staleHead], writer: [scenario.staleHead])
    }

    /// A push killed after its new head landed and before the older one was deleted: the
    /// writer's next sync deletes it even with nothing to push, so the remote is tidy again
    /// without `doctor --repair`.
    @Test func aStaleHeadIsDeletedByTheWritersNextSyncWithNothingToPush() async throws {
        let scenario = try await FaultedPush(seed: 12)
        try await scenario.push(faultingCall: .headDelete, with: .plan(.init(lostDelete: 1)))
        #expect(FaultedPush.keys(try await scenario.fleet.engines[1].doctor()) == [scenario.staleHead])
        let report = try await scenario.fleet.engines[0].sync()
        #expect(report.pushed == 0)
        for engine in scenario.fleet.engines {
            let found = try await engine.doctor()
            #expect(found.findings.isEmpty, "\(found.findings)")
        }
    }

    @Test func staleListingsReportNothingFalse() async throws {
        try await Self.listingFault(.init(staleListing: 1), seed: 7)
    }

    @Test func incompleteListingsReportNothingFalse() async throws {
        try await Self.listingFault(.init(incompleteListing: 1), seed: 8)
    }

    @Test func duplicatedListingsReportNothingFalse() async throws {
        try await Self.listingFault(.init(duplicatedListing: 1), seed: 9)
    }

    @Test func reorderedListingsReportNothingFalse() async throws {
        try await Self.listingFault(.init(reorderedListing: 1), seed: 10)
    }

    @Test(arguments: PushStep.allCases, [FaultyRemote.CrashEffect.dropped, .applied, .torn])
    func crash(at step: PushStep, leaving effect: FaultyRemote.CrashEffect) async throws {
        let s = try await FaultedPush(seed: 11)
        try await s.push(faulting: step, with: .crash(effect))
        switch (step, effect) {
        case (.file, .dropped):
            try await s.check(observer: [], writer: [])  // nothing reached the remote
        case (.file, .applied), (.batch, .dropped):
            try await s.check(observer: [s.orphan], writer: [])
        case (.file, _):
            try await s.check(observer: [s.damagedFile], writer: [s.damagedFile])
        case (.batch, .applied), (.head, .dropped):
            try await s.check(observer: [s.unannounced], writer: [s.unannounced])
        case (.batch, _):
            try await s.check(observer: [s.damagedBatch, s.orphan], writer: [s.damagedBatch])
        case (.head, .applied):
            try await s.check(observer: [s.staleHead], writer: [s.staleHead])
        case (.head, _):
            try await s.check(observer: [s.damagedHead, s.unannounced], writer: [s.damagedHead, s.unannounced])
        }
    }

    // MARK: Findings without faults

    @Test func gapCoveredBySnapshotIsNotReportedButAnUncoveredOneIs() async throws {
        var fleet = try await Fleet(count: 3)
        let a = fleet.stores[0]
        for round in 1...3 {
            try a.set(RecordRef(collection: "notes", id: "n"), "round", .int(Int64(round)))
            try await fleet.syncAll()
        }
        let compaction = try await fleet.engines[0].compact()
        #expect(compaction.deletedBatches == [1, 2, 3])
        for engine in fleet.engines {
            let report = try await engine.doctor()
            #expect(report.findings.isEmpty, "\(report.findings)")
            #expect(report.objects.snapshots == 1 && report.objects.batches == 0)
        }
        // Without the snapshot, the same gap is three missing batches; a re-uploads them.
        let snapshot = try #require(compaction.snapshot)
        try await fleet.remote.delete(snapshot)
        let missing = (1...3).map { FaultedPush.key(.missingBatch, RemoteLayout.batch(a.replicaID, seq: $0)) }
        // b applied them: it calls it what it is, the remote going back in time, which it
        // could mend itself with a snapshot.
        let rolledBack = FaultedPush.key(.remoteRolledBack, RemoteLayout.head(a.replicaID, seq: 3))
        #expect(FaultedPush.keys(try await fleet.engines[1].doctor()) == Set(missing + [rolledBack]))
        let repaired = try await fleet.engines[0].doctor(repair: true)
        #expect(repaired.isHealthy && repaired.findings.allSatisfy(\.repaired))
        try await fleet.add(name: "late")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try await fleet.engines[3].doctor().findings.isEmpty)
    }

    @Test func orphanFileIsReported() async throws {
        let fleet = try await Fleet(count: 2)
        let note = RecordRef(collection: "notes", id: "n")
        let old = try fleet.stores[0].attachFile(note, "cover", bytes: Array("first cover".utf8))
        try await fleet.syncAll()
        try fleet.stores[0].attachFile(note, "cover", bytes: Array("second cover".utf8))
        try await fleet.syncAll()
        // Compaction deletes the batch that referenced the first cover; the snapshot holds
        // only the second.
        #expect(try await fleet.engines[0].compact().deletedBatches == [1, 2])
        let path = BlobName.remotePath(for: old.hash, key: fleet.key.subkey(for: .blobNames))
        for engine in fleet.engines {
            let report = try await engine.doctor()
            #expect(FaultedPush.keys(report) == [FaultedPush.key(.orphanFile, path)])
            #expect(report.isHealthy)  // a notice, not a problem
            #expect(report.findings.first?.action.contains("grace period") == true)
        }
        // Nothing to repair.
        let repaired = try await fleet.engines[0].doctor(repair: true)
        #expect(repaired.findings.allSatisfy { !$0.repaired && $0.repair == nil })
    }

    @Test func staleReplicaIsReported() async throws {
        let fleet = try await Fleet(count: 3)
        for (index, store) in fleet.stores.enumerated() { try store.set(RecordRef(collection: "c", id: "\(index)"), "v", .int(1)) }
        try await fleet.syncAll()
        // c goes quiet for longer than the retention period; a and b keep syncing.
        fleet.clock.advance(by: Int64(fleet.engines[0].retention + SyncEngine.day))
        try fleet.stores[0].set(RecordRef(collection: "c", id: "0"), "v", .int(2))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        let c = fleet.stores[2].replicaID
        let report = try await fleet.engines[0].doctor()
        #expect(FaultedPush.keys(report) == [FaultedPush.key(.staleReplica, RemoteLayout.head(c, seq: 1))])
        #expect(report.findings.first?.replica == c)
        #expect(report.isHealthy)
        // c itself can refresh its head.
        let repaired = try await fleet.engines[2].doctor(repair: true)
        #expect(repaired.findings.map(\.repaired) == [true])
        #expect(try await fleet.engines[0].doctor().findings.isEmpty)
    }

    @Test func clockSkewIsReported() async throws {
        let fleet = try await Fleet(count: 2)
        let fast = ManualClock(millis: fleet.clock.millisecondsSinceEpoch() + 10 * 60_000)
        let store = try Store(path: fleet.scratch.file("fast.db"), configuration: .init(clock: fast))
        try store.setName("fast")
        let engine = SyncEngine(store: store, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fast)
        try store.set(RecordRef(collection: "c", id: "fast"), "v", .int(1))
        try await engine.sync()
        let expected: Set<String> = [FaultedPush.key(.clockSkew, RemoteLayout.head(store.replicaID, seq: 1))]
        // b has not applied anything from it: the head's sync time is in the future.
        let fromHead = try await fleet.engines[1].doctor()
        #expect(FaultedPush.keys(fromHead) == expected)
        // a applied its batch and recorded the skew.
        try await fleet.engines[0].sync()
        #expect(try await fleet.engines[0].clockSkews().map(\.replica) == [store.replicaID])
        let report = try await fleet.engines[0].doctor()
        #expect(FaultedPush.keys(report) == expected)
        #expect(report.findings.first?.replica == store.replicaID && report.isHealthy)
    }

    @Test func emptiedRemoteIsReportedAndEachReplicaRefillsIt() async throws {
        var fleet = try await Fleet(count: 2)
        for (index, store) in fleet.stores.enumerated() {
            try store.attachFile(RecordRef(collection: "c", id: "\(index)"), "file", bytes: Array("file \(index)".utf8))
        }
        try await fleet.syncAll()
        for object in try await fleet.remote.list(prefix: "") where object.path != RemoteLayout.manifestPath {
            try await fleet.remote.delete(object.path)
        }
        let (a, b) = (fleet.stores[0].replicaID, fleet.stores[1].replicaID)
        let expected: Set<String> = [
            FaultedPush.key(.remoteEmptied, ""),
            FaultedPush.key(.missingBatch, RemoteLayout.batch(a, seq: 1)), FaultedPush.key(.missingHead, RemoteLayout.head(a, seq: 1)),
            FaultedPush.key(.missingBatch, RemoteLayout.batch(b, seq: 1)), FaultedPush.key(.missingHead, RemoteLayout.head(b, seq: 1)),
        ]
        #expect(FaultedPush.keys(try await fleet.engines[0].doctor()) == expected)
        let first = try await fleet.engines[0].doctor(repair: true)
        #expect(Set(first.findings.filter(\.repaired).map(\.path)) == ["", RemoteLayout.batch(a, seq: 1), RemoteLayout.head(a, seq: 1)])
        #expect(!first.isHealthy)  // b's objects are still missing: only b has them
        let second = try await fleet.engines[1].doctor(repair: true)
        #expect(second.isHealthy)
        try await fleet.add(name: "late")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        for engine in fleet.engines { #expect(try await engine.doctor().findings.isEmpty) }
    }

    // MARK: Support

    /// A listing fault during a push and during doctor: doctor may miss a real finding
    /// (an object no listing shows), never report a false one; the only real one a listing
    /// fault can cause is a stale head (a push that did not see its older head to delete).
    static func listingFault(_ plan: FaultyRemote.Plan, seed: UInt64) async throws {
        let scenario = try await FaultedPush(seed: seed)
        let fleet = scenario.fleet
        try await fleet.syncAll()
        // Compacted: a's first batches are gone, covered by its snapshot.
        #expect(try await fleet.engines[0].compact().deletedBatches == [1, 2])
        try fleet.stores[0].set(RecordRef(collection: "notes", id: "later"), "v", .int(1))
        scenario.faulty.plan = plan
        try await fleet.engines[0].sync()
        var faulty: [DoctorReport] = []
        for engine in fleet.engines { faulty.append(try await engine.doctor()) }
        scenario.faulty.faultsOff()
        var truth: [DoctorReport] = []
        for engine in fleet.engines { truth.append(try await engine.doctor()) }
        let staleHead = FaultedPush.key(.staleHead, RemoteLayout.head(scenario.a, seq: 2))
        for (seen, real) in zip(faulty, truth) {
            #expect(FaultedPush.keys(seen).isSubset(of: FaultedPush.keys(real)), "\(seen.findings)")
            #expect(FaultedPush.keys(real).isSubset(of: [staleHead]), "\(real.findings)")
        }
        let repaired = try await fleet.engines[0].doctor(repair: true)
        #expect(repaired.isHealthy && repaired.findings.allSatisfy(\.repaired))
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        // A healthy remote, faulty listings: nothing to report.
        scenario.faulty.plan = plan
        for engine in fleet.engines {
            let report = try await engine.doctor()
            #expect(report.findings.isEmpty, "\(report.findings)")
        }
        scenario.faulty.faultsOff()
    }
}
