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
                try store.declare(Self.randomDeclaration(random.pick(Self.collections.dropLast()), &random))
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
            var expectedRows: [String: [DatabaseValue]] = [:]
            var expectedElements: [[DatabaseValue]] = []
            let conflicts = try store.conflicts()
            for (id, fields) in try store.records(in: declaration.collection) {
                var row: [DatabaseValue] = []
                for field in declaration.fields {
                    let value = fields.first { $0.name.utf8.elementsEqual(field.name.utf8) }?.value
                    let (columns, elements) = expected(field.type, value)
                    row += columns
                    // A file field's `concord_local__` column: whether its content is here.
                    if case .file = field.type {
                        if case let .file(file)? = value {
                            row.append((store.blobs.contains(file.hash) ? 1 : 0 as Int64).databaseValue)
                        } else {
                            row.append(.null)
                        }
                    }
                    let column = try #require(declaration.columnName(field.name))
                    expectedElements += elements.map { [id.databaseValue, column.databaseValue, $0] }
                }
                let mine = conflicts.filter { $0.ref == RecordRef(collection: declaration.collection, id: id) }
                row.append((mine.contains { $0.kind == .deleteUpdate } ? 1 : 0 as Int64).databaseValue)
                row.append(Int64(mine.filter { $0.kind == .fileFork }.count).databaseValue)
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
            var actualRows: [String: [DatabaseValue]] = [:]
            for row in rows { actualRows[row["id"]] = Array(row.databaseValues.dropFirst()) }
            #expect(actualRows == expectedRows, "\(context): table of \(declaration.collection)")
            let sortKey: ([DatabaseValue]) -> String = { "\($0)" }
            #expect(elements.map { Array($0.databaseValues) }.sorted { sortKey($0) < sortKey($1) }
                    == expectedElements.sorted { sortKey($0) < sortKey($1) }, "\(context): elements of \(declaration.collection)")
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
}
