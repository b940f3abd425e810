import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// A bounded seal (`Store.seal(maxSlots:)`) reads only the outbox rows whose `low` is up to
/// its cut (schema version 4), where version 3 read the whole outbox and every dirty field
/// for each batch. The batches must not change: each is checked against the one version 3's
/// queries choose on the same store.
@Suite struct OutboxTests {
    /// One batch: its `upTo`, the slots of each record it carries, and the records it ships
    /// whole.
    struct Batch: Equatable, CustomStringConvertible {
        var upTo: UInt64
        var slots: [RecordRef: Set<SlotKey>] = [:]
        var whole: Set<RecordRef> = []

        init(upTo: UInt64) {
            self.upTo = upTo
        }

        init(_ delta: Delta) {
            upTo = delta.upTo
            for change in delta.records {
                if change.whole { whole.insert(change.ref) } else { slots[change.ref] = Set(change.slots.map(\.key)) }
            }
        }

        var description: String {
            "upTo \(upTo), \(slots.values.reduce(0) { $0 + $1.count }) slots of \(slots.count) records, \(whole.count) whole"
        }
    }

    /// The batch version 3's bounded seal chooses next, by its queries over the whole outbox:
    /// the greatest write hlc up to which at most `maxSlots` slots were last written (the
    /// first write's, if it alone touched more), and the slots last written up to it.
    static func versionThreeBatch(_ store: Store, maxSlots: Int) throws -> Batch? {
        let own = try store.versionVector()[store.replicaID]
        let clean = "-9223372036854775808"
        return try store.reader.read { db -> Batch? in
            var cut: Int64?
            for row in try Row.fetchAll(db, sql: """
                SELECT hlc, sum(n) OVER (ORDER BY hlc) AS running FROM (
                    SELECT f.dirty AS hlc, count(*) AS n FROM concord_outbox o JOIN concord_fields f ON f.collection = o.collection AND f.id = o.id
                        WHERE o.kind = 0 AND f.dirty > \(clean) GROUP BY f.dirty
                    UNION ALL
                    SELECT hlc, count(*) FROM concord_outbox GROUP BY hlc)
                ORDER BY hlc
                """) {
                if cut == nil || (row["running"] as Int64) <= Int64(maxSlots) { cut = row["hlc"] } else { break }
            }
            guard let cut else { return nil }
            let upTo = min(own, UInt64(bitPattern: cut) ^ (1 << 63))
            let limit = Int64(bitPattern: upTo ^ (1 << 63))
            var batch = Batch(upTo: upTo)
            for row in try Row.fetchAll(db, sql: """
                SELECT f.collection, f.id, f.field FROM concord_outbox o JOIN concord_fields f ON f.collection = o.collection AND f.id = o.id
                    WHERE o.kind = 0 AND f.dirty > \(clean) AND f.dirty <= ?
                """, arguments: [limit]) {
                batch.slots[RecordRef(collection: row[0], id: row[1]), default: []].insert(.field(row[2]))
            }
            for row in try Row.fetchAll(db, sql: "SELECT collection, id, kind, field, element FROM concord_outbox WHERE hlc <= ?", arguments: [limit]) {
                let ref = RecordRef(collection: row[0], id: row[1])
                switch row[2] as Int64 {
                case 0: batch.slots[ref, default: []].insert(.liveness)
                case 1: batch.slots[ref, default: []].insert(.tombstones)
                case 2: batch.slots[ref, default: []].insert(.field(row[3]))
                case 3: batch.slots[ref, default: []].insert(.element(row[3], try ScalarCodec.decode([UInt8](row[4] as Data))))
                default: batch.whole.insert(ref)
                }
            }
            for ref in batch.whole { batch.slots[ref] = nil }
            return batch.slots.isEmpty && batch.whole.isEmpty ? nil : batch
        }
    }

    /// Seals `store` in batches of at most `maxSlots` slots until nothing waits, expecting
    /// each to be the batch version 3 chooses (every `checkEvery`th batch, and the last).
    static func sealInBatches(_ store: Store, maxSlots: Int, checkEvery: Int = 1, _ comment: Comment) throws -> [Delta] {
        var deltas: [Delta] = []
        while true {
            let check = deltas.count % checkEvery == 0
            let expected = check ? try versionThreeBatch(store, maxSlots: maxSlots) : nil
            let delta = try store.seal(maxSlots: maxSlots)?.delta
            if check {
                let batch = delta.map { Batch($0) }
                #expect(batch == expected, "\(comment), batch \(deltas.count + 1)")
                if batch != expected { break }
            }
            guard let delta else { break }
            deltas.append(delta)
        }
        #expect(try store.pendingChangeCount() == 0, comment)
        #expect(try !store.hasPendingChanges(), comment)
        return deltas
    }

