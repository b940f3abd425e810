import ConcordCodec
import ConcordCore
import ConcordTesting
import Testing

@Suite struct PrimitiveTests {
    @Test func replicaIDsRoundTripThroughHexAndBytes() throws {
        var random = SeededGenerator(seed: 42)
        for _ in 0..<100 {
            let id = ReplicaID.random(using: &random)
            #expect(ReplicaID(hex: id.description) == id)
            #expect(ReplicaID(bytes: id.bytes) == id)
            #expect(id.description.count == 32)
        }
        #expect(ReplicaID(hex: "xyz") == nil)
        #expect(ReplicaID(hex: String(repeating: "g", count: 32)) == nil)
        #expect(ReplicaID(hex: "0000000000000001FFFFFFFFFFFFFFFF") == ReplicaID(high: 1, low: .max))
    }

    @Test func stampsOrderByClockThenReplica() {
        let a = ReplicaID(high: 0, low: 1)
        let b = ReplicaID(high: 0, low: 2)
        #expect(Stamp(hlc: 1, replica: b) < Stamp(hlc: 2, replica: a))
        #expect(Stamp(hlc: 2, replica: a) < Stamp(hlc: 2, replica: b))
        #expect(!(Stamp(hlc: 2, replica: a) < Stamp(hlc: 2, replica: a)))
    }

    @Test func clockFollowsObservedValuesAndPhysicalTime() throws {
        var clock = HybridLogicalClock()
        let first = try clock.tick(physicalMillis: 1_000)
        #expect(first == HLC.value(physical: 1_000))
        #expect(try clock.tick(physicalMillis: 999) == first + 1)  // wall clock went back: counter
        clock.observe(HLC.value(physical: 5_000, counter: 7))
        #expect(try clock.tick(physicalMillis: 1_001) == HLC.value(physical: 5_000, counter: 8))
        #expect(try clock.tick(physicalMillis: 6_000) == HLC.value(physical: 6_000))
        #expect(HLC.physical(HLC.value(physical: 6_000, counter: 3)) == 6_000)
        #expect(HLC.counter(HLC.value(physical: 6_000, counter: 3)) == 3)
        let manual = ManualClock(millis: 10_000)
        #expect(try clock.tick(clock: manual) == HLC.value(physical: 10_000))
        manual.advance(by: 5)
        #expect(manual.millisecondsSinceEpoch() == 10_005)
    }

    @Test func causalContextNormalizesRanges() {
        let r = ReplicaID(high: 0, low: 1)
        var context = CausalContext()
        context.insert(5...6, for: r)
        context.insert(1...2, for: r)
        context.insert(3...4, for: r)  // adjacent on both sides: one range
        #expect(context.ranges[r] == [1...6])
        context.insert(10...10, for: r)
        #expect(context.ranges[r] == [1...6, 10...10])
        #expect(context.contains(Stamp(hlc: 10, replica: r)))
        #expect(!context.contains(Stamp(hlc: 8, replica: r)))
        #expect(context.versionVector == nil)
        context.insert(0...9, for: r)
        #expect(context.versionVector == VersionVector([r: 10]))
        let removed = context.subtracting(CausalContext(ranges: [r: [3...4]]))
        #expect(removed.ranges[r] == [0...2, 5...10])
        #expect(removed.isSubset(of: context))
        #expect(!context.isSubset(of: removed))
    }

    @Test func versionVectorsCompareAndMerge() {
        let a = ReplicaID(high: 0, low: 1)
        let b = ReplicaID(high: 0, low: 2)
        let x = VersionVector([a: 3, b: 0])
        let y = VersionVector([b: 4])
        #expect(x.entries.count == 1)
        #expect(!x.dominates(y) && !y.dominates(x))
        let z = x.merging(y)
        #expect(z.dominates(x) && z.dominates(y))
        #expect(z == VersionVector([a: 3, b: 4]))
    }

