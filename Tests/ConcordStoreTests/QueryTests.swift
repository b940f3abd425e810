import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import Testing

/// The query engine against a reference evaluation in Swift: random records (strings with
/// NUL, NaN, ±0, the integers at the ends of the range, sets, nulls, values that do not fit
/// their type), random filters, orders and windows.
@Suite struct QueryTests {
    static let declaration = try! CollectionDeclaration("q", fields: [
        .init("s", .string, indexed: true), .init("c", .string, collation: .nocase), .init("n", .int, indexed: true),
        .init("d", .double), .init("b", .bool), .init("y", .bytes), .init("tags", .set(.string)), .init("nums", .set(.int)),
    ])
    static let strings = ["", "a", "A", "ab", "aB", "b", "a\0", "a\0b", "\0", "é", "e\u{301}", "zz", "Ze", "zelda"]
    static let ints: [Int64] = [.min, -1, 0, 1, 2, .max, (1 << 53) + 1]
    static let doubles: [Double] = [-0.0, 0.0, 1.5, -1.5, .infinity, -.infinity, 1e308, .leastNonzeroMagnitude]

    static func value(_ field: String, _ random: inout SeededGenerator, query: Bool = false) -> ScalarValue {
        switch field {
        case "s": .string(random.pick(strings))
        case "c": .string(random.pick(strings.filter { !$0.contains("\0") }))
        case "n", "nums": .int(random.pick(ints))
        case "d": .double(query ? random.pick(doubles) : random.pick(doubles + [.nan]))
        case "b": .bool(random.chance(0.5))
        case "y": .bytes(random.pick([[], [0], [0, 1], [1], [255]]))
        default: .string(random.pick(["rpg", "RPG", "x\0", ""]))
        }
    }

    /// A column's value as the reference sees it.
    enum Cell: Equatable {
        case int(Int64), double(Double), bytes([UInt8])
    }

    static func cell(_ field: String, _ value: FieldValue?) -> Cell? {
        switch (field, value) {
        case let ("s", .scalar(.string(text))?), let ("c", .scalar(.string(text))?): .bytes(Array(text.utf8))
        case let ("n", .scalar(.int(number))?): .int(number)
        case let ("d", .scalar(.double(number))?): number.isNaN ? nil : .double(number)
        case let ("b", .scalar(.bool(flag))?): .int(flag ? 1 : 0)
        case let ("y", .scalar(.bytes(bytes))?): .bytes(bytes)
        case let ("tags", .set(elements)?), let ("nums", .set(elements)?): .int(Int64(elements.count))
        default: nil
        }
    }

    static func queryCell(_ field: String, _ value: ScalarValue) -> Cell {
        cell(field, .scalar(value))!
    }

    /// -1, 0, 1 as SQLite orders two values of one column.
    static func compare(_ a: Cell, _ b: Cell, nocase: Bool) -> Int {
        switch (a, b) {
        case let (.int(x), .int(y)): x < y ? -1 : x == y ? 0 : 1
        case let (.double(x), .double(y)): x < y ? -1 : x == y ? 0 : 1
        case let (.bytes(x), .bytes(y)):
            nocase ? compareBytes(x.map(lower), y.map(lower)) : compareBytes(x, y)
        default:
            { Issue.record("cells of two types"); return 0 }()
        }
    }

    static func lower(_ byte: UInt8) -> UInt8 { (65...90).contains(byte) ? byte + 32 : byte }

    static func compareBytes(_ x: [UInt8], _ y: [UInt8]) -> Int {
        x.lexicographicallyPrecedes(y) ? -1 : x == y ? 0 : 1
    }

    /// Whether a record of `fields`, whose open conflicts are of `conflicts` kinds, passes.
    static func matches(_ filter: Query.Filter, _ fields: [(name: String, value: FieldValue)], conflicts: [Conflict.Kind] = []) -> Bool {
        func value(_ name: String) -> FieldValue? { fields.first { $0.name == name }?.value }
        switch filter {
        case let .field(name, comparison, query):
            guard let cell = cell(name, value(name)) else { return false }
            let order = compare(cell, queryCell(name, query), nocase: name == "c")
            switch comparison {
            case .equal: return order == 0
            case .notEqual: return order != 0
            case .less: return order < 0
            case .lessOrEqual: return order <= 0
            case .greater: return order > 0
            case .greaterOrEqual: return order >= 0
            }
        case let .isIn(name, values):
            guard let cell = cell(name, value(name)) else { return false }
            return values.contains { compare(cell, queryCell(name, $0), nocase: name == "c") == 0 }
        case let .prefix(name, prefix):
            guard case let .bytes(bytes)? = cell(name, value(name)) else { return false }
            return bytes.starts(with: Array(prefix.utf8))
        case let .contains(name, element):
            guard case let .set(elements)? = value(name) else { return false }
            return elements.contains(element)
        case let .isNull(name): return cell(name, value(name)) == nil
        case .matches: return false
        case let .conflict(kind): return kind.map(conflicts.contains) ?? !conflicts.isEmpty
        case let .and(filters): return filters.allSatisfy { matches($0, fields, conflicts: conflicts) }
        case let .or(filters): return filters.contains { matches($0, fields, conflicts: conflicts) }
        case let .not(filter): return !matches(filter, fields, conflicts: conflicts)
        }
    }

