import ConcordCore
import ConcordTesting
import PropertyBased
import Testing

/// Merging a fork of a replica's history (docs/ARCHITECTURE.md §4, "Merging a fork"): two
/// copies of one replica wrote past a common prefix under one id. Renaming one side's dots
/// past the prefix to a fresh id (`DotRename`) is a swap that commutes with the join, and
/// after it the two sides merge like any two replicas: no write of either side is lost, and
/// applying the renamed side's batches one by one ends where joining its state does.
@Suite struct ForkRenameTests {
    static let codes = Gen.int(in: 0...9_999).array(of: 0...40)
    static let fresh = ReplicaID(high: 0xF0F0, low: 0x0F0F)
    static let refs = [RecordRef(collection: "c", id: "x"), RecordRef(collection: "c", id: "y")]

    /// Every entry of a state, with where it lies.
    static func entries(_ state: StoreState) -> [(ref: RecordRef, key: SlotKey, entry: Entry)] {
        state.sortedRecords.flatMap { record in
            record.record.sortedSlots.flatMap { slot in slot.slot.entries.map { (ref: record.ref, key: slot.key, entry: $0) } }
        }
    }

    static func holds(_ state: StoreState, _ ref: RecordRef, _ key: SlotKey, _ entry: Entry) -> Bool {
        state.record(ref)?.slots[key]?.entries.contains(entry) == true
    }

    @Test func renamingIsASwapThatCommutesWithTheJoin() async {
        await propertyCheck(input: Self.codes, Gen.int(in: 0...40)) { codes, cut in
            let history = OperationHistory.run(codes)
            let forked = history.replicas[0].id
            let states = history.states + history.deltas.suffix(2).map(\.state)
            let hlcs = Set(states.flatMap { Self.entries($0).map(\.entry.dot).filter { $0.replica == forked }.map(\.hlc) }).sorted()
            let rename = try! DotRename(replica: forked, to: Self.fresh, after: hlcs.isEmpty ? 0 : hlcs[cut % hlcs.count] - 1)
            for x in states {
                let renamed = x.renaming(rename)
                renamed._checkInvariants()
                #expect(renamed.renaming(rename) == x)
                #expect(Self.entries(renamed).count == Self.entries(x).count)
                for y in states {
                    #expect(x.joined(y).renaming(rename) == renamed.joined(y.renaming(rename)))
                }
            }
            if let last = hlcs.last, last > rename.after {
                // Something moved: the renamed state holds a dot of the fresh id.
                #expect(states.contains { Self.entries($0.renaming(rename)).contains { $0.entry.dot.replica == Self.fresh } })
            }
        }
    }

    /// A driver for one replica: `code` picks an operation on two records.
    static func write(_ code: Int, on replica: inout Replica, now: UInt64) {
        let ref = refs[(code / 7) % 2]
        let field = (code / 14) % 2 == 0 ? "f" : "g"
        switch code % 7 {
        case 0, 1: _ = try? replica.set(ref, field, .int(Int64(code % 5)), now: now)
        case 2: _ = try? replica.add(ref, "s", .int(Int64(code % 3)), now: now)
        case 3: _ = try? replica.remove(ref, "s", .int(Int64(code % 3)), now: now)
        case 4: _ = try? replica.delete(ref, now: now)
        case 5: _ = try? replica.create(ref, [field: .scalar(.string("new"))], now: now)
        default: _ = try? replica.keepRecord(ref, now: now)
        }
    }

    /// A forked history: `a` and `b` write and exchange batches (`prefix`); then two copies
    /// of `a` write past the prefix — `left`, whose batches `b` applies (and `b` writes
    /// too), and `right`, whose batches `c` applies (and `c` writes too) — from the same
    /// clock readings, so the copies also issue equal stamps with other contents.
    struct Fork {
        var atFork: Replica
        var left: Replica
        var right: Replica
        var b: Replica
        var c: Replica
        /// `left`'s and `b`'s batches after the fork, in the order they were sealed.
        var keptSide: [Delta] = []
        /// `right`'s batches, with `right`'s state when it sealed each.
        var renamedSide: [(delta: Delta, state: StoreState)] = []
        /// `right`'s and `c`'s batches, in the order they were sealed.
        var renamedLog: [Delta] = []

        init(prefix: [Int], left leftCodes: [Int], right rightCodes: [Int]) throws {
            var a = Replica(id: ReplicaID(high: 1, low: 1))
            var b = Replica(id: ReplicaID(high: 2, low: 2))
            var now: UInt64 = 1_767_225_600_000
            for code in prefix {
                now += UInt64(code % 2)
                if code % 2 == 0 { ForkRenameTests.write(code / 2, on: &a, now: now) } else { ForkRenameTests.write(code / 2, on: &b, now: now) }
                if code % 5 == 0, let delta = a.seal() { try b.apply(delta) }
                if code % 5 == 1, let delta = b.seal() { try a.apply(delta) }
            }
            if let delta = b.seal() { try a.apply(delta) }
            if let delta = a.seal() { try b.apply(delta) }
            atFork = a
            var left = a
            var right = a
            let forkTime = now
            for code in leftCodes {
                now += UInt64(code % 2)
                if code % 3 == 0 { ForkRenameTests.write(code / 3, on: &b, now: now) } else { ForkRenameTests.write(code / 3, on: &left, now: now) }
                if code % 4 == 0, let delta = left.seal() { keptSide.append(delta); try b.apply(delta) }
                if code % 4 == 1, let delta = b.seal() { keptSide.append(delta); try left.apply(delta) }
            }
            if let delta = left.seal() { keptSide.append(delta); try b.apply(delta) }
            if let delta = b.seal() { keptSide.append(delta); try left.apply(delta) }
            now = forkTime
            var c = Replica(id: ReplicaID(high: 3, low: 3))
            c.join(snapshot: a.state)
            for code in rightCodes {
                now += UInt64(code % 2)
                if code % 5 == 4 { ForkRenameTests.write(code, on: &c, now: now) } else { ForkRenameTests.write(code, on: &right, now: now) }
                if code % 3 == 0, let delta = right.seal() {
                    renamedSide.append((delta, right.state))
                    renamedLog.append(delta)
                    try c.apply(delta)
                }
                if code % 3 == 1, let delta = c.seal() { renamedLog.append(delta) }
            }
            if let delta = right.seal() {
                renamedSide.append((delta, right.state))
                renamedLog.append(delta)
                try c.apply(delta)
            }
            if let delta = c.seal() { renamedLog.append(delta) }
            self.left = left
            self.right = right
            self.b = b
            self.c = c
        }

