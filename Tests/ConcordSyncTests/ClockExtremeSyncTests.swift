import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Devices whose clocks read far in the future sync like any other (rules 2 and 7): a
/// device in the year 7000 stamps past 2^63, and one at the last millisecond a stamp can
/// carry reaches the clock's ceiling.
@Suite struct ClockExtremeSyncTests {
    static let year7000: UInt64 = 158_699_548_800_000
    static let ref = RecordRef(collection: "notes", id: "n1")

    /// Replicas with a clock each, syncing through one folder.
    struct Devices {
        let scratch = TemporaryDirectory("clock-sync")
        let remote: FolderRemote
        var stores: [Store] = []
        var engines: [SyncEngine] = []

        init(clocks: [ManualClock]) async throws {
            remote = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
            let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: Fleet.passphrase, limits: .minimum)
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
        // b's later write follows the stamp it pulled, so it wins everywhere.
        #expect(try b.clockValue() >= 1 << 63)
        try b.set(Self.ref, "title", .string("from now"))
        try b.remove(Self.ref, "tags", .string("far"))
        try await devices.syncAll()
        let dumps = Set(try devices.stores.map { try $0.canonicalDump() })
        #expect(dumps.count == 1)
        for index in 0..<3 { #expect(try devices.title(index) == .scalar(.string("from now"))) }
        let tags = try devices.stores[2].record(Self.ref)?.first { $0.name == "tags" }?.value
        #expect(tags == nil || tags == .set([]), "the tag removed after the far add is gone: \(String(describing: tags))")
    }

    @Test func aClockAtTheCeilingRefusesNewWritesWhileEverythingAlreadyWrittenSyncs() async throws {
        let end = ManualClock(millis: HLC.maxPhysical)
        let devices = try await Devices(clocks: [end, ManualClock()])
        let (a, b) = (devices.stores[0], devices.stores[1])
        try b.set(RecordRef(collection: "notes", id: "n0"), "title", .string("before"))
        try await devices.syncAll()
        try a.set(Self.ref, "title", .string("last"))
        #expect(try a.clockValue() == HLC.ceiling)
        let refused = #expect(throws: ConcordError.self, "a write was stamped past the ceiling") {
            try a.set(Self.ref, "title", .string("one too many"))
        }
        #expect(refused?.code == .clockExhausted)
        try await devices.syncAll()
        #expect(try devices.title(1) == .scalar(.string("last")))
        // b followed the ceiling stamp: it refuses too, and loses nothing by refusing.
        #expect(try b.clockValue() == HLC.ceiling)
        let alsoRefused = #expect(throws: ConcordError.self, "a write was stamped past the ceiling") {
            try b.set(Self.ref, "title", .string("refused"))
        }
        #expect(alsoRefused?.code == .clockExhausted)
        #expect(alsoRefused?.message.contains("every change already made still syncs") == true)
        #expect(try b.pendingChangeCount() == 0)
        try await devices.syncAll()
        #expect(Set(try devices.stores.map { try $0.canonicalDump() }).count == 1)
        #expect(try b.record(RecordRef(collection: "notes", id: "n0"))?.first?.value == .scalar(.string("before")))
    }
}