    static let scalarFields = ["s", "c", "n", "d", "b", "y"]

    static func randomFilter(_ random: inout SeededGenerator, depth: Int = 0) -> Query.Filter {
        switch random.int(0...(depth < 3 ? 9 : 5)) {
        case 0, 1, 2:
            let field = random.pick(scalarFields)
            return .field(field, random.pick(Query.Comparison.allCases), value(field, &random, query: true))
        case 3:
            let field = random.pick(scalarFields)
            return .isIn(field, (0..<random.int(0...3)).map { _ in value(field, &random, query: true) })
        case 4:
            if random.chance(0.5) { return .prefix("s", random.pick(strings)) }
            let set = random.pick(["tags", "nums"])
            return .contains(set, value(set, &random))
        case 5:
            if random.chance(0.3) { return .conflict(random.pick([nil, .deleteUpdate, .fileFork])) }
            return .isNull(random.pick(scalarFields + ["tags", "nums"]))
        case 6, 7: return .and((0..<random.int(0...3)).map { _ in randomFilter(&random, depth: depth + 1) })
        case 8: return .or((0..<random.int(0...3)).map { _ in randomFilter(&random, depth: depth + 1) })
        default: return .not(randomFilter(&random, depth: depth + 1))
        }
    }

    @Test(arguments: 1...12)
    func queriesAgreeWithAReferenceEvaluation(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "q", clock: ManualClock())
        try store.declare(Self.declaration)
        for index in 0..<40 {
            var fields: [String: FieldWrite] = [:]
            for field in Self.scalarFields where random.chance(0.8) {
                // Now and then a value of another type: kept as written, null in the column.
                fields[field] = .scalar(random.chance(0.1) ? .string("other") : Self.value(field, &random))
            }
            for field in ["tags", "nums"] where random.chance(0.7) {
                fields[field] = .set((0..<random.int(0...3)).map { _ in Self.value(field, &random) })
            }
            try store.put(RecordRef(collection: "q", id: "r\(index)"), fields)
        }
        // Open conflicts on some records: another replica deletes records this one updates,
        // and attaches other files to the fields this one attaches files to, concurrently.
        let other = try Store.temporary(directory, "o", clock: ManualClock())
        try other.apply(try #require(try store.seal()).delta)
        let files = try (0..<2).map { index in try [store, other].map { try $0.blobs.add(bytes: Array("cover \(index)".utf8)) }[0] }
        for index in 0..<40 where random.chance(0.4) {
            let ref = RecordRef(collection: "q", id: "r\(index)")
            if random.chance(0.5) {
                try other.delete(ref)
                try store.set(ref, "n", .int(Int64(index)))
            } else {
                try other.write { tx throws(ConcordError) in try tx.setFile(ref, "cover", files[0]) }
                try store.write { tx throws(ConcordError) in try tx.setFile(ref, "cover", files[1]) }
            }
        }
        if let delta = try other.seal()?.delta { try store.apply(delta) }
        var conflicts: [String: [Conflict.Kind]] = [:]
        for conflict in try store.conflicts() { conflicts[conflict.ref.id, default: []].append(conflict.kind) }
        #expect(conflicts.values.contains { $0.contains(.deleteUpdate) } && conflicts.values.contains { $0.contains(.fileFork) },
                "seed \(seed): both kinds of conflict are open")
        let records = try store.records(in: "q")
        for _ in 0..<150 {
            var query = Query("q", filter: random.chance(0.9) ? Self.randomFilter(&random) : nil)
            for _ in 0..<random.int(0...2) { query = query.order(by: random.pick(Self.scalarFields), descending: random.chance(0.5)) }
            if random.chance(0.4) { query.limit = random.int(0...10) }
            if random.chance(0.3) { query.offset = random.int(0...10) }
            let precedes: ((id: String, fields: [(name: String, value: FieldValue)]), (id: String, fields: [(name: String, value: FieldValue)])) -> Bool = { a, b in
                for key in query.orders {
                    let x = Self.cell(key.field, a.fields.first { $0.name == key.field }?.value)
                    let y = Self.cell(key.field, b.fields.first { $0.name == key.field }?.value)
                    var order: Int
                    switch (x, y) {
                    case (nil, nil): order = 0
                    case (nil, _): order = -1
                    case (_, nil): order = 1
                    case let (x?, y?): order = Self.compare(x, y, nocase: key.field == "c")
                    }
                    if key.descending { order = -order }
                    if order != 0 { return order < 0 }
                }
                return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
            }
            let matching = records.filter { record in
                query.filter.map { filter in Self.matches(filter, record.fields, conflicts: conflicts[record.id] ?? []) } ?? true
            }
            let count = matching.count
            var expected = matching.sorted(by: precedes)
            if random.chance(0.3), let cursor = records.randomElement(using: &random) {
                // A cursor: any visible record, matching or not; the page is what follows it.
                query.after = cursor.id
                expected = expected.filter { precedes(cursor, $0) }
            }
            let window = Array(expected.dropFirst(query.offset ?? 0).prefix(query.limit ?? .max))
            let result = try store.query(query)
            #expect(result.map { $0.id } == window.map { $0.id }, "seed \(seed): \(query)")
            #expect(try store.count(query) == count, "seed \(seed): count of \(query): \(expected.map(\.id))")
        }
    }

    @Test func namingAnUndeclaredFieldOrTheWrongTypeIsAnError() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "q", clock: ManualClock())
        try store.declare(Self.declaration)
        let cases: [(Query, ConcordError.Code)] = [
            (Query("q", filter: .field("missing", .equal, .int(1))), .unknownField),
            (Query("undeclared"), .unknownField),
            (Query("q", filter: .field("n", .equal, .string("1"))), .typeMismatch),
            (Query("q", filter: .field("d", .less, .double(.nan))), .typeMismatch),
            (Query("q", filter: .field("d", .less, .int((1 << 53) + 1))), .typeMismatch),
            (Query("q", filter: .field("s", .equal, .null)), .typeMismatch),
            (Query("q", filter: .contains("s", .string("a"))), .typeMismatch),
            (Query("q", filter: .prefix("n", "1")), .typeMismatch),
            (Query("q", filter: .field("tags", .equal, .string("rpg"))), .typeMismatch),
            (Query("q", filter: .contains("nums", .string("1"))), .typeMismatch),
            (Query("q", orders: [.init("tags")]), .typeMismatch),
            (Query("q", orders: [.init("nope")]), .unknownField),
            (Query("q").after("no such record"), .notFound),
        ]
        for (query, code) in cases {
            #expect(throws: ConcordError.self, "\(query)") { try store.query(query) }
            do { _ = try store.query(query) } catch { #expect(error.code == code, "\(query): \(error)") }
        }
    }

    @Test func searchableFieldsMatchFullTextQueries() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "q", clock: ManualClock())
        try store.declare(CollectionDeclaration("games", fields: [.init("title", .string, searchable: true), .init("level", .int)]))
        try store.put(RecordRef(collection: "games", id: "zelda"), ["title": .scalar(.string("The Legend of Zelda"))])
        try store.put(RecordRef(collection: "games", id: "link"), ["title": .scalar(.string("Zelda II: The Adventure of Link"))])
        try store.put(RecordRef(collection: "games", id: "tetris"), ["title": .scalar(.string("Tetris"))])
        func ids(_ words: String) throws -> [String] { try store.query(Query("games", filter: .matches("title", words))).map(\.id) }
        #expect(try ids("zelda") == ["link", "zelda"])
        #expect(try ids("adventure link") == ["link"])
        #expect(try ids("tet*") == ["tetris"])
        try store.set(RecordRef(collection: "games", id: "tetris"), "title", .string("Tetris Zelda Edition"))
        try store.delete(RecordRef(collection: "games", id: "link"))
        #expect(try ids("zelda") == ["tetris", "zelda"])
        #expect(try store.count(Query("games", filter: .matches("title", "zelda") && .not(.matches("title", "legend")))) == 1)
        #expect(throws: ConcordError.self) { try ids("\"unbalanced") }
        do { _ = try store.query(Query("games", filter: .matches("title", "\"unbalanced"))) } catch { #expect(error.code == .invalidQuery) }
        #expect(throws: ConcordError.self) { try store.query(Query("games", filter: .matches("level", "1"))) }
        do { _ = try store.query(Query("games", filter: .matches("level", "1"))) } catch { #expect(error.code == .typeMismatch) }
    }

    struct Game: DeclaredRecord {
        static let collection = "games"
        static let indexed = ["level"]
        static let searchable = ["title"]
        var id: String
        var title: String
        var level: Int
        var rating: Double?
        var tags: Set<String>
        var released: Date?
        var cover: FileRef?
        var notes: [String: Int]?
    }

    @Test func aStoredRecordTypeDeclaresItsCollection() throws {
        let declaration = try CollectionDeclaration(Game.self, indexed: Game.indexed, searchable: Game.searchable)
        let fields = declaration.fields.map { "\($0.name): \($0.type)\($0.indexed ? " indexed" : "")\($0.searchable ? " searched" : "")" }
        #expect(fields == ["cover: file", "level: int indexed", "notes: string", "rating: double", "released: date", "tags: set<string>", "title: string searched"])
        #expect(throws: ConcordError.self) { try CollectionDeclaration(Game.self, indexed: ["nope"]) }
    }

    @Test func typedResultsComeBackAsStoredRecords() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "q", clock: ManualClock())
        let date = Date(timeIntervalSinceReferenceDate: 1_000)
        try store.save(Game(id: "zelda", title: "Zelda", level: 5, tags: ["rpg"], released: date))
        try store.save(Game(id: "tetris", title: "Tetris", level: 2, tags: ["puzzle"]))
        try store.save(Game(id: "mana", title: "Mana", level: 4, rating: 4.5, tags: ["rpg", "action"]))
        try store.declare(Game.self)
        let games = try store.query(Game.self, Query("games").filter(.contains("tags", .string("rpg"))).order(by: "level", descending: true))
        #expect(games.map(\.id) == ["zelda", "mana"])
        #expect(games.first?.released == date)
        #expect(try store.count(Query("games").filter(.field("level", .greaterOrEqual, .int(2)))) == 3)
        #expect(try store.query(Game.self, Query("games").filter(.field("released", .less, .date(date.addingTimeInterval(1))))).map(\.id) == ["zelda"])
        #expect(try store.query(Game.self, Query("games").filter(.matches("title", "mana"))).map(\.id) == ["mana"])
    }

    /// Key paths name the fields (checked by the compiler), and give the same records as
    /// the same query with names; a computed property names no field: `unknownField`.
    @Test func keyPathsNameTheFields() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "q", clock: ManualClock())
        let date = Date(timeIntervalSinceReferenceDate: 1_000)
        try store.save(Game(id: "zelda", title: "Zelda", level: 5, tags: ["rpg"], released: date, notes: ["a": 1]))
        try store.save(Game(id: "tetris", title: "Tetris", level: 2, tags: ["puzzle"]))
        try store.save(Game(id: "mana", title: "Mana", level: 4, rating: 4.5, tags: ["rpg", "action"]))
        try store.declare(Game.self)
        let typed = TypedQuery(Game.self).filter(\.level, .greaterOrEqual, 4).order(by: \.title, descending: true)
        #expect(typed.query == Query("games").filter(.field("level", .greaterOrEqual, .int(4))).order(by: "title", descending: true))
        #expect(try store.query(typed).map(\.id) == ["zelda", "mana"])
        #expect(try store.query(TypedQuery(Game.self).filter(\.rating, .greater, 4.0)).map(\.id) == ["mana"])
        #expect(try store.query(TypedQuery(Game.self).filter(\.released, .equal, date)).map(\.id) == ["zelda"])
        #expect(try store.query(TypedQuery(Game.self).filter(isNull: \.rating).order(by: \.level)).map(\.id) == ["tetris", "zelda"])
        #expect(try store.count(TypedQuery(Game.self).filter(\.title, in: ["Mana", "Tetris"])) == 2)
        #expect(TypedQuery(Game.self).order(by: \.tags).query.orders.map(\.field) == ["tags"])
        #expect(TypedQuery(Game.self).order(by: \.cover).query.orders.map(\.field) == ["cover"])
        #expect(throws: ConcordError.self) { try store.query(TypedQuery(Game.self).filter(\.shout, .equal, "ZELDA")) }
    }
}

extension QueryTests.Game {
    /// Computed: stored in no field.
    var shout: String { title.uppercased() }
}
