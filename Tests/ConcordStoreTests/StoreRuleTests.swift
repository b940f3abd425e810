import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// docs/ARCHITECTURE.md §2 rules 1–8 through two and three stores on disk, exchanging encoded deltas
/// and snapshots; canonical dumps compared byte for byte.
@Suite struct StoreRuleTests {
    static let day: Int64 = 86_400_000
    let note = RecordRef(collection: "notes", id: "n1")
    let directory = TemporaryDirectory()

    func stores(_ count: Int, skews: [Int64] = []) throws -> (stores: [Store], clocks: [ManualClock]) {
        let clocks = (0..<count).map { index in ManualClock(millis: UInt64(1_767_268_800_000 + (index < skews.count ? skews[index] : 0))) }
        let stores = try (0..<count).map { try Store.temporary(directory, "r\($0)", clock: clocks[$0]) }
        return (stores, clocks)
    }

    /// Exchanges deltas through their encoded bytes, and the files they hold back, as sync
    /// will.
    func sync(_ stores: [Store]) throws {
        let wire = try stores.compactMap { try $0.seal()?.delta }.map { DeltaCodec.encode($0) }
        for bytes in wire {
            let delta = try DeltaCodec.decode(bytes)
            let origin = try #require(stores.first { $0.replicaID == delta.origin })
            for store in stores where store.replicaID != delta.origin {
                if case let .heldBack(missing) = try store.apply(delta) {
                    for hash in missing {
                        _ = try store.blobs.add(bytes: try origin.blobs.bytes(hash))
                    }
                    #expect(try store.apply(delta) == .applied)
                }
            }
        }
    }

    func expectConverged(_ stores: [Store]) throws {
        let dumps = try Set(stores.map { try $0.canonicalDump() })
        #expect(dumps.count == 1, "\(dumps)")
    }

    @Test func rule1ConcurrentWritesGreaterStampWins() throws {
        let (s, clocks) = try stores(3)
        clocks[2].advance(by: 5)
        try s[0].set(note, "title", .string("a"))
        try s[1].set(note, "title", .string("b"))
        try s[2].set(note, "title", .string("c"))  // latest clock
        try sync(s)
        try expectConverged(s)
        #expect(try s[0].record(note)?.first { $0.name == "title" }?.value == .scalar(.string("c")))
    }

    @Test func rule2CausallyLaterWriteWinsWithClockADayBehind() throws {
        let (s, _) = try stores(2, skews: [Self.day, 0])
        try s[0].set(note, "title", .string("clock ahead"))
        try sync(s)
        try s[1].set(note, "title", .string("later, clock behind"))
        try sync(s)
        try expectConverged(s)
        #expect(try s[0].record(note)?.first { $0.name == "title" }?.value == .scalar(.string("later, clock behind")))
    }

    @Test func rule3AddWinsOverConcurrentRemove() throws {
        let (s, _) = try stores(2)
        try s[0].add(note, "tags", .string("x"))
        try sync(s)
        try s[0].remove(note, "tags", .string("x"))
        try s[1].add(note, "tags", .string("x"))
        try sync(s)
        try expectConverged(s)
        #expect(try s[1].record(note)?.first { $0.name == "tags" }?.value == .set([.string("x")]))
    }

    /// A name written as a scalar on one replica and as a set on another, concurrently,
    /// reads as whichever holds the greater stamp, on both replicas, and a point read gives
    /// what the core reads from the same record (`Record.sortedFields`).
    @Test(arguments: [false, true])
    func nameWrittenAsScalarAndSetConcurrentlyReadsAsTheLater(setIsLater: Bool) throws {
        let (s, clocks) = try stores(2)
        try s[0].set(note, "title", .string("t"))
        try sync(s)
        clocks[setIsLater ? 1 : 0].advance(by: 5)
        try s[0].set(note, "tags", .string("scalar"))
        try s[1].add(note, "tags", .string("b"))
        try s[1].add(note, "tags", .string("a"))
        try sync(s)
        try expectConverged(s)
        for store in s {
            let raw = try #require(try store.rawRecord(note))
            #expect(raw.slots[.field("tags")] != nil && raw.slots[.element("tags", .string("a"))] != nil)
            let read = try #require(try store.record(note))
            #expect(read.map(\.name) == ["tags", "title"])
            #expect(read.first?.value == (setIsLater ? .set([.string("a"), .string("b")]) : .scalar(.string("scalar"))))
            #expect(read.map(\.value) == raw.sortedFields.map(\.value))
        }
    }