    /// Local writes of every kind the outbox holds, each its own write (stamp): fields,
    /// records rewritten in part (the liveness row then later than some of the record's dirty
    /// fields) or whole, set elements added and removed, a field turned into a set and back, a
    /// delete, and a purge.
    static func writeBacklog(_ store: Store, _ clock: ManualClock) throws {
        let a = RecordRef(collection: "notes", id: "a"), b = RecordRef(collection: "notes", id: "b")
        let c = RecordRef(collection: "notes", id: "c"), d = RecordRef(collection: "notes", id: "d")
        let e = RecordRef(collection: "notes", id: "e"), p = RecordRef(collection: "notes", id: "p")
        func step(_ body: (WriteTransaction) throws(ConcordError) -> Void) throws {
            clock.advance(by: 1)
            try store.write(body)
        }
        try step { tx throws(ConcordError) in
            try tx.put(a, ["f1": .scalar(.int(1)), "f2": .scalar(.int(1)), "f3": .scalar(.int(1))])
            try tx.put(b, ["f1": .scalar(.int(1)), "f2": .scalar(.int(1))])
            try tx.add(d, "tags", .string("x"))
        }
        try step { tx throws(ConcordError) in try tx.set(c, "f1", .string("c")) }
        try step { tx throws(ConcordError) in try tx.set(a, "f2", .int(2)) }
        try step { tx throws(ConcordError) in try tx.put(b, ["f1": .scalar(.int(2)), "f2": .scalar(.int(2))]) }
        try step { tx throws(ConcordError) in
            try tx.remove(d, "tags", .string("x"))
            try tx.add(d, "tags", .string("y"))
        }
        try step { tx throws(ConcordError) in try tx.delete(c) }
        try step { tx throws(ConcordError) in try tx.create(e, ["f1": .scalar(.int(1)), "s": .set([.int(1), .int(2)])]) }
        try step { tx throws(ConcordError) in try tx.put(e, ["s": .scalar(.string("no longer a set"))]) }
        try step { tx throws(ConcordError) in try tx.create(p, ["f1": .scalar(.int(1))]) }
        try step { tx throws(ConcordError) in try tx.delete(p) }
        clock.advance(by: 1)
        #expect(try store.purge([p], within: store.versionVector()) == [p])
        try step { tx throws(ConcordError) in try tx.set(a, "f3", .int(3)) }
    }

