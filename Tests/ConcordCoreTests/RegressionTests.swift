import ConcordCore
import ConcordTesting
import Testing

/// Failures the simulator found, each kept as a named test.
@Suite struct RegressionTests {
    let a = ReplicaID(high: 0, low: 1)
    let b = ReplicaID(high: 0, low: 2)
    let c = ReplicaID(high: 0, low: 3)
    let ref = RecordRef(collection: "notes", id: "n")

    /// Simulator seed 20 (first version): replicas joined each other's *unsealed* state as a
    /// snapshot, so each one's next delta depended on the other's and a third replica could
    /// never apply either. Snapshots now exist only with an empty outbox.
    @Test func snapshotsNeverCarryUnsealedWrites() throws {
        var r0 = Replica(id: a)
        var r1 = Replica(id: b)
        var r2 = Replica(id: c)
        try r0.set(ref, "x", .int(1), now: 10)
        try r1.set(ref, "y", .int(2), now: 10)
        #expect(r0.snapshot == nil)
        #expect(r1.snapshot == nil)
        // Snapshots are taken right after sealing, as push does.
        let d0 = try r0.mustSeal()
        let d1 = try r1.mustSeal()
        let s0 = try #require(r0.snapshot)
        let s1 = try #require(r1.snapshot)
        r0.join(snapshot: s1)
        r1.join(snapshot: s0)
        try r0.set(ref, "x", .int(3), now: 20)
        try r1.set(ref, "y", .int(4), now: 20)
        let e0 = try r0.mustSeal()
        let e1 = try r1.mustSeal()
        // A third replica can apply everything in some causal order.
        for delta in [e1, e0, d1, d0] where r2.state.missingDependencies(of: delta) == nil { try r2.apply(delta) }
        for delta in [e1, e0] { try r2.apply(delta) }
        try r0.apply(e1)
        try r1.apply(e0)
        #expect(CanonicalDump.json(of: r2.state) == CanonicalDump.json(of: r0.state))
        #expect(r2.state.fields(of: ref) == ["x": .scalar(.int(3)), "y": .scalar(.int(4))])
        #expect(r0.state == r1.state)
        #expect(r1.state == r2.state)
    }

    /// Property test seed (first version): a delta that clears a slot nobody else holds gave a
    /// delta state with an empty, unscoped slot, which a join then dropped — idempotence
    /// failed structurally. Empty slots the context covers are now omitted.
    @Test func deltaStateOmitsEmptySlotsItsContextCovers() throws {
        var r0 = Replica(id: b)
        try r0.keepRecord(ref, now: 10)  // clears the (empty) tombstones slot
        let delta = try r0.mustSeal()
        let state = delta.state
        #expect(state.record(ref)?.slots[.tombstones] == nil)
        #expect(state.joined(state) == state)
    }
}
