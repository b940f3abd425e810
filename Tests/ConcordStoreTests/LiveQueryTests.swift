import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import Testing

/// An observed query yields the right results after every transaction that changed them —
/// local writes, deletes, remote applies, snapshot joins, purges — and once for a
/// transaction that changed many records.
@Suite struct LiveQueryTests {
    /// Results as text: ids and every field, so that any change of them shows.
    static func text(_ results: [(id: String, fields: [(name: String, value: FieldValue)])]) -> [String] {
        results.map { record in "\(record.id): " + record.fields.map { "\($0.name)=\($0.value)" }.joined(separator: ", ") }
    }

    static let declaration = try! CollectionDeclaration("g", fields: [.init("level", .int, indexed: true), .init("tags", .set(.string))])

    @Test(arguments: 1...4)
    func observedQueriesFollowEveryTransaction(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let peer = try Store.temporary(directory, "b", clock: clock)
        try store.declare(Self.declaration)
        let query = Query("g", filter: .field("level", .greaterOrEqual, .int(3)) || .contains("tags", .string("rpg"))).order(by: "level", descending: true)
        var results = store.observe(query).makeAsyncIterator()
        var last = Self.text(try #require(try await results.next()))
        #expect(last.isEmpty)
        var yields = 0
        for step in 0..<80 {
            clock.advance(by: 1)
            let ref = RecordRef(collection: "g", id: "r\(random.int(0...7))")
            switch random.int(0...6) {
            case 0, 1: try store.set(ref, "level", .int(Int64(random.int(0...5))))
            case 2: try store.add(ref, "tags", .string(random.pick(["rpg", "puzzle"])))
            case 3: try store.delete(ref)
            case 4:
                try peer.set(ref, "level", .int(Int64(random.int(0...5))))
                try store.apply(#require(try peer.seal()).delta)
            case 5:
                try store.join(snapshot: peer.exportSnapshot(), appliedSeqs: [:])
            default:
                try store.remove(ref, "tags", .string("rpg"))
            }
            let expected = Self.text(try store.query(query))
            if expected != last {
                let yielded = Self.text(try #require(try await results.next()))
                #expect(yielded == expected, "seed \(seed) step \(step)")
                last = yielded
                yields += 1
            }
        }
        #expect(yields > 10, "the results changed \(yields) times")

        // A transaction that changes 10,000 records yields once: the next yield is the
        // write after it.
        let ids = (0..<10_000).map { "bulk\($0)" }
        try peer.write { tx throws(ConcordError) in
            for id in ids { try tx.set(RecordRef(collection: "g", id: id), "level", .int(9)) }
        }
        try store.apply(#require(try peer.seal()).delta)
        let bulk = try #require(try await results.next())
        #expect(bulk.count == last.count + 10_000 || Set(bulk.map(\.id)).isSuperset(of: ids))
        try store.set(RecordRef(collection: "g", id: "after"), "level", .int(10))
        let after = try #require(try await results.next())
        #expect(after.first?.id == "after" && after.count == bulk.count + 1)
    }

    @Test func droppingTheDeclarationEndsTheObservationWithItsError() async throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "a", clock: ManualClock())
        try store.declare(Self.declaration)
        var results = store.observe(Query("g")).makeAsyncIterator()
        _ = try await results.next()
        try store.dropDeclaration("g")
        await #expect(throws: ConcordError.self) { _ = try await results.next() }
    }
}