    /// A store written by version 3 with writes waiting — a record rewritten in part among
    /// them — migrates to version 4 and seals, at every bound, the batches version 3 chose,
    /// byte for byte the batches of the same store written by version 4.
    @Test func aVersionThreeOutboxMigratesAndSealsTheSameBatches() throws {
        let directory = TemporaryDirectory("outbox-v3")
        let clock = ManualClock()
        let written = directory.file("written.db")
        do {
            let store = try Store(path: written, configuration: .init(clock: clock))
            try Self.writeBacklog(store, clock)
            // Record a's liveness row is later than two of its dirty fields.
            let marks = try store.reader.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT f.dirty < o.hlc AS earlier FROM concord_fields f JOIN concord_outbox o ON o.collection = f.collection AND o.id = f.id AND o.kind = 0
                        WHERE f.id = 'a' ORDER BY f.field
                    """).map { $0["earlier"] as Bool }
            }
            #expect(marks == [true, true, false])
        }
        let versionThree = directory.file("v3.db")
        try copyStoreFile(written, to: versionThree)
        try DatabaseQueue(path: versionThree).write { db in try downgradeOutboxToVersionThree(db) }

        for maxSlots in [0, 1, 2, 3, 5, 8, 1_000] {
            let migratedPath = directory.file("migrated-\(maxSlots).db")
            let nativePath = directory.file("native-\(maxSlots).db")
            try copyStoreFile(versionThree, to: migratedPath)
            try copyStoreFile(written, to: nativePath)
            let migrated = try Store(path: migratedPath, configuration: .init(clock: clock))
            let native = try Store(path: nativePath, configuration: .init(clock: clock))
            let index = try migrated.reader.read { db in
                try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'concord_outbox_low'")
            }
            #expect(index == 1)
            let deltas = try Self.sealInBatches(migrated, maxSlots: maxSlots, "migrated, at most \(maxSlots) slots")
            let nativeDeltas = try Self.sealInBatches(native, maxSlots: maxSlots, "written by version 4, at most \(maxSlots) slots")
            #expect(deltas.map { DeltaCodec.encode($0) } == nativeDeltas.map { DeltaCodec.encode($0) }, "at most \(maxSlots) slots")
            #expect(deltas.count > (maxSlots < 10 ? 3 : 0))
            #expect(try migrated.state() == native.state())
        }
    }

    /// 20,000 records of three fields, some rewritten in part, a few deleted or given a set
    /// element, sealed 100 slots at a time: the batches are version 3's, chained, each within
    /// its bound, and together they carry exactly the slots and entries the core seals in one
    /// delta; nothing is left waiting, and a replica that applies them holds what one that
    /// applies the core's delta holds.
    @Test func aLargeBacklogSealsInBoundedBatchesAsTheCoreSealsItWhole() throws {
        let directory = TemporaryDirectory("outbox-large", base: FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory())
        let clock = ManualClock()
        let store = try Store.temporary(directory, "writer", clock: clock)
        var core = Replica(id: store.replicaID)
        let refs = (0..<20_000).map { RecordRef(collection: "items", id: "r\(100_000 + $0)") }
        for (index, ref) in refs.enumerated() {
            if index % 100 == 0 { clock.advance(by: 1) }
            let fields: [String: FieldWrite] = ["a": .scalar(.int(Int64(index))), "b": .scalar(.string("b\(index)")), "c": .scalar(.bool(index % 2 == 0))]
            try store.put(ref, fields)
            _ = try core.put(ref, fields, now: clock.millisecondsSinceEpoch())
        }
        for (index, ref) in refs.enumerated() where index % 7 == 0 {
            try store.set(ref, "b", .string("rewritten"))
            _ = try core.set(ref, "b", .string("rewritten"), now: clock.millisecondsSinceEpoch())
            if index % 1_001 == 0 {
                try store.delete(ref)
                _ = try core.delete(ref, now: clock.millisecondsSinceEpoch())
            } else if index % 503 == 0 {
                try store.add(ref, "tags", .int(Int64(index)))
                _ = try core.add(ref, "tags", .int(Int64(index)), now: clock.millisecondsSinceEpoch())
            }
        }
        let copyPath = directory.file("copy.db")
        try copyStoreFile(directory.file("writer.db"), to: copyPath)
        let whole = try #require(try Store(path: copyPath, configuration: .init(clock: clock)).seal()?.delta)
        let sealedByCore = core.seal()
        let coreDelta = try #require(sealedByCore)
        #expect(DeltaCodec.encode(whole) == DeltaCodec.encode(coreDelta))

        let maxSlots = 100
        let deltas = try Self.sealInBatches(store, maxSlots: maxSlots, checkEvery: 40, "20,000 records")
        #expect(deltas.count > 800)
        var sealed: [RecordRef: [SlotKey: [Entry]]] = [:]
        var previous: UInt64 = 0
        for delta in deltas {
            #expect(delta.records.reduce(0) { $0 + $1.slots.count } <= maxSlots)
            #expect(delta.dependencies[store.replicaID] == previous)
            #expect(delta.upTo > previous)
            previous = delta.upTo
            for change in delta.records {
                for slot in change.slots {
                    #expect(sealed[change.ref]?[slot.key] == nil, "\(change.ref) \(slot.key) sealed twice")
                    sealed[change.ref, default: [:]][slot.key] = slot.entries
                }
            }
        }
        #expect(previous == coreDelta.upTo)
        var expected: [RecordRef: [SlotKey: [Entry]]] = [:]
        for change in coreDelta.records {
            for slot in change.slots { expected[change.ref, default: [:]][slot.key] = slot.entries }
        }
        #expect(sealed == expected)
        let outboxRows = try store.reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM concord_outbox") }
        #expect(outboxRows == 0)

        let peer = ReplicaID(high: 9, low: 9)
        var parts = Replica(id: peer)
        for delta in deltas { try parts.apply(delta) }
        var wholePeer = Replica(id: peer)
        try wholePeer.apply(coreDelta)
        #expect(parts.state == wholePeer.state)
    }
}
