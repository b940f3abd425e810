import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Declared tables stay equal to the pivot of the merged state, row for row, whatever
/// changes it: local writes, deletes, set operations, files, remote applies, snapshot joins,
/// purges, identity changes, and declarations made, changed and dropped in between.
@Suite struct DeclaredTableTests {
    static let collections = ["g", "Games ☃", "u"]
    static let names = ["s", "n", "d", "b", "t", "f", "Odd name", "id"]

    static func randomDeclaration(_ collection: String, _ random: inout SeededGenerator) throws -> CollectionDeclaration {
        let types: [CollectionDeclaration.FieldType] = [.string, .int, .double, .bool, .bytes, .date, .file,
                                                        .set(.string), .set(.int), .set(.double)]
        var fields: [CollectionDeclaration.Field] = []
        for name in names where random.chance(0.7) {
            let type = random.pick(types)
            fields.append(.init(name, type, indexed: random.chance(0.5), searchable: type == .string && random.chance(0.5),
                                collation: type == .string && random.chance(0.3) ? .nocase : nil))
        }
        return try CollectionDeclaration(collection, fields: fields)
    }

    /// `old` with a field added or a field's index added or removed.
    static func extended(_ old: CollectionDeclaration, _ random: inout SeededGenerator) throws -> CollectionDeclaration {
        var fields = old.fields
        let missing = names.filter { old.field($0) == nil }
        if let name = missing.randomElement(using: &random), random.chance(0.7) {
            let types: [CollectionDeclaration.FieldType] = [.string, .int, .double, .date, .file, .set(.string), .set(.int)]
            fields.append(.init(name, random.pick(types), indexed: random.chance(0.5)))
        } else if !fields.isEmpty {
            let index = random.int(0...(fields.count - 1))
            fields[index].indexed.toggle()
        }
        return try CollectionDeclaration(old.collection, fields: fields)
    }

    static func randomScalar(_ random: inout SeededGenerator) -> ScalarValue {
        switch random.int(0...9) {
        case 0: .null
        case 1: .bool(random.chance(0.5))
        case 2, 3: .int(Int64(random.int(-3...3)))
        case 4: .double(random.pick([0.5, -0.0, 0.0, .nan, 2.0, -1e300]))
        case 5, 6: .string(random.pick(["a", "B", "ab", "", "é", "2001-01-01T00:00:10Z"]))
        case 7: .int(random.pick([Int64.max, Int64.min, 1 << 53 + 1]))
        default: .bytes(random.pick([[], [0], [1, 2]]))
        }
    }

    @Test(arguments: 1...10)
    func declaredTablesEqualThePivotOfTheMergedState(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let stores = try (0..<3).map { try Store.temporary(directory, "r\($0)", clock: clock) }
        let files = try (1...3).map { index in
            let bytes = Array("file \(index)".utf8)
            return try stores.map { try $0.blobs.add(bytes: bytes, mediaType: index == 2 ? nil : "text/plain") }[0]
        }
        var counts: [String: Int] = [:]
        for step in 0..<160 {
            clock.advance(by: Int64(random.int(0...2)))
            let store = random.pick(stores)
            let ref = RecordRef(collection: random.pick(Self.collections), id: random.pick(["x", "y", "z", "w"]))
            let name = random.pick(Self.names)
            let kind = random.int(0...19)
            switch kind {
            case 0...3: try store.set(ref, name, Self.randomScalar(&random))
            case 4:
                var fields: [String: FieldWrite] = [name: .set((0..<random.int(0...3)).map { _ in Self.randomScalar(&random) })]
                fields[random.pick(Self.names)] = .scalar(Self.randomScalar(&random))
                try store.put(ref, fields)
            case 5: try store.add(ref, name, Self.randomScalar(&random))
            case 6: try store.remove(ref, name, Self.randomScalar(&random))
            case 7: try store.write { tx throws(ConcordError) in try tx.setFile(ref, name, random.pick(files)) }
            case 8: try store.delete(ref)
            case 9: try store.keepRecord(ref)
            case 10: try store.create(ref, [name: .scalar(Self.randomScalar(&random))])
            case 11, 12: try Self.exchange(stores)
            case 13:
                // A snapshot joined: another replica's state, taken after everything was sealed.
                let other = random.pick(stores)
                if other !== store {
                    try Self.exchange(stores)
                    try store.join(snapshot: other.exportSnapshot(), appliedSeqs: [:])
                }
            case 14:
                // A purge of every dead record, once every replica has seen the deletions.
                try Self.exchange(stores)
                try Self.exchange(stores)
                let dead = try store.deadRecords().map(\.ref)
                try store.purge(dead, within: store.versionVector())
            case 15:
                try Self.exchange(stores)
                try store.adoptIdentity(ReplicaID(high: 0xfeed, low: UInt64(step)), sharedThrough: store.sealedSeq())
            case 16, 17:
                let collection = random.pick(Self.collections.dropLast())
                if random.chance(0.5), let old = try store.declaration(of: collection) {
                    // A field or an index added: the table altered in place.
                    try store.declare(Self.extended(old, &random))
                } else {
                    try store.declare(Self.randomDeclaration(collection, &random))
                }
            case 18:
                try store.dropDeclaration(random.pick(Self.collections))
            default:
                try store.delete(ref)
                try Self.exchange(stores)
            }
            counts["\(kind)", default: 0] += 1
            for (index, checked) in stores.enumerated() {
                try Self.check(checked, "seed \(seed) step \(step) (operation \(kind)) replica \(index)")
            }
        }
        try Self.exchange(stores)
        try Self.exchange(stores)
        let dumps = try stores.map { try $0.canonicalDump() }
        #expect(Set(dumps).count == 1, "replicas with different declarations converge")
    }