    @Test func rule4DeleteConcurrentWithUpdateKeepsEveryField() throws {
        let (s, _) = try stores(3)
        try s[0].put(note, ["title": .scalar(.string("t")), "body": .scalar(.string("all of me"))])
        try sync(s)
        try s[0].delete(note)
        try s[1].set(note, "title", .string("edited"))
        try sync(s)
        try expectConverged(s)
        let fields = try #require(try s[2].record(note))
        #expect(fields.map(\.name) == ["body", "title"])
        #expect(try s[2].conflicts() == [Conflict(kind: .deleteUpdate, ref: note)])
        try s[2].keepRecord(note)
        try sync(s)
        try expectConverged(s)
        #expect(try s[0].conflicts().isEmpty)
    }

    @Test func rule5RecreationShowsNoOldField() throws {
        let (s, _) = try stores(2)
        try s[0].put(note, ["title": .scalar(.string("old")), "tags": .set([.string("old")])])
        try s[0].attachFile(note, "doc", bytes: Array("old doc".utf8))
        try sync(s)
        try s[0].delete(note)
        try sync(s)
        try s[1].put(note, ["body": .scalar(.string("new"))])
        try sync(s)
        try expectConverged(s)
        #expect(try s[0].record(note)?.map(\.name) == ["body"])
        #expect(try s[0].conflicts().isEmpty)
    }

    @Test func rule6FileForkKeptEverywhereAndResolved() throws {
        let (s, _) = try stores(3)
        let one = try s[0].attachFile(note, "doc", bytes: Array("laptop's version".utf8))
        let two = try s[1].attachFile(note, "doc", bytes: Array("phone's version".utf8))
        try sync(s)
        try expectConverged(s)
        let conflicts = try s[2].conflicts()
        #expect(conflicts.count == 1 && conflicts[0].kind == .fileFork)
        #expect(Set(conflicts[0].versions.map(\.file.hash)) == [one.hash, two.hash])
        try s[2].keepVersion(note, "doc", hash: one.hash)
        try sync(s)
        try expectConverged(s)
        #expect(try s[1].conflicts().isEmpty)
        // The superseded version stays in history, restorable, and its file is kept.
        #expect(try s[1].versions(note, "doc").map(\.file.hash).contains(two.hash))
        #expect(try s[1].sweepFiles().isEmpty)
        try s[1].restore(note, "doc", hash: two.hash)
        #expect(try s[1].record(note)?.first { $0.name == "doc" }?.value == .file(two))
    }

    @Test func rule7MergeNeverConsultsTheLocalClock() throws {
        let (s, _) = try stores(2, skews: [0, Self.day])
        try s[1].set(note, "title", .string("from a day ahead"))
        try sync(s)
        #expect(try s[0].record(note)?.first { $0.name == "title" }?.value == .scalar(.string("from a day ahead")))
        #expect(try s[0].clockValue() >= HLC.value(physical: 1_767_268_800_000 + UInt64(Self.day)))
        try s[0].set(note, "title", .string("now"))  // causally later, clock a day behind
        try sync(s)
        try expectConverged(s)
        #expect(try s[1].record(note)?.first { $0.name == "title" }?.value == .scalar(.string("now")))
    }

    @Test func rule8DuplicatesReorderingAndSnapshotsChangeNothing() throws {
        let (s, _) = try stores(3)
        try s[0].set(note, "a", .int(1))
        let first = try #require(try s[0].seal()?.delta)
        try s[0].add(note, "tags", .int(2))
        let second = try #require(try s[0].seal()?.delta)
        #expect(throws: ConcordError.self) { try s[1].apply(second) }
        #expect(try s[1].canonicalDump() == CanonicalDump.json(of: StoreState()))
        try s[1].apply(first)
        try s[1].apply(second)
        let once = try s[1].canonicalDump()
        #expect(try s[1].apply(first) == .alreadyApplied)
        #expect(try s[1].apply(second) == .alreadyApplied)
        #expect(try s[1].canonicalDump() == once)
        // A third store bootstraps from a snapshot, then sees the deltas as applied.
        let snapshot = try SnapshotCodec.decode(SnapshotCodec.encode(try s[1].exportSnapshot()))
        try s[2].join(snapshot: snapshot)
        #expect(try s[2].apply(second) == .alreadyApplied)
        #expect(try s[2].join(snapshot: snapshot) == .alreadyApplied)
        #expect(try s[2].canonicalDump() == once)
        // Remote changes never enter the outbox.
        #expect(try s[1].pendingChangeCount() == 0)
        #expect(try s[2].seal() == nil)
    }

    @Test func snapshotsRequireSealedChanges() throws {
        let (s, _) = try stores(1)
        try s[0].set(note, "a", .int(1))
        #expect(throws: ConcordError.self) { try s[0].exportSnapshot() }
        _ = try s[0].seal()
        #expect(try s[0].exportSnapshot().recordCount == 1)
    }
}
