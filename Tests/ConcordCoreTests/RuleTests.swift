import ConcordCore
import ConcordTesting
import Testing

/// One named example per merge rule of docs/ARCHITECTURE.md §2.
@Suite struct RuleTests {
    static let day: UInt64 = 86_400_000
    static let noon: UInt64 = 1_767_268_800_000
    let note = RecordRef(collection: "notes", id: "n1")

    /// Two or three replicas with fixed ids (a < b < c by id).
    func replicas(_ count: Int = 2) -> [Replica] {
        (1...count).map { Replica(id: ReplicaID(high: 0, low: UInt64($0))) }
    }

    /// Seals `from` and applies the delta to every replica in `to`.
    func sync(_ from: inout Replica, to targets: inout [Replica], _ indices: [Int]) throws {
        guard let delta = from.seal() else { return }
        for index in indices { try targets[index].apply(delta) }
    }

    /// Everyone seals, then every delta reaches everyone (in sealing order).
    func exchange(_ replicas: inout [Replica]) throws {
        let deltas = replicas.indices.compactMap { replicas[$0].seal() }
        for index in replicas.indices {
            for delta in deltas where delta.origin != replicas[index].id { try replicas[index].apply(delta) }
        }
    }

    func dumps(_ replicas: [Replica]) -> Set<String> { Set(replicas.map { CanonicalDump.json(of: $0.state) }) }

    @Test func rule1ConcurrentScalarWritesGreaterStampWins() throws {
        var r = replicas()
        try r[0].set(note, "title", .string("from a"), now: Self.noon)
        try r[1].set(note, "title", .string("from b"), now: Self.noon)  // same hlc; b's id is greater
        try exchange(&r)
        #expect(dumps(r).count == 1)
        #expect(r[0].state.fields(of: note)?["title"] == .scalar(.string("from b")))
        #expect(r[1].state.fields(of: note)?["title"] == .scalar(.string("from b")))
    }

    @Test func rule2CausallyLaterWriteWinsWithClockADayBehind() throws {
        var r = replicas()
        // a's clock is a day ahead; b's is right.
        try r[0].set(note, "title", .string("early, clock ahead"), now: Self.noon + Self.day)
        try exchange(&r)
        // b saw a's write and writes later in causal order, with a clock a day behind a's.
        let stamp = try r[1].set(note, "title", .string("later, clock behind"), now: Self.noon)
        #expect(stamp.hlc > HLC.value(physical: Self.noon + Self.day))
        try exchange(&r)
        #expect(dumps(r).count == 1)
        #expect(r[0].state.fields(of: note)?["title"] == .scalar(.string("later, clock behind")))
        // The observed entry is gone, not merely outranked.
        #expect(r[0].state.record(note)?.slots[.field("title")]?.entries.count == 1)
    }

    @Test func rule3ConcurrentAddAndRemoveAddWins() throws {
        var r = replicas()
        try r[0].add(note, "tags", .string("x"), now: Self.noon)
        try exchange(&r)
        try r[0].remove(note, "tags", .string("x"), now: Self.noon + 10)
        try r[1].add(note, "tags", .string("x"), now: Self.noon + 10)
        try exchange(&r)
        #expect(dumps(r).count == 1)
        #expect(r[0].state.fields(of: note)?["tags"] == .set([.string("x")]))
        // A remove removes exactly the adds it observed: after seeing both adds, it empties.
        try r[0].remove(note, "tags", .string("x"), now: Self.noon + 20)
        try exchange(&r)
        #expect(r[1].state.fields(of: note)?["tags"] == nil)
    }

    @Test func rule4DeleteConcurrentWithUpdateKeepsRecordWithAllFields() throws {
        var r = replicas()
        try r[0].put(note, ["title": .scalar(.string("keep me")), "body": .scalar(.string("all of me"))], now: Self.noon)
        try exchange(&r)
        try r[0].delete(note, now: Self.noon + 10)
        try r[1].set(note, "title", .string("edited"), now: Self.noon + 5)
        try exchange(&r)
        #expect(dumps(r).count == 1)
        let fields = try #require(r[0].state.fields(of: note))
        #expect(fields == ["title": .scalar(.string("edited")), "body": .scalar(.string("all of me"))])
        #expect(r[0].state.conflicts == [Conflict(kind: .deleteUpdate, ref: note)])
        // Acknowledging by keeping removes the tombstones the acknowledger saw.
        try r[1].keepRecord(note, now: Self.noon + 20)
        try exchange(&r)
        #expect(r[0].state.conflicts.isEmpty)
        #expect(r[0].state.fields(of: note)?["body"] == .scalar(.string("all of me")))
        // A delete that observed the update really deletes.
        try r[0].delete(note, now: Self.noon + 30)
        try exchange(&r)
        #expect(r[1].state.fields(of: note) == nil)
        #expect(r[1].state.conflicts.isEmpty)
    }

    @Test func rule4AcknowledgeByDeletingAgain() throws {
        var r = replicas()
        try r[0].set(note, "title", .string("t"), now: Self.noon)
        try exchange(&r)
        try r[0].delete(note, now: Self.noon + 10)
        try r[1].set(note, "title", .string("edited"), now: Self.noon + 10)
        try exchange(&r)
        #expect(r[1].state.conflicts.count == 1)
        try r[1].delete(note, now: Self.noon + 20)
        try exchange(&r)
        #expect(dumps(r).count == 1)
        #expect(r[0].state.fields(of: note) == nil)
        #expect(r[0].state.conflicts.isEmpty)
    }