        var rename: DotRename { try! DotRename(replica: atFork.id, to: ForkRenameTests.fresh, after: atFork.sealedUpTo) }
        var forkSeq: UInt64 { atFork.sealedSeq + 1 }
    }

    @Test func aForkMergedAfterTheRenameKeepsEveryWriteOfBothSidesAndConverges() async throws {
        await propertyCheck(input: Self.codes, Self.codes, Self.codes) { prefix, leftCodes, rightCodes in
            let fork = try Fork(prefix: prefix, left: leftCodes, right: rightCodes)
            let (rename, forkSeq, forked) = (fork.rename, fork.forkSeq, fork.atFork.id)
            // The renamed side, batch by batch: applying each renamed batch to the renamed
            // state equals renaming the state after applying it.
            var renamedSide = fork.atFork.state
            for (delta, state) in fork.renamedSide {
                let renamed = try delta.renaming(rename, forkSeq: forkSeq)
                #expect(renamed.origin == Self.fresh && renamed.dependencies[forked] == rename.after)
                #expect(try renamedSide.apply(renamed) == .applied)
                #expect(renamedSide == state.renamingForkedSide(rename))
            }
            let right = fork.right.state.renamingForkedSide(rename)
            let c = fork.c.state.renamingForkedSide(rename)
            #expect(right.versionVector != nil, "\(right.context)")
            #expect(c.versionVector != nil, "\(c.context)")
            // b, which applied the kept side, applies the renamed side's batches and those of
            // c, which applied the renamed side and wrote: they are ready in the order they
            // were sealed (they depend on the prefix of a only), and end where the join does.
            var b = fork.b
            for delta in fork.renamedLog { #expect(try b.apply(delta.renaming(rename, forkSeq: forkSeq)) == .applied) }
            #expect(b.state == fork.b.state.joined(right).joined(c))
            // A replica that had the prefix only, taking the sides in the other order, ends
            // the same.
            var other = fork.atFork
            other.join(snapshot: c)
            for delta in fork.keptSide { try other.apply(delta) }
            #expect(other.state == b.state)
            // No write of either side past the fork is lost: each side holds what the other
            // never saw. `left` holds all the kept copy wrote and did not overwrite itself;
            // `c`, which applied every batch of the other copy, all that copy and `c` wrote
            // and did not overwrite.
            let merged = fork.left.state.joined(c)
            for (ref, key, entry) in Self.entries(fork.left.state) where entry.dot.replica == forked && entry.dot.hlc > rename.after {
                #expect(Self.holds(merged, ref, key, entry), "the kept side's \(entry.dot) in \(ref) \(key) was lost")
            }
            for (ref, key, entry) in Self.entries(c) where [Self.fresh, fork.c.id].contains(entry.dot.replica) {
                #expect(Self.holds(merged, ref, key, entry), "the renamed side's \(entry.dot) in \(ref) \(key) was lost")
                #expect(Self.holds(b.state, ref, key, entry), "b lost the renamed side's \(entry.dot) in \(ref) \(key)")
            }
        }
    }

    /// The case the rename exists for: the kept side wrote n2, the other copy n3 later under
    /// the same id. Joined as they are, the copy that wrote n3 claims to have seen n2's
    /// stamp and removes it; renamed first, both records are there.
    @Test func withoutTheRenameTheForkLosesAWriteAndWithItKeepsBoth() throws {
        let (n1, n2, n3) = (RecordRef(collection: "notes", id: "n1"), RecordRef(collection: "notes", id: "n2"), RecordRef(collection: "notes", id: "n3"))
        var a = Replica(id: ReplicaID(high: 1, low: 1))
        var b = Replica(id: ReplicaID(high: 2, low: 2))
        let now: UInt64 = 1_767_225_600_000
        try a.set(n1, "title", .string("one"), now: now)
        let prefix = try a.mustSeal()
        try b.apply(prefix)
        let rename = try DotRename(replica: a.id, to: Self.fresh, after: a.sealedUpTo)
        var right = a
        try a.set(n2, "title", .string("two"), now: now + 1_000)
        try b.apply(try a.mustSeal())
        try right.set(n3, "title", .string("three"), now: now + 2_000)
        let lost = try right.mustSeal()
        #expect(b.state.joined(lost.state).record(n2)?.isVisible != true, "the unrenamed join keeps n2: the rename would not be needed")
        #expect(throws: ConcordError.self) { try DotRename(replica: a.id, to: a.id, after: 0) }
        // The prefix is not renamed.
        #expect(throws: ConcordError.self) { try prefix.renaming(rename, forkSeq: 2) }
        try b.apply(lost.renaming(rename, forkSeq: 2))
        for ref in [n1, n2, n3] { #expect(b.state.record(ref)?.isVisible == true, "\(ref.id) lost") }
        #expect(b.state == a.state.joined(right.state.renamingForkedSide(rename)))
    }
}
