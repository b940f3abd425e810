import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import SchemaEvolutionModels
import Testing

/// The schema-file evolution keys, the declared table and typed loads under them, and the
/// rules of declaring a newer version (README, "Evolving your model").
@Suite struct SchemaEvolutionTests {
    let directory = TemporaryDirectory("evolution")

    static func declaration(_ json: String) throws -> CollectionDeclaration {
        try #require(try CollectionDeclaration.schema(json: Array(json.utf8)).first)
    }

    static let march = Date(timeIntervalSince1970: 1_709_251_200)  // 2024-03-01 UTC

    @Test func theSchemaFileCarriesItsVersionAndChangesAndRoundTrips() throws {
        let games = try Self.declaration(GameSchema.version2)
        #expect(games.version == 2)
        #expect(games.fields.map(\.name) == ["genres", "notes", "rating", "released", "tier", "title"])
        #expect(games.evolution.retired.map(\.name) == ["tags"])
        #expect(games.evolution.changes["tier"]?.renamedFrom == "level")
        #expect(games.storedName(of: try #require(games.field("tier"))) == "level")
        #expect(games.evolution.changes["notes"]?.defaultValue == .scalar(.string("")))
        #expect(games.evolution.changes["released"]?.convertedFrom == .init(from: .string, format: "yyyy-MM-dd"))
        let defaults = try Self.declaration(#"{"version": 2, "collections": {"d": {"fields": {"one": {"type": "int", "default": 1}, "zero": {"type": "int", "default": 0}, "yes": {"type": "bool", "default": true}, "half": {"type": "double", "default": 0.5}, "big": {"type": "int", "default": 9007199254740993}, "set": {"type": "set<int>", "default": [1, 2]}}}}}"#)
        #expect(defaults.evolution.changes.mapValues { $0.defaultValue } == [
            "one": .scalar(.int(1)), "zero": .scalar(.int(0)), "yes": .scalar(.bool(true)), "half": .scalar(.double(0.5)),
            "big": .scalar(.int(9_007_199_254_740_993)), "set": .set([.int(1), .int(2)]),
        ])
        let again = try #require(try CollectionDeclaration.schema(json: CollectionDeclaration.schemaJSON([games])).first)
        #expect(again == games)
        for (bad, why) in [
            (#""rating": {"type": "double", "convertedFrom": {"type": "bytes"}}"#, "no conversion from bytes"),
            (#""notes": {"type": "string", "default": 3}"#, "default"),
            (#""count": {"type": "int", "default": true}"#, "default"),
            (#""flag": {"type": "bool", "default": 1}"#, "default"),
            (#""tags": {"type": "set<string>", "retired": true, "index": true}"#, "retired"),
            (#""tier": {"type": "int", "renamedFrom": "title"}, "title": {"type": "string"}"#, "stored as"),
            (#""when": {"type": "date", "convertedFrom": {"type": "int", "format": "yyyy"}}"#, "format"),
        ] {
            let json = #"{"version": 2, "collections": {"games": {"fields": {"# + bad + "}}}}"
            #expect { _ = try CollectionDeclaration.schema(json: Array(json.utf8)) } throws: { error in
                (error as? ConcordError)?.code == .invalidDeclaration && (error as? ConcordError)?.message.contains(why) == true
            }
        }
    }

    /// Records written by version 1, read through version 2's declared table.
    @Test func theDeclaredTableReadsRenamedConvertedAndDefaultedFields() throws {
        let store = try Store.temporary(directory, "table", clock: ManualClock())
        try store.save(GameV1(id: "zelda", title: "Zelda", level: 5, rating: 4, released: "2024-03-01", tags: ["rpg"]))
        try store.save(GameV1(id: "odd", title: "Odd", level: 1, rating: 2, released: "someday", tags: []))
        try store.put(RecordRef(collection: "games", id: "noted"), ["title": .scalar(.string("Noted")), "notes": .scalar(.string("fun"))])
        try store.declare(try Self.declaration(GameSchema.version1))
        try store.declare(try Self.declaration(GameSchema.version2))
        let ids = { (filter: Query.Filter) throws -> [String] in try store.query(Query("games", filter: filter).order(by: "title")).map(\.id) }
        #expect(try ids(.field("tier", .greater, .int(3))) == ["zelda"])
        #expect(try ids(.field("rating", .equal, .double(4))) == ["zelda"])
        #expect(try ids(.field("released", .equal, .date(Self.march))) == ["zelda"])
        // A value that fails its conversion is null, and kept as written; not the default.
        #expect(try ids(.isNull("released")) == ["noted", "odd"])
        #expect(try store.record(RecordRef(collection: "games", id: "odd"))?.first { $0.name == "released" }?.value == .scalar(.string("someday")))
        #expect(try store.unreadValues(in: "games") == ["released": 1])
        // Records that lack `notes` read its default; one that has it, its value.
        #expect(try ids(.field("notes", .equal, .string(""))) == ["odd", "zelda"])
        #expect(try ids(.field("notes", .equal, .string("fun"))) == ["noted"])
        // The retired field is no column, and is kept.
        #expect(throws: ConcordError.self) { try ids(.contains("tags", .string("rpg"))) }
        #expect(try store.record(RecordRef(collection: "games", id: "zelda"))?.contains { $0.name == "tags" } == true)
        // `level` is still the stored name: no field was rewritten.
        #expect(try store.record(RecordRef(collection: "games", id: "zelda"))?.contains { $0.name == "tier" } == false)
    }

    @Test func aNewerVersionIsAcceptedAndAnIncompatibleOneRefused() throws {
        let store = try Store.temporary(directory, "versions", clock: ManualClock())
        try store.declare(try Self.declaration(GameSchema.version2))
        func refused(_ json: String, _ why: String) throws {
            #expect { try store.declare(try Self.declaration(json)) } throws: { error in
                (error as? ConcordError)?.code == .incompatibleSchema && (error as? ConcordError)?.message.contains(why) == true
            }
        }
        try refused(GameSchema.version1, "would go backwards")
        // A type change with no conversion; one whose conversion is not registered.
        try refused(#"{"version": 3, "collections": {"games": {"fields": {"rating": {"type": "string"}}}}}"#, "changes type from double to string with no conversion")
        try refused(#"{"version": 3, "collections": {"games": {"fields": {"level": {"type": "string"}}}}}"#, "declare \"convertedFrom\": {\"type\": \"int\"}")
        try refused(#"{"version": 3, "collections": {"games": {"fields": {"genres": {"type": "string"}}}}}"#, "no conversion changes a field's kind")
        #expect(try store.declaration(of: "games")?.version == 2)
        // The same stored field converted, a retired field declared again, a field added.
        try store.declare(try Self.declaration(#"""
            {"version": 3, "collections": {"games": {"fields": {"level": {"type": "string", "convertedFrom": {"type": "int"}},
             "tags": {"type": "set<string>"}, "rating": {"type": "double"}, "extra": {"type": "bool"}}}}}
            """#))
        #expect(try store.declaration(of: "games")?.version == 3)
    }

    @Test func aTypedLoadReadsWhatItCanAndAnOldSaveBlanksNothing() throws {
        let clock = ManualClock()
        let old = try Store.temporary(directory, "old", clock: clock)
        let new = try Store.temporary(directory, "new", clock: clock)
        try old.declare(try Self.declaration(GameSchema.version1))
        try new.declare(try Self.declaration(GameSchema.version2))
        try old.save(GameV1(id: "zelda", title: "Zelda", level: 5, rating: 4, released: "2024-03-01", tags: ["rpg"]))
        try exchange([old, new])
        // Version 2 reads version 1's record under its names, converted and defaulted.
        let loaded = try #require(try new.loadReporting(GameV2.self, id: "zelda"))
        #expect(loaded.value == GameV2(id: "zelda", title: "Zelda", tier: 5, rating: 4, released: Self.march, notes: "", genres: []))
        #expect(loaded.isComplete)
        // Version 2 edits: a double rating, a date, notes, genres; `tier` goes to `level`.
        var edited = loaded.value
        edited.rating = 4.5
        edited.notes = "classic"
        edited.genres = ["adventure"]
        #expect(try new.save(edited) == ["genres", "notes", "rating"])
        edited.tier = 6
        #expect(try new.save(edited) == ["level"])
        try exchange([old, new])
        // Version 1 loads it: the double rating is reported and kept, the rest read.
        let seen = try #require(try old.loadReporting(GameV1.self, id: "zelda"))
        #expect(seen.value.level == 6 && seen.value.title == "Zelda" && seen.value.tags == ["rpg"])
        #expect(seen.unread.map(\.field) == ["rating"])
        #expect(seen.unread.first?.reason == .unexpectedType && seen.unread.first?.value == .scalar(.double(4.5)))
        // Version 1 saves an edit of the title: it writes the title only, never the
        // placeholder rating, nor the fields it does not know.
        var renamed = seen.value
        renamed.title = "Zelda II"
        #expect(try old.save(renamed) == ["title"])
        try exchange([old, new])
        let after = try #require(try new.loadReporting(GameV2.self, id: "zelda"))
        #expect(after.value == GameV2(id: "zelda", title: "Zelda II", tier: 6, rating: 4.5, released: Self.march, notes: "classic", genres: ["adventure"]))
        // Declared from the type itself, evolved, it is the schema file's declaration.
        let fromType = try CollectionDeclaration(GameV2.self, indexed: ["tier"]).evolved(version: 2, changes: [
            "tier": .init(renamedFrom: "level"), "notes": .init(defaultValue: .scalar(.string(""))),
            "released": .init(convertedFrom: .init(from: .string, format: "yyyy-MM-dd")),
        ], retired: [.init("tags", .set(.string))])
        #expect(fromType.fields.map(\.name) == ["genres", "notes", "rating", "released", "tier", "title"])
        #expect(fromType.evolution == (try Self.declaration(GameSchema.version2)).evolution)
        // An old version that changes the property on purpose does write it.
        renamed.rating = 3
        #expect(try old.save(renamed) == ["rating"])
        #expect(try old.load(GameV2.self, id: "zelda")?.rating == 3)
    }

    /// A typed load takes the declarations the store keeps only while the file's schema is
    /// the one they were read under (its version is read with the record): a declaration
    /// made through another connection (another process) is seen at the next load.
    @Test func aTypedLoadSeesADeclarationMadeThroughAnotherConnection() throws {
        let store = try Store.temporary(directory, "shared", clock: ManualClock())
        try store.declare(try Self.declaration(GameSchema.version1))
        try store.save(GameV1(id: "zelda", title: "Zelda", level: 5, rating: 4, released: "2024-03-01", tags: ["rpg"]))
        // Under version 1, version 2's `tier` (stored as `level`) is missing.
        let before = try #require(try store.loadReporting(GameV2.self, id: "zelda"))
        #expect(before.unread.map(\.field).contains("tier"))
        let other = try Store(path: store.path)
        try other.declare(try Self.declaration(GameSchema.version2))
        let after = try #require(try store.loadReporting(GameV2.self, id: "zelda"))
        #expect(after.value == GameV2(id: "zelda", title: "Zelda", tier: 5, rating: 4, released: Self.march, notes: "", genres: []))
        #expect(after.isComplete)
    }

    @Test func aFailedConversionIsReportedAndKeptAndSetElementsOfAnotherKindStay() throws {
        let store = try Store.temporary(directory, "kept", clock: ManualClock())
        try store.declare(try Self.declaration(GameSchema.version2))
        let ref = RecordRef(collection: "games", id: "odd")
        try store.put(ref, [
            "title": .scalar(.string("Odd")), "level": .scalar(.int(1)), "rating": .scalar(.int(2)),
            "released": .scalar(.string("someday")), "genres": .set([.string("rpg"), .int(7)]),
        ])
        let loaded = try #require(try store.loadReporting(GameV2.self, id: "odd"))
        #expect(loaded.value.released == nil && loaded.value.genres == ["rpg"] && loaded.value.rating == 2)
        #expect(loaded.unread.map(\.field).sorted() == ["genres", "released"])
        #expect(loaded.unread.first { $0.field == "released" }?.reason == .conversionFailed)
        #expect(loaded.unread.first { $0.field == "genres" }?.value == .set([.int(7)]))
        var edited = loaded.value
        edited.genres.insert("puzzle")
        edited.notes = "x"
        #expect(try store.save(edited) == ["genres", "notes"])
        let fields = try #require(try store.record(ref))
        #expect(fields.first { $0.name == "released" }?.value == .scalar(.string("someday")))
        #expect(fields.first { $0.name == "genres" }?.value == .set([.int(7), .string("puzzle"), .string("rpg")]))
        // A record that cannot fill a property it lacks still loads, reporting it.
        try store.put(RecordRef(collection: "games", id: "bare"), ["title": .scalar(.string("Bare"))])
        let bare = try #require(try store.loadReporting(GameV2.self, id: "bare"))
        #expect(bare.unread.map(\.field).sorted() == ["rating", "tier"])
        #expect(bare.unread.allSatisfy { $0.reason == .missing } && bare.value.notes == "")
        #expect(try store.save(bare.value).isEmpty)
    }
}
