import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// A local write makes the declared row of a record it created from the values it wrote,
/// without reading them back; any other change to that record in the same transaction
/// (written twice, deleted, created again, a set element, a file, a remote record by the
/// same id) makes the pivot read it back. Either way the tables equal the pivot of the merged
/// state after every transaction (``DeclaredTableTests/check(_:_:)``).
@Suite struct DeclaredWritePathTests {
    /// A declaration with every kind of column, and one that renames and defaults fields
    /// (checked by its own expectations: ``DeclaredTableTests/check(_:_:)`` models plain
    /// declarations).
    static let declarations: [CollectionDeclaration] = [
        try! CollectionDeclaration("g", fields: [
            .init("a", .int, indexed: true), .init("b", .string, indexed: true, searchable: true), .init("d", .double),
            .init("s", .set(.int)), .init("f", .file),
        ]),
        try! SchemaEvolutionTests.declaration(#"""
            {"version": 2, "collections": {"e": {"fields": {
              "tier": {"type": "int", "index": true, "renamedFrom": "a"},
              "b": {"type": "string"},
              "notes": {"type": "string", "default": "none"}}}}}
            """#),
    ]

    @Test(arguments: 1...6)
    func transactionsOfManyWritesKeepTheTablesEqual(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let stores = try (0..<2).map { try Store.temporary(directory, "r\($0)", clock: clock) }
        // The declaration without evolution: the check models plain declarations.
        for store in stores { try store.declare(Self.declarations[0]) }
        let file = try stores.map { try $0.blobs.add(bytes: Array("file".utf8), mediaType: "text/plain") }[0]
        var next = 0
        for step in 0..<40 {
            clock.advance(by: 1)
            let store = random.pick(stores)
            try store.write { tx throws(ConcordError) in
                for _ in 0..<random.int(1...12) {
                    // A new record half the time, else one of the last few (maybe the other
                    // replica's, or written earlier in this transaction).
                    let id: String
                    if random.chance(0.5) {
                        next += 1
                        id = "r\(next)"
                    } else {
                        id = "r\(max(1, next - random.int(0...3)))"
                    }
                    let ref = RecordRef(collection: random.pick(["g", "u"]), id: id)
                    let name = random.pick(["a", "b", "d", "s", "f", "notes", "x"])
                    switch random.int(0...11) {
                    case 0...5: try tx.set(ref, name, DeclaredTableTests.randomScalar(&random))
                    case 6: try tx.delete(ref)
                    case 7: try tx.add(ref, name, .int(Int64(random.int(0...2))))
                    case 8: try tx.create(ref, [name: .scalar(DeclaredTableTests.randomScalar(&random))])
                    case 9: try tx.setFile(ref, name, file)
                    case 10: try tx.put(ref, [name == "b" ? "a" : name: .set([.int(1)]), "b": .scalar(.string("put"))])
                    default: try tx.keepRecord(ref)
                    }
                }
            }
            if random.chance(0.2) { try DeclaredTableTests.exchange(stores) }
            for (index, store) in stores.enumerated() {
                try DeclaredTableTests.check(store, "seed \(seed) step \(step) replica \(index)")
            }
        }
    }

    /// A record created and written in one transaction has the row of exactly its last
    /// values, in every column: written from memory, as the pivot reads it.
    @Test func aNewRecordsRowHoldsItsLastValues() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "w", clock: ManualClock())
        for declaration in Self.declarations { try store.declare(declaration) }
        let game = RecordRef(collection: "g", id: "zelda")
        let evolved = RecordRef(collection: "e", id: "zelda")
        try store.write { tx throws(ConcordError) in
            try tx.set(game, "a", .int(1))
            try tx.set(game, "b", .string("first"))
            try tx.set(game, "a", .int(2))
            try tx.set(game, "d", .int(3))
            try tx.set(evolved, "a", .int(7))
        }
        let rows = try store.reader.read { db in
            (try Row.fetchOne(db, sql: #"SELECT a, b, d, s, f, concord_whole, concord_delete_update FROM "concord_c_g" WHERE id = 'zelda'"#),
             try Row.fetchOne(db, sql: #"SELECT tier, b, notes, concord_whole FROM "concord_c_e" WHERE id = 'zelda'"#))
        }
        let row = try #require(rows.0)
        #expect(row[0] as Int64? == 2 && row[1] as String? == "first" && row[2] as Double? == 3)
        #expect(row[3] as Int64? == nil && row[4] as Data? == nil)
        #expect(row[5] as Int64? == 0, "an integer in a double field is not read back as written")
        #expect(row[6] as Int64? == 0)
        let renamed = try #require(rows.1)
        #expect(renamed[0] as Int64? == 7 && renamed[1] as String? == nil && renamed[2] as String? == "none")
        #expect(renamed[3] as Int64? == 0, "a defaulted field the record lacks is not whole")
    }
}
