import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Devices whose clocks read far in the future sync like any other (rules 2 and 7): a
/// device in the year 7000 stamps past 2^63, and one at the last millisecond a stamp can
/// carry stamps at the clock's ceiling. Nobody else's clock follows them further than
/// ``HLC/maxLead``, so nobody else is stopped from writing.
@Suite struct ClockExtremeSyncTests {
    static let year7000: UInt64 = 158_699_548_800_000
    static let ref = RecordRef(collection: "notes", id: "n1")

    /// Replicas with a clock each, syncing through one folder.
    struct Devices {
        let scratch = TemporaryDirectory("clock-sync")
        let remote: FolderRemote
        var stores: [Store] = []
        var engines: [SyncEngine] = []
        let key: StoreKey
        let storeID: StoreID

        init(clocks: [ManualClock]) async throws {
            remote = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
            let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: Fleet.passphrase, limits: .minimum)
            (self.key, self.storeID) = (key, storeID)
            for (index, clock) in clocks.enumerated() {
                let store = try Store(path: scratch.file("device\(index).db"), configuration: .init(clock: clock))
                stores.append(store)
                engines.append(SyncEngine(store: store, remote: remote, key: key, storeID: storeID, clock: clock))
            }
        }

        func syncAll() async throws {
            for _ in 0..<2 { for engine in engines { try await engine.sync() } }
        }

