import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Stamps at the far end of the 64-bit range (rules 2 and 7): SQLite's integers are
/// signed, so a stamp of 2^63 or more (a clock past the year 6429) once compared below every
/// other; and a clock once followed any remote stamp to the end of its range, where it
/// refused every write — so one forged or broken stamp stopped the whole fleet. A clock now
/// follows remote stamps only up to ``HLC/maxLead`` ahead of its physical time.
@Suite struct ClockExtremeTests {
    static let extremes: [UInt64] = [(1 << 63) - 1, 1 << 63, HLC.ceiling, .max]
    static let now: UInt64 = 1_767_225_600_000
    static let ref = RecordRef(collection: "notes", id: "n1")
    /// The greatest value a clock at `now` follows to.
    static let limit = HLC.value(physical: now + HLC.maxLead)

    // MARK: Core

    @Test func theClockFollowsRemoteStampsOnlyWithinItsLeadAndNeverStops() throws {
        // Within the lead it follows: the next value exceeds the remote one (rule 2).
        var near = HybridLogicalClock()
        near.observe(HLC.value(physical: Self.now + 5_000, counter: 7))
        #expect(try near.tick(physicalMillis: Self.now) == HLC.value(physical: Self.now + 5_000, counter: 8))
        // Past the lead it follows only to the lead, whatever the stamp, and goes on ticking.
        for far in Self.extremes {
            var clock = HybridLogicalClock(latest: HLC.value(physical: Self.now - 10))
            clock.observe(far)
            #expect(clock.observed == far)
            #expect(try clock.tick(physicalMillis: Self.now) == Self.limit + 1)
            #expect(try clock.tick(physicalMillis: Self.now) == Self.limit + 2)
            for _ in 0..<70_000 { _ = try clock.tick(physicalMillis: Self.now) }
            #expect(clock.latest == Self.limit + 70_002, "the counter carries on within the range")
            #expect(clock.latest < HLC.ceiling)
        }
        // A physical reading past the end of the range is not a time: the clock counts on.
        var broken = HybridLogicalClock(latest: HLC.value(physical: Self.now))
        #expect(try broken.tick(physicalMillis: .max) == HLC.value(physical: Self.now) + 1)
        #expect(try broken.tick(physicalMillis: HLC.maxPhysical + 1) == HLC.value(physical: Self.now) + 2)
        var fresh = HybridLogicalClock()
        #expect(try fresh.tick(physicalMillis: .max) == 1)
        // Across the sign bit a clock's own values simply go on.
        var own = HybridLogicalClock(latest: (1 << 63) - 1)
        #expect(try own.tick(physicalMillis: Self.now) == 1 << 63)
        #expect(try own.tick(physicalMillis: Self.now) == (1 << 63) + 1)
        // Only a clock that itself issued the last value refuses (an older release's store).
        var last = HybridLogicalClock(latest: .max - 1)
        #expect(try last.tick(physicalMillis: Self.now) == .max)
        let exhausted = #expect(throws: ConcordError.self, "a value was issued twice") {
            _ = try last.tick(physicalMillis: Self.now)
        }
        #expect(exhausted?.code == .clockExhausted)
        #expect(last.latest == .max)
        #expect(HybridLogicalClock.isBeyondLead(Self.limit + (1 << 16), physicalMillis: Self.now))
        #expect(!HybridLogicalClock.isBeyondLead(Self.limit, physicalMillis: Self.now))
    }

    @Test(arguments: extremes)
    func aCoreReplicaFollowsAFarStampOnlyToItsLeadAndItsLaterWriteWins(stamp: UInt64) throws {
        var replica = Replica(id: ReplicaID(high: 0, low: 1))
        try replica.apply(Self.farDelta(stamp: stamp))
        #expect(replica.clock.observed == stamp)
        let dot = try replica.set(Self.ref, "title", .string("after"), now: Self.now)
        #expect(dot.hlc == Self.limit + 1)
        // The later write replaces the far one it observed, though its stamp is smaller.
        #expect(replica.state.record(Self.ref)?.fields["title"] == .scalar(.string("after")))
        try replica.remove(Self.ref, "tags", .string("far"), now: Self.now)
        #expect(replica.state.record(Self.ref)?.fields["tags"] == nil)
        // A replica that never saw either gets the same state from the deltas.
        var other = Replica(id: ReplicaID(high: 0, low: 2))
        try other.apply(Self.farDelta(stamp: stamp))
        let sealed = replica.seal()
        try other.apply(#require(sealed))
        #expect(other.state == replica.state)
    }

    // MARK: Store

    /// A store and the core reference apply the same deltas — a far-future writer's, then
    /// one from a replica that never saw it — and write after them: states, dumps and sealed
    /// bytes stay equal, the far entry survives until the later write replaces it, and the
    /// clock follows it only to its lead.
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
        // The far entry wins the register over the concurrent one and keeps the record alive.
        #expect(try store.record(Self.ref)?.first { $0.name == "title" }?.value == .scalar(.string("far")))
        #expect(try store.clockValue() == stamp)
        #expect(try store.versionVector()[Self.farReplica] == stamp)

        let dot = try core.set(Self.ref, "title", .string("after"), now: Self.now)
        try store.set(Self.ref, "title", .string("after"))
        #expect(dot.hlc == Self.limit + 1)
        #expect(try store.versionVector()[store.replicaID] == Self.limit + 1)
        #expect(try store.clockValue() == stamp, "the clock keeps what it observed")
        #expect(try store.record(Self.ref)?.first { $0.name == "title" }?.value == .scalar(.string("after")))
        try core.set(Self.ref, "body", .string("more"), now: Self.now)
        try store.set(Self.ref, "body", .string("more"))
        #expect(try store.versionVector()[store.replicaID] == Self.limit + 2)
        #expect(try store.state() == core.state)
        #expect(try store.canonicalDump() == CanonicalDump.json(of: core.state))
        // Sealing in bounded batches orders the outbox by stamp; it once trapped here.
        var sealed: [Delta] = []
        while let delta = try store.seal(maxSlots: 1)?.delta { sealed.append(delta) }
        var fromCore: [Delta] = []
        while let delta = core.seal() { fromCore.append(delta) }
        #expect(!sealed.isEmpty)
        var reader = Replica(id: ReplicaID(high: 0, low: 9))
        for delta in [try Self.farDelta(stamp: stamp), unseenDelta] + sealed { try reader.apply(delta) }
        var coreReader = Replica(id: ReplicaID(high: 0, low: 9))
        for delta in [try Self.farDelta(stamp: stamp), unseenDelta] + fromCore { try coreReader.apply(delta) }
        #expect(reader.state == coreReader.state)
        #expect(reader.state.record(Self.ref)?.fields["title"] == .scalar(.string("after")))
        #expect(try store.pendingChangeCount() == 0)
    }

    /// A store whose clock an older release pushed to the end of the range — it followed a
    /// stamp there, and refused every write since — writes again with its own clock.
    @Test func aStoreAnOlderReleaseLeftAtTheCeilingWritesAgain() throws {
        let directory = TemporaryDirectory("clock-ceiling")
        let store = try Store.temporary(directory, "a", clock: ManualClock(millis: Self.now))
        try store.set(RecordRef(collection: "notes", id: "n0"), "title", .string("before"))
        try store.apply(try Self.farDelta(stamp: HLC.ceiling))
        #expect(try store.clockValue() == HLC.ceiling)
        for index in 0..<3 { try store.set(Self.ref, "title", .string("after \(index)")) }
        #expect(try store.record(Self.ref)?.first { $0.name == "title" }?.value == .scalar(.string("after 2")))
        #expect(try store.versionVector()[store.replicaID] == Self.limit + 3)
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
        // A device in the year 6429, so its own stamps follow the far one past 2^63.
        let clock = ManualClock(millis: 1 << 47)
        do {
            let store = try Store(path: path, configuration: .init(clock: clock))
            try store.apply(try Self.farDelta(stamp: far))
            try store.set(Self.ref, "title", .string("mine"))
            try store.add(RecordRef(collection: "notes", id: "n2"), "tags", .int(1))
            expected = try store.state()
            dump = try store.canonicalDump()
            pending = try store.pendingChangeCount()
            #expect(pending >= 2)
        }
        try Self.downgradeToVersionOne(path)
        let reopened = try Store(path: path, configuration: .init(clock: clock))
        #expect(try reopened.state() == expected)
        #expect(try reopened.canonicalDump() == dump)
        #expect(try reopened.pendingChangeCount() == pending)
        #expect(try reopened.clockValue() == far + 2)
        // Bounded batches in write order: the first write, then the second.
        #expect(try reopened.seal(maxSlots: 1)?.delta.upTo == far + 1)
        #expect(try reopened.seal(maxSlots: 1)?.delta.upTo == far + 2)
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