    @Test func rule5RecreationAfterObservedDeleteShowsNoOldField() throws {
        var r = replicas()
        try r[0].put(note, ["title": .scalar(.string("old")), "tags": .set([.string("old")])], now: Self.noon)
        try r[0].setFile(note, "doc", Self.file(1), now: Self.noon + 1)
        try exchange(&r)
        try r[0].delete(note, now: Self.noon + 10)
        try exchange(&r)
        try r[1].put(note, ["body": .scalar(.string("new"))], now: Self.noon + 20)  // re-creation
        try exchange(&r)
        #expect(dumps(r).count == 1)
        #expect(r[0].state.fields(of: note) == ["body": .scalar(.string("new"))])
        #expect(r[0].state.conflicts.isEmpty)  // the observed tombstone went too
    }

    @Test func rule6ConcurrentFileWritesForkAndResolutionSupersedesAll() throws {
        var r = replicas(3)
        try r[0].setFile(note, "doc", Self.file(1), now: Self.noon)
        try r[1].setFile(note, "doc", Self.file(2), now: Self.noon + 1)
        try r[2].setFile(note, "doc", Self.file(2), now: Self.noon + 2)  // same content as b: no extra version
        try exchange(&r)
        #expect(dumps(r).count == 1)
        let conflicts = r[0].state.conflicts
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.kind == .fileFork)
        #expect(Set(conflicts.first?.versions.map(\.file.hash) ?? []) == [Self.file(1).hash, Self.file(2).hash])
        // All versions are kept on every replica; the read value is the greatest stamp.
        #expect(r[1].state.record(note)?.fileVersions("doc").count == 3)
        #expect(r[1].state.fields(of: note)?["doc"] == .file(Self.file(2)))
        // Keeping one version observed every version and supersedes them all.
        try r[0].keepVersion(note, "doc", hash: Self.file(1).hash, now: Self.noon + 10)
        try exchange(&r)
        #expect(dumps(r).count == 1)
        #expect(r[2].state.conflicts.isEmpty)
        #expect(r[2].state.fields(of: note)?["doc"] == .file(Self.file(1)))
        #expect(r[2].state.record(note)?.fileVersions("doc").count == 1)
        #expect(throws: ConcordError.self) { try r[0].keepVersion(note, "doc", hash: Self.file(3).hash, now: Self.noon + 11) }
    }

    @Test func rule6ConcurrentSameContentIsNoFork() throws {
        var r = replicas()
        try r[0].setFile(note, "doc", Self.file(1), now: Self.noon)
        try r[1].setFile(note, "doc", Self.file(1), now: Self.noon)
        try exchange(&r)
        #expect(r[0].state.conflicts.isEmpty)
    }

    @Test func rule7MergeIgnoresLocalClockAndCounterCarries() throws {
        var r = replicas()
        // b's clock runs a day ahead: its stamp is applied as is, and a follows it.
        let ahead = try r[1].set(note, "title", .string("from the future"), now: Self.noon + Self.day)
        try exchange(&r)
        #expect(r[0].state.fields(of: note)?["title"] == .scalar(.string("from the future")))
        #expect(r[0].clock.observed >= ahead.hlc)
        #expect(HybridLogicalClock.skew(of: ahead.hlc, physicalMillis: Self.noon, maxDrift: 60_000) == Self.day)
        #expect(HybridLogicalClock.skew(of: ahead.hlc, physicalMillis: Self.noon + Self.day, maxDrift: 60_000) == nil)
        // a's later write, with its clock a day behind, still wins (rule 2 through rule 7).
        try r[0].set(note, "title", .string("now"), now: Self.noon)
        try exchange(&r)
        #expect(r[1].state.fields(of: note)?["title"] == .scalar(.string("now")))
        // The clock never fails: 65,536 ticks in one millisecond carry into the next.
        var clock = HybridLogicalClock()
        var last: UInt64 = 0
        for _ in 0..<70_000 {
            let value = try clock.tick(physicalMillis: Self.noon)
            #expect(value > last)
            last = value
        }
        #expect(HLC.physical(last) == Self.noon + 1)
    }

    @Test func rule8DuplicateAndReorderedDeliveryChangeNothing() throws {
        var r = replicas(3)
        try r[0].set(note, "title", .string("one"), now: Self.noon)
        let first = try r[0].mustSeal()
        try r[0].add(note, "tags", .int(1), now: Self.noon + 1)
        let second = try r[0].mustSeal()
        // The second delta cannot apply before the first: the state stays as it was.
        #expect(throws: ConcordError.self) { try r[1].apply(second) }
        #expect(r[1].state == StoreState())
        try r[1].apply(first)
        try r[1].apply(second)
        let once = r[1].state
        #expect(try r[1].apply(first) == .alreadyApplied)
        #expect(try r[1].apply(second) == .alreadyApplied)
        #expect(r[1].state == once)
        // A snapshot that already contains the deltas absorbs them too.
        r[2].join(snapshot: try #require(r[1].snapshot))
        #expect(try r[2].apply(second) == .alreadyApplied)
        #expect(r[2].state == once)
    }

    static func file(_ n: UInt8) -> FileRef {
        FileRef(hash: ContentHash(bytes: [UInt8](repeating: n, count: 32))!, size: UInt64(n) * 10, mediaType: "text/plain")
    }
}