        func title(_ index: Int) throws -> FieldValue? {
            try stores[index].record(ClockExtremeSyncTests.ref)?.first { $0.name == "title" }?.value
        }
    }

    @Test func aDeviceInTheYear7000PushesItsWritesAndOthersFollowItsClock() async throws {
        let future = ManualClock(millis: Self.year7000)
        let devices = try await Devices(clocks: [future, ManualClock(), ManualClock()])
        let (a, b) = (devices.stores[0], devices.stores[1])
        try a.set(Self.ref, "title", .string("from 7000"))
        try a.add(Self.ref, "tags", .string("far"))
        #expect(try a.clockValue() >= 1 << 63)
        // The sync once trapped sealing this outbox ("Negative value is not representable").
        let pushed = try await devices.engines[0].sync()
        #expect(pushed.pushed == 1)
        try await devices.syncAll()
        #expect(try devices.title(1) == .scalar(.string("from 7000")))
        // b observed the far stamp but follows it only a day ahead of its own clock; its
        // later write still replaces what it observed, everywhere.
        #expect(try b.clockValue() >= 1 << 63)
        #expect(try b.versionVector()[b.replicaID] == 0)
        try b.set(Self.ref, "title", .string("from now"))
        try b.remove(Self.ref, "tags", .string("far"))
        try await devices.syncAll()
        let dumps = Set(try devices.stores.map { try $0.canonicalDump() })
        #expect(dumps.count == 1)
        for index in 0..<3 { #expect(try devices.title(index) == .scalar(.string("from now"))) }
        let tags = try devices.stores[2].record(Self.ref)?.first { $0.name == "tags" }?.value
        #expect(tags == nil || tags == .set([]), "the tag removed after the far add is gone: \(String(describing: tags))")
    }

    @Test func aStampAtTheCeilingStopsNobodyElseFromWriting() async throws {
        let end = ManualClock(millis: HLC.maxPhysical)
        let devices = try await Devices(clocks: [end, ManualClock(), ManualClock()])
        let (a, b, c) = (devices.stores[0], devices.stores[1], devices.stores[2])
        try b.set(RecordRef(collection: "notes", id: "n0"), "title", .string("before"))
        try await devices.syncAll()
        try a.set(Self.ref, "title", .string("last"))
        #expect(try a.versionVector()[a.replicaID] == HLC.ceiling)
        // c writes the same field concurrently: the ceiling stamp wins the tie.
        try c.set(Self.ref, "title", .string("concurrent"))
        try await devices.syncAll()
        for index in 0..<3 { #expect(try devices.title(index) == .scalar(.string("last"))) }
        // Everyone observed the ceiling stamp and every one of them goes on writing, its
        // clock no further than a day ahead of its own time.
        #expect(try b.clockValue() >= HLC.ceiling)
        let limit = HLC.value(physical: ManualClock().millisecondsSinceEpoch() + HLC.maxLead)
        for round in 0..<3 {
            try b.set(Self.ref, "title", .string("b \(round)"))
            try c.set(RecordRef(collection: "notes", id: "n\(round + 1)"), "title", .string("c \(round)"))
            try await devices.syncAll()
        }
        #expect(try b.versionVector()[b.replicaID] <= limit + 10)
        #expect(try c.versionVector()[c.replicaID] <= limit + 10)
        // b's later writes replaced the ceiling one everywhere, though their stamps are smaller.
        for index in 0..<3 { #expect(try devices.title(index) == .scalar(.string("b 2"))) }
        // The device at the end of the range writes again too.
        try a.set(Self.ref, "body", .string("from the end"))
        try await devices.syncAll()
        #expect(Set(try devices.stores.map { try $0.canonicalDump() }).count == 1)
        #expect(try c.record(Self.ref)?.first { $0.name == "body" }?.value == .scalar(.string("from the end")))
        #expect(try b.record(RecordRef(collection: "notes", id: "n0"))?.first?.value == .scalar(.string("before")))
    }

    @Test func aDeviceWhoseClockReadsPastTheRangeCountsOnAndStopsNobody() async throws {
        let broken = ManualClock(millis: HLC.maxPhysical + 86_400_000)
        let devices = try await Devices(clocks: [broken, ManualClock()])
        let (a, b) = (devices.stores[0], devices.stores[1])
        for index in 0..<5 { try a.set(Self.ref, "title", .string("a \(index)")) }
        // Its reading is not a time: its stamps count on from its last one.
        #expect(try a.versionVector()[a.replicaID] == 5)
        try await devices.syncAll()
        #expect(try devices.title(1) == .scalar(.string("a 4")))
        try b.set(Self.ref, "title", .string("b"))
        try a.set(Self.ref, "body", .string("a again"))
        try await devices.syncAll()
        #expect(Set(try devices.stores.map { try $0.canonicalDump() }).count == 1)
        #expect(try devices.title(0) == .scalar(.string("b")))
        // a observed b's stamp (2026) and follows it: its reading gives no lead to bound.
        #expect(try a.versionVector()[a.replicaID] == 6)
    }

    /// Stamps at 2^63 and at the end of the range go through the paths that keep metadata
    /// the longest, not only apply and seal: file history (a far version superseded, kept
    /// and restored), the metadata purge (a record deleted with a far stamp, purged once
    /// stable), and identity adoption (a store that followed far stamps, restored from a
    /// backup, continues under a new id). Everyone converges and goes on writing.
    @Test(arguments: [UInt64(1) << 47, HLC.maxPhysical])
    func farStampsGoThroughHistoryPurgeAndIdentityAdoption(farMillis: UInt64) async throws {
        let far = ManualClock(millis: farMillis)
        let (bClock, cClock) = (ManualClock(), ManualClock())
        var devices = try await Devices(clocks: [far, bClock, cClock])
        let (a, b, c) = (devices.stores[0], devices.stores[1], devices.stores[2])
        // History: a far version, superseded by a later one, is kept and restorable.
        let first = try a.write { tx throws(ConcordError) in try tx.attachFile(Self.ref, "doc", bytes: Array("far version".utf8)) }
        try await devices.syncAll()
        try b.write { tx throws(ConcordError) in _ = try tx.attachFile(Self.ref, "doc", bytes: Array("later version".utf8)) }
        try await devices.syncAll()
        #expect(try c.versions(Self.ref, "doc").contains { $0.file.hash == first.hash })
        try c.restore(Self.ref, "doc", hash: first.hash)
        try await devices.syncAll()
        for store in [a, b, c] { #expect(try store.record(Self.ref)?.first { $0.name == "doc" }?.value == .file(first)) }

        // Purge: a record the far device deletes is purged once stable, everywhere.
        let doomed = RecordRef(collection: "notes", id: "doomed")
        try b.set(doomed, "title", .string("short-lived"))
        try await devices.syncAll()
        try a.delete(doomed)
        try await devices.syncAll()
        _ = try await devices.engines[1].compact()
        let delay = Int64(devices.engines[1].purgeDelay) + 60_000
        for clock in [far, bClock, cClock] { clock.advance(by: delay) }
        try await devices.syncAll()
        let report = try await devices.engines[1].compact()
        #expect(report.metadata.purged == [doomed], "\(report.metadata)")
        try await devices.syncAll()
        for store in [a, b, c] { #expect(try store.rawRecord(doomed) == nil) }

        // Identity adoption: c, which followed the far stamps, is restored from a backup.
        let backup = devices.scratch.file("c-backup.db")
        try c.reader.backup(to: try DatabaseQueue(path: backup))
        try c.set(RecordRef(collection: "notes", id: "c1"), "title", .string("before the restore"))
        try await devices.syncAll()
        let restored = try Store(path: backup, configuration: .init(clock: cClock))
        try restored.set(RecordRef(collection: "notes", id: "c2"), "title", .string("after the restore"))
        devices.stores[2] = restored
        devices.engines[2] = SyncEngine(store: restored, remote: devices.remote, key: devices.key, storeID: devices.storeID, clock: cClock)
        let sync = try await devices.engines[2].sync()
        #expect(sync.restoredCopy != nil)
        try await devices.syncAll()
        #expect(Set(try devices.stores.map { try $0.canonicalDump() }).count == 1)
        for id in ["c1", "c2"] { #expect(try a.record(RecordRef(collection: "notes", id: id)) != nil, "\(id) missing") }
        // And everyone goes on writing.
        for store in devices.stores { try store.set(Self.ref, "after", .string("\(store.replicaID)")) }
        try await devices.syncAll()
        #expect(Set(try devices.stores.map { try $0.canonicalDump() }).count == 1)
    }
}