    @Test func dumpEscapesAndSortsCanonically() throws {
        var replica = Replica(id: ReplicaID(high: 0, low: 1))
        let ref = RecordRef(collection: "c", id: "quote\"back\\slash\nnl\u{01}")
        try replica.put(ref, [
            "b": .scalar(.double(.infinity)),
            "a": .scalar(.double(-0.0)),
            "é": .scalar(.string("ünï")),
            "n": .scalar(.double(.nan)),
            "s": .set([.string("b"), .int(2), .null, .bool(true), .double(1.5), .string("a")]),
        ], now: 1)
        let dump = CanonicalDump.json(of: replica.state)
        #expect(dump == #"{"collections":{"c":{"quote\"back\\slash\nnl\u0001":{"a":-0.0,"b":{"$double":"Infinity"},"n":{"$double":"NaN"},"s":[null,true,2,1.5,"a","b"],"é":"ünï"}}},"conflicts":[]}"#)
    }
}

@Suite struct ExactIdentityTests {
    static let composed = "caf\u{e9}"  // é as one scalar
    static let decomposed = "cafe\u{301}"  // e + combining acute accent

    /// Names, ids and string values order by their UTF-8 bytes, compared eight at a time:
    /// the same order, equality and NUL check as comparing them byte by byte, for strings
    /// short and long (inline and on the heap), sharing prefixes of every length, with
    /// multi-byte characters, canonically equivalent spellings and NUL bytes.
    @Test func bytewiseOrderIsTheOrderOfTheBytes() {
        let pieces = ["a", "b", "é", "e\u{301}", "\u{0}", "\u{7f}", "\u{ff}", "😀", "zz", "items", "0123456789"]
        var random = SeededGenerator(seed: 7)
        func text(_ count: Int) -> String {
            (0..<count).map { _ in pieces[Int.random(in: 0..<pieces.count, using: &random)] }.joined()
        }
        for _ in 0..<5_000 {
            let a = text(Int.random(in: 0...8, using: &random))
            let shared = String(decoding: a.utf8.prefix(Int.random(in: 0...a.utf8.count, using: &random)), as: UTF8.self)
            let b = Bool.random(using: &random) ? a : shared + text(Int.random(in: 0...4, using: &random))
            let (x, y) = (Array(a.utf8), Array(b.utf8))
            let expected = x == y ? 0 : x.lexicographicallyPrecedes(y) ? -1 : 1
            #expect(Bytewise.compare(a, b).signum() == expected, "\(x) against \(y)")
            #expect(Bytewise.compare(b, a).signum() == -expected)
            #expect(Bytewise.equal(a, b) == (x == y))
            #expect(Bytewise.less(a, b) == (expected < 0))
            #expect(Bytewise.containsNUL(a) == x.contains(0))
        }
    }

    @Test func canonicallyEquivalentSpellingsStayDistinct() throws {
        #expect(Self.composed == Self.decomposed)  // Swift's String equality…
        #expect(RecordRef(collection: "c", id: Self.composed) != RecordRef(collection: "c", id: Self.decomposed))  // …is not ours.
        var a = Replica(id: ReplicaID(high: 0, low: 1))
        var b = Replica(id: ReplicaID(high: 0, low: 2))
        try a.set(RecordRef(collection: "c", id: Self.composed), Self.decomposed, .string(Self.composed), now: 1)
        try b.set(RecordRef(collection: "c", id: Self.decomposed), Self.composed, .string(Self.decomposed), now: 1)
        try b.add(RecordRef(collection: "c", id: Self.decomposed), "s", .string(Self.composed), now: 2)
        try b.add(RecordRef(collection: "c", id: Self.decomposed), "s", .string(Self.decomposed), now: 3)
        let fromA = try a.mustSeal()
        let fromB = try b.mustSeal()
        try a.apply(fromB)
        try b.apply(fromA)
        #expect(a.state.recordCount == 2)
        #expect(CanonicalDump.json(of: a.state) == CanonicalDump.json(of: b.state))
        let record = try #require(a.state.record(RecordRef(collection: "c", id: Self.decomposed)))
        #expect(record.sortedFields.first { $0.name == "s" }?.value == .set([.string(Self.decomposed), .string(Self.composed)]))
        #expect(record.field(Self.composed) == .scalar(.string(Self.decomposed)))
        #expect(record.field(Self.decomposed) == nil)
        // The binary format keeps both spellings apart too.
        let bytes = try SnapshotCodec.encode(a.state)
        #expect(try SnapshotCodec.decode(bytes) == a.state)
        #expect(try DeltaCodec.decode(DeltaCodec.encode(fromB)) == fromB)
    }
}