    /// Batches sealed small carry a record's fields and its liveness apart (a later write's
    /// liveness goes with the later batch): each batch applied on its own must still leave
    /// the declared table equal to the merged state, though only fields changed. Deletes
    /// included: a field removed by a delete before the cut and written again after it goes
    /// with the later batch (`BoundedSealRegressionTests`).
    @Test(arguments: 1...6)
    func smallBatchesAppliedOneByOneKeepTheTablesEqual(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let writer = try Store.temporary(directory, "w", clock: clock)
        let reader = try Store.temporary(directory, "r", clock: clock)
        let declaration = try CollectionDeclaration("g", fields: [.init("a", .int), .init("b", .string), .init("s", .set(.int))])
        try writer.declare(declaration)
        try reader.declare(declaration)
        for round in 0..<30 {
            for _ in 0..<random.int(1...6) {
                clock.advance(by: 1)
                let ref = RecordRef(collection: "g", id: random.pick(["x", "y", "z"]))
                switch random.int(0...4) {
                case 0, 1: try writer.set(ref, random.pick(["a", "b"]), random.chance(0.5) ? .int(Int64(random.int(0...9))) : .string("v\(round)"))
                case 2: try writer.add(ref, "s", .int(Int64(random.int(0...3))))
                case 3: try writer.remove(ref, "s", .int(Int64(random.int(0...3))))
                default: try writer.delete(ref)
                }
            }
            while let delta = try writer.seal(maxSlots: random.int(1...3))?.delta {
                try reader.apply(delta)
                try Self.check(reader, "seed \(seed) round \(round) batch \(delta.seq)")
            }
        }
        #expect(try reader.canonicalDump() == writer.canonicalDump())
    }

    /// Every store seals; every delta reaches every other store, each once its dependencies
    /// have; when some wait for a dependency no delta carries (a snapshot joined after a
    /// change of identity), the store joins the others' snapshots instead.
    static func exchange(_ stores: [Store]) throws {
        var deltas: [Delta] = []
        for store in stores { if let delta = try store.seal()?.delta { deltas.append(delta) } }
        for store in stores {
            var waiting = deltas.filter { $0.origin != store.replicaID }
            while !waiting.isEmpty {
                var left: [Delta] = []
                for delta in waiting {
                    do {
                        try store.apply(delta)
                    } catch {
                        guard error.code == .notReady else { throw error }
                        left.append(delta)
                    }
                }
                if left.count == waiting.count {
                    // A dependency no delta carries (a snapshot joined after a change of
                    // identity): a state join needs no order.
                    for other in stores where other !== store { try store.join(snapshot: other.exportSnapshot()) }
                    break
                }
                waiting = left
            }
        }
    }

