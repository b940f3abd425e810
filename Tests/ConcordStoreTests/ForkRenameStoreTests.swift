import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// A store on the renamed side of a forked history renames what it holds in one
/// transaction (docs/ARCHITECTURE.md §4, "Merging a fork"): its stored state afterwards is
/// `StoreState.renamingForkedSide` of the state it loaded before, and what it applied of the
/// forked replica from the fork's seq on is the fresh id's.
@Suite struct ForkRenameStoreTests {
    static let refs = [RecordRef(collection: "c", id: "x"), RecordRef(collection: "c", id: "y"), RecordRef(collection: "d", id: "z")]

    /// A small deterministic generator (an LCG), so that each case can be replayed.
    struct Codes {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    static func write(_ code: Int, on replica: inout Replica, now: UInt64) {
        let ref = refs[(code / 7) % 3]
        let field = (code / 21) % 2 == 0 ? "f" : "g"
        switch code % 7 {
        case 0, 1: _ = try? replica.set(ref, field, .int(Int64(code % 5)), now: now)
        case 2: _ = try? replica.add(ref, "s", .int(Int64(code % 3)), now: now)
        case 3: _ = try? replica.remove(ref, "s", .int(Int64(code % 3)), now: now)
        case 4: _ = try? replica.delete(ref, now: now)
        case 5: _ = try? replica.create(ref, [field: .scalar(.string("new"))], now: now)
        default: _ = try? replica.keepRecord(ref, now: now)
        }
    }

    /// Random histories: `a` and `b` write and exchange batches; then `a` writes on past the
    /// prefix (its side of a fork), and the store joins what `b` and `a` hold, then writes
    /// and seals its own changes. Renaming in SQLite equals renaming the loaded state.
    @Test func renamingTheStoredStateEqualsRenamingTheLoadedState() throws {
        let directory = TemporaryDirectory("fork-rename-store")
        let fresh = ReplicaID(high: 0xF0F0, low: 0x0F0F)
        for seed in 0..<15 {
            var codes = Codes(state: UInt64(seed) &* 0x9E37_79B9_7F4A_7C15 &+ 1)
            var a = Replica(id: ReplicaID(high: 1, low: 1))
            var b = Replica(id: ReplicaID(high: 2, low: 2))
            var now: UInt64 = 1_767_225_600_000
            for _ in 0..<codes.next(30) {
                let code = codes.next(10_000)
                now += UInt64(code % 2)
                if code % 2 == 0 { Self.write(code / 2, on: &a, now: now) } else { Self.write(code / 2, on: &b, now: now) }
                if code % 5 == 0, let delta = a.seal() { try b.apply(delta) }
                if code % 5 == 1, let delta = b.seal() { try a.apply(delta) }
            }
            if let delta = a.seal() { try b.apply(delta) }
            let after = a.sealedUpTo
            let forkSeq = a.sealedSeq + 1
            for _ in 0..<codes.next(30) {
                let code = codes.next(10_000)
                now += UInt64(code % 2)
                Self.write(code, on: &a, now: now)
                if code % 3 == 0 { _ = a.seal() }
            }
            _ = a.seal()
            let clock = ManualClock(millis: now + 1)
            let store = try Store.temporary(directory, "s\(seed)", clock: clock)
            var joined = a.state
            joined = joined.joined(b.state)
            try store.join(snapshot: joined, appliedSeqs: [a.id: a.sealedSeq, b.id: b.sealedSeq])
            for _ in 0..<codes.next(6) {
                clock.advance(by: 1)
                let ref = Self.refs[codes.next(3)]
                try store.set(ref, "f", .int(Int64(codes.next(9))))
            }
            _ = try store.seal()
            let rename = try DotRename(replica: a.id, to: fresh, after: after)
            let loaded = try store.exportSnapshot()
            try store.renameForkedSide(rename, forkSeq: forkSeq)
            let renamed = try store.exportSnapshot()
            #expect(renamed == loaded.renamingForkedSide(rename), "seed \(seed)")
            let applied = try store.appliedSeqs()
            if a.sealedSeq >= forkSeq {
                #expect((applied[a.id] ?? 0) == forkSeq - 1, "seed \(seed)")
                #expect(applied[fresh] == a.sealedSeq - forkSeq + 1, "seed \(seed)")
            } else {
                #expect(applied[fresh] == nil, "seed \(seed)")
            }
            #expect((applied[b.id] ?? 0) == b.sealedSeq, "seed \(seed)")
        }
    }

    /// The forked replica itself, or a store with unsealed changes, does not rename.
    @Test func aStoreWithUnsealedChangesOrTheForkedReplicaItselfRefuses() throws {
        let directory = TemporaryDirectory("fork-rename-refusals")
        let store = try Store.temporary(directory, "s", clock: ManualClock())
        try store.set(Self.refs[0], "f", .int(1))
        let other = ReplicaID(high: 9, low: 9)
        #expect(throws: ConcordError.self) { try store.renameForkedSide(try DotRename(replica: other, to: ReplicaID(high: 8, low: 8), after: 0), forkSeq: 1) }
        _ = try store.seal()
        #expect(throws: ConcordError.self) { try store.renameForkedSide(try DotRename(replica: store.replicaID, to: other, after: 0), forkSeq: 1) }
    }
}
