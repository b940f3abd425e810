import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Many writes in one `write {}` mean what the same writes mean one call each: the store
/// buffers a record's register writes and runs them together, and every other write and
/// read in the transaction must still see them in the order they were made.
@Suite struct TransactionTests {
    static let refs = [RecordRef(collection: "c", id: "x"), RecordRef(collection: "c", id: "y"), RecordRef(collection: "d", id: "x")]
    /// More names than one buffer holds, so a record's writes run in several batches.
    static let names = (0..<40).map { "f\($0)" }

    enum Operation {
        case set(RecordRef, String, ScalarValue)
        case put(RecordRef, [String: FieldWrite])
        case create(RecordRef, [String: FieldWrite])
        case setFile(RecordRef, String, FileRef)
        case add(RecordRef, String, ScalarValue)
        case remove(RecordRef, String, ScalarValue)
        case delete(RecordRef)
        case keepRecord(RecordRef)
    }

    static func run(_ operation: Operation, _ tx: WriteTransaction) throws(ConcordError) {
        switch operation {
        case let .set(ref, name, value): try tx.set(ref, name, value)
        case let .put(ref, fields): try tx.put(ref, fields)
        case let .create(ref, fields): try tx.create(ref, fields)
        case let .setFile(ref, name, file): try tx.setFile(ref, name, file)
        case let .add(ref, name, value): try tx.add(ref, name, value)
        case let .remove(ref, name, value): try tx.remove(ref, name, value)
        case let .delete(ref): try tx.delete(ref)
        case let .keepRecord(ref): try tx.keepRecord(ref)
        }
    }

    /// What a store holds with its stamps left out: per record, per slot, the payloads of
    /// its entries. Two stores given the same writes with different stamps hold the same.
    static func shape(_ store: Store) throws -> [String] {
        try store.state().records.flatMap { ref, record in
            record.slots.map { key, slot in
                "\(ref) \(key): \(slot.entries.map { String(describing: $0.payload) }.sorted())"
            }
        }.sorted()
    }

    /// Two stores on one clock given the same writes: `batched` each round's in one
    /// transaction, `single` one call each.
    struct Pair {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let batched: Store
        let single: Store

        init() throws {
            batched = try Store.temporary(directory, "batched", clock: clock)
            single = try Store.temporary(directory, "single", clock: clock)
        }

        /// Runs `operations` on both, then expects the same slots and conflicts of both.
        func write(_ operations: [Operation], _ comment: Comment) throws {
            try batched.write { tx throws(ConcordError) in
                for operation in operations { try TransactionTests.run(operation, tx) }
            }
            for operation in operations {
                try single.write { tx throws(ConcordError) in try TransactionTests.run(operation, tx) }
            }
            #expect(try TransactionTests.shape(batched) == TransactionTests.shape(single), comment)
            #expect(try batched.conflicts().map(\.description) == single.conflicts().map(\.description), comment)
        }
    }