    /// Compares every declared table of `store` with the pivot of its merged state, computed
    /// here from the public reads.
    static func check(_ store: Store, _ context: String) throws {
        for declaration in try store.declarations() {
            var expectedRows: [String: [String: DatabaseValue]] = [:]
            var expectedElements: [[DatabaseValue]] = []
            let conflicts = try store.conflicts()
            let records = try store.records(in: declaration.collection)
            for (id, fields) in records {
                var row: [String: DatabaseValue] = [:]
                for field in declaration.fields {
                    let value = fields.first { $0.name.utf8.elementsEqual(field.name.utf8) }?.value
                    let (columns, elements) = expected(field.type, value)
                    let column = try #require(declaration.columnName(field.name))
                    for (name, value) in zip(columnNames(field, column), columns) { row[name] = value }
                    // A file field's `concord_local__` column: whether its content is here.
                    if case .file = field.type {
                        if case let .file(file)? = value {
                            row["concord_local__" + column] = (store.blobs.contains(file.hash) ? 1 : 0 as Int64).databaseValue
                        } else {
                            row["concord_local__" + column] = .null
                        }
                    }
                    expectedElements += elements.map { [id.databaseValue, column.databaseValue, $0] }
                }
                let mine = conflicts.filter { $0.ref == RecordRef(collection: declaration.collection, id: id) }
                row["concord_delete_update"] = (mine.contains { $0.kind == .deleteUpdate } ? 1 : 0 as Int64).databaseValue
                row["concord_file_forks"] = Int64(mine.filter { $0.kind == .fileFork }.count).databaseValue
                row["concord_whole"] = (isWhole(fields, declaration) ? 1 : 0 as Int64).databaseValue
                expectedRows[id] = row
            }
            let (rows, elements) = try store.reader.read { db in
                let rows = try Row.fetchAll(db, sql: "SELECT * FROM \"\(declaration.tableName)\"")
                let elements = try Row.fetchAll(db, sql: "SELECT id, field, element FROM \"\(declaration.elementsTableName)\"")
                return (rows, elements)
            }
            if let search = declaration.searchTableName {
                // The full-text table holds each row's searchable columns under its rowid.
                let columns = declaration.fields.filter(\.searchable).map { "\"\(declaration.columnName($0.name)!)\"" }.joined(separator: ", ")
                let (indexed, declared) = try store.reader.read { db in
                    (try Row.fetchAll(db, sql: "SELECT rowid, \(columns) FROM \"\(search)\" ORDER BY rowid"),
                     try Row.fetchAll(db, sql: "SELECT rowid, \(columns) FROM \"\(declaration.tableName)\" ORDER BY rowid"))
                }
                #expect(indexed == declared, "\(context): search table of \(declaration.collection)")
            }
            var actualRows: [String: [String: DatabaseValue]] = [:]
            for row in rows {
                var values: [String: DatabaseValue] = [:]
                for (name, value) in row where name != "id" { values[name] = value }
                actualRows[row["id"]] = values
            }
            #expect(actualRows == expectedRows, "\(context): table of \(declaration.collection)")
            let sortKey: ([DatabaseValue]) -> String = { "\($0)" }
            #expect(elements.map { Array($0.databaseValues) }.sorted { sortKey($0) < sortKey($1) }
                    == expectedElements.sorted { sortKey($0) < sortKey($1) }, "\(context): elements of \(declaration.collection)")
            // A query reads whole rows from their columns and the others from the merged
            // state: either way what the store's reads say, value for value.
            let queried = try store.query(Query(declaration.collection))
            #expect(queried.map(\.id) == records.map(\.id), "\(context): query of \(declaration.collection)")
            for (read, record) in zip(queried, records) {
                #expect(read.fields.map(\.name) == record.fields.map(\.name) && read.fields.map(\.value) == record.fields.map(\.value),
                        "\(context): query's \(read.id) of \(declaration.collection)")
            }
        }
    }

    /// The columns of a field whose own column is `column`.
    static func columnNames(_ field: CollectionDeclaration.Field, _ column: String) -> [String] {
        field.type == .file ? [column, "concord_size__" + column, "concord_media_type__" + column] : [column]
    }

    /// Whether the record's fields are all declared and each reads back exactly from its
    /// columns: strings, integers, booleans and bytes of their own type, doubles but NaN and
    /// -0.0 (in a double or a date field), files, sets of such elements.
    static func isWhole(_ fields: [(name: String, value: FieldValue)], _ declaration: CollectionDeclaration) -> Bool {
        func exact(_ value: ScalarValue, _ type: CollectionDeclaration.ScalarType) -> Bool {
            switch (type, value) {
            case (.string, .string), (.int, .int), (.bool, .bool), (.bytes, .bytes): return true
            case let (.double, .double(number)), let (.date, .double(number)): return !number.isNaN && number.bitPattern != (-0.0 as Double).bitPattern
            default: return false
            }
        }
        return fields.allSatisfy { field in
            switch (declaration.field(field.name)?.type, field.value) {
            case let (.scalar(type)?, .scalar(value)): exact(value, type)
            case (.file?, .file): true
            case let (.set(type)?, .set(elements)): elements.allSatisfy { exact($0, type) }
            default: false
            }
        }
    }

    /// What a declared column holds for a value, written apart from the store's own code.
    static func expected(_ type: CollectionDeclaration.FieldType, _ value: FieldValue?) -> ([DatabaseValue], [DatabaseValue]) {
        func scalar(_ type: CollectionDeclaration.ScalarType, _ value: ScalarValue) -> DatabaseValue {
            switch (type, value) {
            case let (.string, .string(text)): text.databaseValue
            case let (.int, .int(number)): number.databaseValue
            case let (.bool, .bool(flag)): (flag ? 1 : 0 as Int64).databaseValue
            case let (.bytes, .bytes(bytes)): Data(bytes).databaseValue
            case let (.double, .double(number)), let (.date, .double(number)): number.isNaN ? .null : number.databaseValue
            case let (.double, .int(number)), let (.date, .int(number)): Double(exactly: number)?.databaseValue ?? .null
            case let (.date, .string(text)): ISO8601DateFormatter().date(from: text)?.timeIntervalSinceReferenceDate.databaseValue ?? .null
            default: .null
            }
        }
        switch (type, value) {
        case let (.scalar(type), .scalar(value)?): return ([scalar(type, value)], [])
        case let (.file, .file(file)?):
            return ([Data(file.hash.bytes).databaseValue, Int64(file.size).databaseValue, file.mediaType?.databaseValue ?? .null], [])
        case (.file, _): return ([.null, .null, .null], [])
        case let (.set(type), .set(elements)?):
            var fitting: [DatabaseValue] = []
            for element in elements {
                let value = scalar(type, element)
                if !value.isNull && !fitting.contains(value) { fitting.append(value) }
            }
            return ([Int64(elements.count).databaseValue], fitting)
        default: return ([.null], [])
        }
    }

    /// Declaring again with a field and an index added alters the table (its new columns
    /// come after the others, as `ALTER TABLE … ADD COLUMN` puts them) and fills them.
    @Test func addingAFieldOrAnIndexAltersTheTableInPlace() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "a", clock: ManualClock())
        try store.declare(CollectionDeclaration("g", fields: [.init("a", .int, indexed: true)]))
        for index in 0..<1_200 {
            var fields: [String: FieldWrite] = ["a": .scalar(.int(Int64(index)))]
            if index % 3 == 0 { fields["b"] = .scalar(.string("b\(index)")) }
            if index % 5 == 0 { fields["s"] = .set([.int(Int64(index)), .int(1)]) }
            try store.put(RecordRef(collection: "g", id: "r\(index)"), fields)
        }
        try Self.check(store, "declared with a")
        func rowids() throws -> [String: Int64] {
            try store.reader.read { db in
                Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, rowid FROM concord_c_g").map { ($0[0] as String, $0[1] as Int64) })
            }
        }
        let before = try rowids()
        let wider = try CollectionDeclaration("g", fields: [.init("a", .int, indexed: true), .init("b", .string, indexed: true), .init("s", .set(.int))])
        try store.declare(wider)
        #expect(try store.declaration(of: "g") == wider)
        try Self.check(store, "declared again with b and s")
        let (columns, indexes) = try store.reader.read { db in
            (try Row.fetchAll(db, sql: "PRAGMA table_info(concord_c_g)").map { $0["name"] as String },
             try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'concord_c_g' AND sql IS NOT NULL"))
        }
        #expect(Array(columns.suffix(3)) == ["concord_whole", "b", "s"], "altered, not made anew: \(columns)")
        #expect(indexes.contains { $0.contains("(\"b\")") }, "b's index: \(indexes)")
        #expect(try rowids() == before, "every row kept in place")
        #expect(try store.query(Query("g").filter(.field("b", .equal, .string("b300")))).map(\.id) == ["r300"])
        #expect(try store.count(Query("g").filter(.contains("s", .int(1)))) == 240)
        // The index dropped again; later writes keep the altered table equal.
        try store.declare(CollectionDeclaration("g", fields: [.init("a", .int, indexed: true), .init("b", .string), .init("s", .set(.int))]))
        #expect(try store.reader.read { db in
            try String.fetchAll(db, sql: "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'concord_c_g' AND sql IS NOT NULL")
        }.allSatisfy { !$0.contains("(\"b\")") })
        try store.set(RecordRef(collection: "g", id: "r1"), "b", .string("later"))
        try store.delete(RecordRef(collection: "g", id: "r3"))
        try Self.check(store, "written after")
    }
}
