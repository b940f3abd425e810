import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Two copies of one replica id that wrote different batches under one name: a device and
/// its remote restored from backups taken at the same moment, so that nothing the restored
/// device can see shows that its next batch name was used. The sync cannot merge the two
/// histories (a name is applied once), so it must name the fork — on the replicas that
/// applied the lost copy's batch, on the restored device, and in `doctor` — and never apply
/// one history over the other.
@Suite struct HistoryForkTests {
    static func ref(_ id: String) -> RecordRef { RecordRef(collection: "notes", id: id) }

    /// a writes n1 and syncs; its store and the remote are backed up at that moment; a
    /// writes n2 and syncs, and b pulls it; then a's device and the remote both go back to
    /// the backups, and the restored a writes `restoredWrites`, each pushed as a batch of
    /// its own — under the names a's lost store used. `lossCheckInterval` is b's. Unless
    /// `timePasses` is false, a second passes between the backup, the lost write and the
    /// restore; without it the two copies stamp their writes alike (a frozen clock), and
    /// only the batches' contents tell them apart.
    func forkedFleet(restoredWrites: [String], lossCheckInterval: UInt64 = 3_600_000, timePasses: Bool = true) async throws -> (fleet: Fleet, b: SyncEngine, restoredStore: Store, restored: SyncEngine) {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(Self.ref("n1"), "title", .string("one"))
        try await fleet.syncAll()
        let copy = fleet.scratch.file("a-restored.db")
        try a.reader.backup(to: try DatabaseQueue(path: copy))
        var backup: [String: [UInt8]] = [:]
        for object in try await fleet.remote.list(prefix: "") { backup[object.path] = try await fleet.remote.get(object.path) }
        if timePasses { fleet.clock.advance(by: 1_000) }
        try a.set(Self.ref("n2"), "title", .string("two, written before the restore"))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        #expect(try b.record(Self.ref("n2")) != nil)
        // The remote goes back to its backup.
        for object in try await fleet.remote.list(prefix: "") where backup[object.path] == nil { try await fleet.remote.delete(object.path) }
        for (path, bytes) in backup { try await fleet.remote.put(path, bytes) }
        if timePasses { fleet.clock.advance(by: 1_000) }
        let restoredStore = try Store(path: copy, configuration: .init(clock: fleet.clock))
        // Restored in place — the backup's bytes written back into the store's own file, which
        // keeps its identity — so the file does not tell either (a restore as a new file
        // continues under a new id at once: `Store.fileReplacement()`).
        try restoredStore.recordFileIdentity()
        let restored = SyncEngine(store: restoredStore, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock)
        for id in restoredWrites {
            try restoredStore.set(Self.ref(id), "title", .string("\(id), written after the restore"))
            let report = try await restored.sync(mode: .pushOnly)
            #expect(report.pushed == 1 && report.restoredCopy == nil, "nothing tells the restored copy: \(report)")
        }
        let engineB = SyncEngine(store: b, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock, lossCheckInterval: lossCheckInterval)
        return (fleet, engineB, restoredStore, restored)
    }

    /// The restored copy pushed two batches; b applied the lost copy's batch 2, so the
    /// copy's batch 3 follows a batch b never applied: b names the fork at batch 2 and
    /// applies neither of the copy's batches — it keeps n2, and n3 and n4 do not slip in
    /// over it.
    @Test func aNextBatchThatFollowsAnotherHistoryIsNamedNotApplied() async throws {
        let (fleet, b, _, _) = try await forkedFleet(restoredWrites: ["n3", "n4"])
        let a = fleet.stores[0].replicaID
        let report = try await b.sync()
        let fork = try #require(report.forks.first, "\(report)")
        #expect(report.forks.count == 1)
        #expect(fork.replica == a)
        #expect(fork.batch == RemoteLayout.batch(a, seq: 2))
        #expect(fork.evidence.contains(RemoteLayout.batch(a, seq: 3)), "\(fork.evidence)")
        let store = fleet.stores[1]
        #expect(try store.record(Self.ref("n2")) != nil)
        #expect(try store.record(Self.ref("n3")) == nil)
        #expect(try store.record(Self.ref("n4")) == nil)
        #expect(try store.appliedSeqs()[a] == 2)
    }

    /// The restored copy pushed one batch, under the name b applied the lost copy's batch
    /// from: b's periodic listing sees it at another size, reads it, and names the fork;
    /// `doctor` on b names it too (a problem) — also when both copies stamped alike.
    @Test(arguments: [true, false])
    func theLossCheckAndDoctorNameABatchWithOtherContentsUnderAnAppliedName(timePasses: Bool) async throws {
        let (fleet, b, _, _) = try await forkedFleet(restoredWrites: ["n3"], lossCheckInterval: 0, timePasses: timePasses)
        let a = fleet.stores[0].replicaID
        let report = try await b.sync()
        #expect(report.lossChecked)
        #expect(report.forks.map(\.batch) == [RemoteLayout.batch(a, seq: 2)], "\(report)")
        #expect(report.forks.first?.evidence.contains("holds another batch") == true)
        let doctor = try await b.doctor()
        let finding = try #require(doctor.findings.first { $0.kind == .forkedHistory }, "\(doctor.findings)")
        #expect(finding.path == RemoteLayout.batch(a, seq: 2))
        #expect(finding.replica == a)
        #expect(!doctor.isHealthy)
    }

    /// Once b writes and pushes a batch that depends on the lost copy's batch, the restored
    /// copy finds out it is an older copy, continues under a new id — and, since it pushed
    /// under a name the lost copy had used, names the fork instead of calling nothing lost.
    @Test func theRestoredCopyNamesTheNamesItReused() async throws {
        let (fleet, b, restoredStore, restored) = try await forkedFleet(restoredWrites: ["n3"])
        let a = fleet.stores[0].replicaID
        try fleet.stores[1].set(Self.ref("m1"), "title", .string("written by b after it applied n2"))
        _ = try await b.sync()
        let report = try await restored.sync()
        #expect(report.restoredCopy?.old == a, "\(report)")
        #expect(restoredStore.replicaID != a)
        let fork = try #require(report.forks.first { $0.replica == a }, "\(report)")
        #expect(fork.batch == RemoteLayout.batch(a, seq: 2))
        #expect(fork.evidence.contains("pushed its own batches 2…2"), "\(fork.evidence)")
    }

    /// Without a fork, nothing is named: a fleet that syncs, compacts and checks every
    /// listing reports no fork, and doctor finds none.
    @Test func aFleetWithoutAForkNamesNone() async throws {
        let fleet = try await Fleet(count: 3)
        let engines = fleet.stores.map {
            SyncEngine(store: $0, remote: fleet.remote, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock, snapshotEvery: 2, lossCheckInterval: 0)
        }
        for round in 0..<6 {
            for (index, store) in fleet.stores.enumerated() {
                try store.set(Self.ref("r\(round)-\(index)"), "title", .string(String(repeating: "x", count: round + index)))
                let report = try await engines[index].sync()
                #expect(report.forks.isEmpty, "\(report.forks)")
            }
        }
        _ = try await engines[0].compact()
        for engine in engines {
            let report = try await engine.sync()
            #expect(report.forks.isEmpty, "\(report.forks)")
            #expect(try await engine.doctor().findings.allSatisfy { $0.kind != .forkedHistory })
        }
        #expect(Set(try fleet.stores.map { try $0.canonicalDump() }).count == 1)
    }
}