    @Test(arguments: 1...10)
    func aTransactionMeansWhatItsWritesMeanOneByOne(seed: UInt64) throws {
        let stores = try Pair()
        let (directory, clock, batched, single) = (stores.directory, stores.clock, stores.batched, stores.single)
        var random = SeededGenerator(seed: seed)
        let files = try (1...3).map { try batched.blobs.add(bytes: Array("file \($0)".utf8)) }
        for file in files { _ = try single.blobs.add(bytes: try batched.blobs.bytes(file.hash)) }

        // Two peers write the same fields concurrently, so both stores start with registers
        // holding two entries: the upsert cannot replace those, and the batch must fall back.
        let peers = try ["p", "q"].map { try Store.temporary(directory, $0, clock: clock) }
        for (index, peer) in peers.enumerated() {
            for file in files { _ = try peer.blobs.add(bytes: try batched.blobs.bytes(file.hash)) }
            try peer.write { tx throws(ConcordError) in
                for ref in Self.refs {
                    for name in Self.names.prefix(12) { try tx.set(ref, name, .int(Int64(index))) }
                    try tx.setFile(ref, "f12", files[index])
                }
            }
            try peer.push(to: [batched, single])
        }

        var fallbacks = 0
        for round in 0..<25 {
            clock.advance(by: 1)
            var operations: [Operation] = []
            for _ in 0..<random.int(1...30) {
                // Now and then a record no store has seen yet, written first in this transaction.
                let ref = random.chance(0.2) ? RecordRef(collection: "n", id: "r\(round)") : random.pick(Self.refs)
                let name = random.pick(Self.names.prefix(random.chance(0.5) ? 14 : 40))
                let value = ScalarValue.int(Int64(random.int(0...5)))
                switch random.int(0...13) {
                case 0...4: operations.append(.set(ref, name, value))
                case 5:
                    var fields: [String: FieldWrite] = [:]
                    for field in Self.names.shuffled(using: &random).prefix(random.int(1...40)) {
                        fields[field] = random.chance(0.1) ? .set([value]) : .scalar(.string("\(field) \(round)"))
                    }
                    operations.append(.put(ref, fields))
                case 6: operations.append(.create(ref, ["f13": .set([value])].merging([name: .scalar(value)]) { _, scalar in scalar }))
                case 7, 8: operations.append(.setFile(ref, random.pick(["f12", name]), random.pick(files)))
                case 9, 10: operations.append(.add(ref, name, value))
                case 11: operations.append(.remove(ref, name, value))
                case 12: operations.append(.delete(ref))
                default: operations.append(.keepRecord(ref))
                }
            }
            fallbacks += try Self.refs.reduce(0) { count, ref in
                try count + (batched.state().records[ref]?.slots.values.filter { $0.entries.count > 1 }.count ?? 0)
            }
            try stores.write(operations, "seed \(seed) round \(round)")
            for ref in Self.refs + [RecordRef(collection: "n", id: "r\(round)")] {
                let read = try batched.record(ref)
                let expected = try single.record(ref)
                #expect(read?.map(\.name) == expected?.map(\.name) && read?.map(\.value) == expected?.map(\.value),
                        "seed \(seed) round \(round): \(ref) reads \(String(describing: read)), one by one \(String(describing: expected))")
            }
        }
        // The run reached registers the batched upsert could not replace.
        #expect(fallbacks > 0)
    }

    /// A transaction that begins more records than one statement of liveness rows holds —
    /// new ones, some deleted, re-created, kept or given set elements later in the same
    /// transaction — leaves what the same writes leave made one call each, and each store's
    /// next delta brings a replica that has seen nothing to the same.
    @Test(arguments: 1...4)
    func manyRecordsInATransactionMeanWhatTheyMeanOneByOne(seed: UInt64) throws {
        let stores = try Pair()
        var random = SeededGenerator(seed: seed)
        var written: [RecordRef] = []
        for round in 0..<5 {
            stores.clock.advance(by: 1)
            var operations: [Operation] = []
            for index in 0..<random.int(40...100) {
                let ref = RecordRef(collection: random.pick(["m", "n"]), id: "r\(round)-\(index)")
                written.append(ref)
                for name in Self.names.prefix(random.int(1...4)) { operations.append(.set(ref, name, .int(Int64(index)))) }
                guard random.chance(0.3) else { continue }
                // A record this transaction or an earlier one wrote.
                let earlier = random.pick(written)
                let value = ScalarValue.int(Int64(random.int(0...3)))
                switch random.int(0...5) {
                case 0: operations.append(.delete(earlier))
                case 1: operations.append(.create(earlier, ["f1": .scalar(value)]))
                case 2: operations.append(.keepRecord(earlier))
                case 3: operations.append(.add(earlier, "f9", value))
                case 4: operations.append(.remove(earlier, "f9", value))
                default: operations.append(.set(earlier, random.pick(Self.names.prefix(6)), value))
                }
            }
            try stores.write(operations, "seed \(seed) round \(round)")
        }
        let fromBatched = try Store.temporary(stores.directory, "from-batched", clock: stores.clock)
        let fromSingle = try Store.temporary(stores.directory, "from-single", clock: stores.clock)
        try stores.batched.push(to: [fromBatched])
        try stores.single.push(to: [fromSingle])
        #expect(try Self.shape(fromBatched) == Self.shape(stores.batched))
        #expect(try Self.shape(fromSingle) == Self.shape(stores.single))
        #expect(try stores.batched.seal() == nil)
    }

    /// A field written twice in one transaction holds the second value, a register written
    /// then turned into a set holds the set, and a record created after its fields were
    /// written holds only what the creation wrote.
    @Test func laterWritesInATransactionSeeEarlierOnes() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "a", clock: ManualClock())
        let ref = RecordRef(collection: "c", id: "x")
        let other = RecordRef(collection: "c", id: "y")
        try store.write { tx throws(ConcordError) in
            for name in Self.names { try tx.set(ref, name, .int(1)) }
            try tx.set(ref, "f3", .int(2))
            try tx.set(other, "f0", .int(5))
            try tx.set(ref, "f4", .int(3))
            try tx.add(ref, "f5", .int(4))
        }
        let read = try #require(try store.record(ref))
        #expect(read.count == Self.names.count)
        let values = Dictionary(uniqueKeysWithValues: read.map { ($0.name, $0.value) })
        #expect(values["f0"] == .scalar(.int(1)))
        #expect(values["f3"] == .scalar(.int(2)))
        #expect(values["f4"] == .scalar(.int(3)))
        #expect(values["f5"] == .set([.int(4)]))
        #expect(try store.state().records[ref]?.slots[.field("f5")]?.entries.isEmpty ?? true, "the register f5 was cleared by the add")
        #expect(try store.record(other)?.first?.value == .scalar(.int(5)))

        try store.write { tx throws(ConcordError) in
            try tx.set(ref, "f1", .int(9))
            try tx.create(ref, ["g": .scalar(.int(7))])
        }
        #expect(try store.record(ref)?.map(\.name) == ["g"])
        // Sealed, the transaction's writes are one delta slot per field written.
        let delta = try #require(try store.seal()?.delta)
        let slots = delta.records.first { $0.ref == ref }?.slots.map(\.key) ?? []
        #expect(slots.contains(.field("g")) && slots.contains(.field("f39")))
    }

    /// A change that fails to be stored makes the whole transaction fail, whether it was
    /// buffered (and so run by a later call) or run at once: a caller that catches its error
    /// and goes on cannot commit the changes around the lost one. (The failures are injected
    /// by triggers on the store's tables, which refuse one field name.)
    @Test func aChangeThatFailsFailsTheWholeTransaction() throws {
        let directory = TemporaryDirectory()
        let path = directory.file("a.db")
        let store = try Store(path: path)
        let ref = RecordRef(collection: "c", id: "x")
        let other = RecordRef(collection: "c", id: "y")
        try store.set(ref, "kept", .int(1))
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                CREATE TRIGGER refuse BEFORE INSERT ON concord_fields WHEN NEW.field = 'refused'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
                CREATE TRIGGER refuseElement BEFORE INSERT ON concord_elements WHEN NEW.field = 'refused'
                BEGIN SELECT RAISE(ABORT, 'refused by the test'); END;
                """)
        }
        // Buffered: the register write is accepted, and fails when a later call runs it (here
        // a read of what the transaction wrote); every call after that fails too.
        var caught: [ConcordError] = []
        #expect(throws: ConcordError.self) {
            try store.write { tx throws(ConcordError) in
                try tx.set(ref, "refused", .int(2))
                do throws(ConcordError) {
                    try tx.set(other, "a", .int(3))
                    _ = try tx.fields(of: other)
                } catch { caught.append(error) }
                do throws(ConcordError) { try tx.set(other, "b", .int(4)) } catch { caught.append(error) }
            }
        }
        #expect(caught.count == 2, "both later calls fail: \(caught)")
        #expect(caught.first?.description.contains("refused by the test") == true, "\(caught)")
        // Run at once: the set element's insert fails in the call that makes it.
        caught = []
        #expect(throws: ConcordError.self) {
            try store.write { tx throws(ConcordError) in
                try tx.set(other, "a", .int(5))
                do throws(ConcordError) { try tx.add(ref, "refused", .int(6)) } catch { caught.append(error) }
                try? tx.set(other, "b", .int(7))
            }
        }
        #expect(caught.count == 1 && caught.first?.description.contains("refused by the test") == true, "\(caught)")
        // Nothing of either transaction was committed.
        #expect(try store.record(ref)?.map(\.name) == ["kept"])
        #expect(try store.record(other) == nil)
        #expect(try store.pendingSlots().allSatisfy { $0.record == ref })
    }
}
