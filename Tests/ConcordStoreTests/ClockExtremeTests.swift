import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Stamps at the far end of the 64-bit range (rules 2 and 7): SQLite's integers are
/// signed, so a stamp of 2^63 or more (a clock past the year 6429) once compared below every
/// other, and the clock saturated at `UInt64.max`, issuing one value again and again.
@Suite struct ClockExtremeTests {
    static let extremes: [UInt64] = [(1 << 63) - 1, 1 << 63, HLC.ceiling, .max]
    static let now: UInt64 = 1_767_225_600_000
    static let ref = RecordRef(collection: "notes", id: "n1")

    // MARK: Core

    @Test func theClockIssuesEachValueOnceUpToTheCeilingThenRefuses() throws {
        var clock = HybridLogicalClock(latest: HLC.ceiling - 2)
        #expect(try clock.tick(physicalMillis: Self.now) == HLC.ceiling - 1)
        #expect(try clock.tick(physicalMillis: Self.now) == HLC.ceiling)
        for _ in 0..<3 {
            #expect(throws: ConcordError.self) { try clock.tick(physicalMillis: Self.now) }
            #expect(clock.latest == HLC.ceiling)
        }
        let exhausted = #expect(throws: ConcordError.self, "a clock at the ceiling issued a value") {
            _ = try clock.tick(physicalMillis: HLC.maxPhysical)
        }
        #expect(exhausted?.code == .clockExhausted)
        // A physical clock at the end of the range reaches the ceiling, not past it.
        var late = HybridLogicalClock()
        #expect(try late.tick(physicalMillis: .max) == HLC.ceiling)
        #expect(throws: ConcordError.self) { try late.tick(physicalMillis: .max) }
        // Across the sign bit the clock simply follows.
        var follower = HybridLogicalClock()
        follower.observe((1 << 63) - 1)
        #expect(try follower.tick(physicalMillis: Self.now) == 1 << 63)
        #expect(try follower.tick(physicalMillis: Self.now) == (1 << 63) + 1)
        follower.observe(.max)
        #expect(throws: ConcordError.self) { try follower.tick(physicalMillis: Self.now) }
        #expect(follower.latest == .max)
    }

    @Test(arguments: extremes)
    func aCoreReplicaFollowsAFarStampAndNeverReusesADot(stamp: UInt64) throws {
        var replica = Replica(id: ReplicaID(high: 0, low: 1))
        try replica.apply(Self.farDelta(stamp: stamp))
        #expect(replica.clock.latest == stamp)
        if stamp < HLC.ceiling {
            let dot = try replica.set(Self.ref, "title", .string("after"), now: Self.now)
            #expect(dot.hlc == stamp + 1)
            #expect(replica.state.record(Self.ref)?.fields["title"] == .scalar(.string("after")))
        } else {
            let before = replica.state
            #expect(throws: ConcordError.self) { try replica.set(Self.ref, "title", .string("after"), now: Self.now) }
            #expect(replica.state == before)
            #expect(replica.seal() == nil)
        }
    }

    // MARK: Store

    /// A store and the core reference apply the same deltas — a far-future writer's, then
    /// one from a replica that never saw it — and write after them: states, dumps and sealed
    /// bytes stay equal, the far entry survives, and the clock follows it.
    @Test(arguments: extremes)
    func aStoreOrdersStampsAcrossTheSignBitLikeTheCore(stamp: UInt64) throws {
        let directory = TemporaryDirectory("clock-extremes")
        let store = try Store.temporary(directory, "a", clock: ManualClock(millis: Self.now))
        var core = Replica(id: store.replicaID)
        var unseen = Replica(id: ReplicaID(high: 0, low: 2))
        try unseen.set(Self.ref, "title", .string("unseen"), now: Self.now)
        try unseen.add(Self.ref, "tags", .string("unseen"), now: Self.now + 1)
        guard let unseenDelta = unseen.seal() else { Issue.record("nothing sealed"); return }

        for delta in [try Self.farDelta(stamp: stamp), unseenDelta] {
            try core.apply(delta)
            try store.apply(delta)
            #expect(try store.state() == core.state)
        }
        // The far entry wins the register and the far dot keeps the record alive.
        #expect(try store.record(Self.ref)?.first { $0.name == "title" }?.value == .scalar(.string("far")))
        #expect(try store.clockValue() == stamp)
        #expect(try store.versionVector()[Self.farReplica] == stamp)

        if stamp < HLC.ceiling {
            let dot = try core.set(Self.ref, "title", .string("after"), now: Self.now)
            try store.set(Self.ref, "title", .string("after"))
            #expect(dot.hlc == stamp + 1)
            #expect(try store.clockValue() == stamp + 1)
            #expect(try store.record(Self.ref)?.first { $0.name == "title" }?.value == .scalar(.string("after")))
        } else {
            #expect(throws: ConcordError.self) { try core.set(Self.ref, "title", .string("after"), now: Self.now) }
            let refused = #expect(throws: ConcordError.self, "the store stamped a write past the ceiling") {
                try store.set(Self.ref, "title", .string("after"))
            }
            #expect(refused?.code == .clockExhausted)
            #expect(try store.clockValue() == stamp)
        }
        #expect(try store.state() == core.state)
        #expect(try store.canonicalDump() == CanonicalDump.json(of: core.state))
        // Sealing in bounded batches orders the outbox by stamp; it once trapped here.
        let sealed = try store.seal(maxSlots: 1)
        #expect(sealed.map { DeltaCodec.encode($0) } == core.seal().map { DeltaCodec.encode($0) })
        #expect(try store.pendingChangeCount() == 0)
    }

    /// A store written by the previous release keeps stamps as plain bit patterns; opening
    /// it migrates every column, stamps past 2^63 included, and changes nothing visible.
    @Test func aVersionOneStoreIsMigratedWithItsStampsInOrder() throws {
        let directory = TemporaryDirectory("clock-migration")
        let path = directory.file("old.db")
        let far = (UInt64(1) << 63) + 5
        var expected: StoreState
        var dump: String
        var pending: Int
        do {
            let store = try Store(path: path, configuration: .init(clock: ManualClock(millis: Self.now)))
            try store.apply(try Self.farDelta(stamp: far))
            try store.set(Self.ref, "title", .string("mine"))
            try store.add(RecordRef(collection: "notes", id: "n2"), "tags", .int(1))
            expected = try store.state()
            dump = try store.canonicalDump()
            pending = try store.pendingChangeCount()
            #expect(pending >= 2)
        }
        try Self.downgradeToVersionOne(path)
        let reopened = try Store(path: path, configuration: .init(clock: ManualClock(millis: Self.now)))
        #expect(try reopened.state() == expected)
        #expect(try reopened.canonicalDump() == dump)
        #expect(try reopened.pendingChangeCount() == pending)
        #expect(try reopened.clockValue() == far + 2)
        // Bounded batches in write order: the first write, then the second.
        #expect(try reopened.seal(maxSlots: 1)?.upTo == far + 1)
        #expect(try reopened.seal(maxSlots: 1)?.upTo == far + 2)
        #expect(try reopened.pendingChangeCount() == 0)
    }

    // MARK: Helpers

    static let farReplica = ReplicaID(high: 0, low: 3)

    /// A first delta from a replica whose clock reads `stamp`: it creates `ref` with a title
    /// and a tag, every entry stamped `stamp`.
    static func farDelta(stamp: UInt64) throws -> Delta {
        let dot = Stamp(hlc: stamp, replica: farReplica)
        return try Delta(origin: farReplica, seq: 1, dependencies: VersionVector(), upTo: stamp, records: [
            Delta.RecordChange(ref: ref, slots: [
                (key: .liveness, entries: [Entry(dot: dot, payload: .marker)]),
                (key: .field("title"), entries: [Entry(dot: dot, payload: .scalar(.string("far")))]),
                (key: .element("tags", .string("far")), entries: [Entry(dot: dot, payload: .marker)]),
            ]),
        ])
    }

    /// Rewrites a store file as the first release wrote it: stamps as plain bit patterns,
    /// 0 for a clean field, the index of dirty fields, no `low` in the outbox, and no record
    /// of migrations "v2" to "v4".
    static func downgradeToVersionOne(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.write { db in try downgradeOutboxToVersionThree(db) }
        func plain(_ column: String) -> String {
            "(CASE WHEN \(column) >= 0 THEN \(column) - 9223372036854775807 - 1 ELSE \(column) + 9223372036854775807 + 1 END)"
        }
        try queue.write { db in
            for table in ["concord_fields", "concord_field_versions", "concord_elements", "concord_dots", "concord_context", "concord_outbox", "concord_history"] {
                try db.execute(sql: "UPDATE \(table) SET hlc = \(plain("hlc"))")
            }
            try db.execute(sql: """
                UPDATE concord_fields SET dirty = \(plain("dirty"));
                DROP INDEX IF EXISTS concord_fields_dirty;
                CREATE INDEX concord_fields_dirty ON concord_fields (dirty) WHERE dirty > 0;
                DELETE FROM grdb_migrations WHERE identifier IN ('v2', 'v3');
                """)
        }
        #expect(try queue.read { db in try Int64.fetchOne(db, sql: "SELECT count(*) FROM concord_fields WHERE hlc < 0") } == 1)
    }
}
