import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

struct Game: StoredRecord, Equatable {
    static let collection = "games"
    var id: String
    var title: String
    var level: Int
    var rating: Double?
    var tags: Set<String>
    var cover: FileRef?
    var notes: [String: Int]
}

@Suite struct StoreFeatureTests {
    let directory = TemporaryDirectory("features")

    @Test func codableRecordsRoundTripAndSaveOnlyChangedFields() throws {
        let clock = ManualClock()
        let laptop = try Store.temporary(directory, "laptop", clock: clock)
        let phone = try Store.temporary(directory, "phone", clock: clock)
        let cover = try laptop.blobs.add(bytes: Array("png".utf8), mediaType: "image/png")
        _ = try phone.blobs.add(bytes: Array("png".utf8))
        var game = Game(id: "zelda", title: "Zelda", level: 1, rating: nil, tags: ["rpg", "classic"], cover: cover, notes: ["a": 1])
        #expect(try laptop.save(game) == ["cover", "level", "notes", "rating", "tags", "title"])
        #expect(try laptop.load(Game.self, id: "zelda") == game)
        // Saving unchanged writes nothing; one changed property writes one field.
        #expect(try laptop.save(game).isEmpty)
        try exchange([laptop, phone])
        game.level = 2
        #expect(try laptop.save(game) == ["level"])
        // Meanwhile the phone edits another property: both edits survive the merge.
        var onPhone = try #require(try phone.load(Game.self, id: "zelda"))
        onPhone.rating = 4.5
        #expect(try phone.save(onPhone) == ["rating"])
        try exchange([laptop, phone])
        let merged = try #require(try laptop.load(Game.self, id: "zelda"))
        #expect(merged.level == 2 && merged.rating == 4.5)
        #expect(try phone.loadAll(Game.self) == [merged])
        // Clearing an optional reaches the other device as null.
        var cleared = merged
        cleared.rating = nil
        #expect(try phone.save(cleared) == ["rating"])
        try exchange([laptop, phone])
        #expect(try laptop.load(Game.self, id: "zelda")?.rating == nil)
        // The fields sit in plain tables an app can query with SQL.
        let title = try DatabaseQueue(path: directory.file("laptop.db")).read { db in
            try String.fetchOne(db, sql: "SELECT value FROM concord_fields WHERE collection = 'games' AND id = 'zelda' AND field = 'title'")
        }
        #expect(title == "Zelda")
    }

    @Test func changeEventsCoverLocalAndRemoteChanges() async throws {
        let clock = ManualClock()
        let a = try Store.temporary(directory, "a", clock: clock)
        let b = try Store.temporary(directory, "b", clock: clock)
        let events = b.changes()
        let ref = RecordRef(collection: "c", id: "x")
        try b.set(ref, "local", .int(1))
        try a.put(ref, ["remote": .scalar(.int(2)), "other": .scalar(.int(3))])
        try b.apply(try #require(try a.seal()?.delta))
        try b.delete(ref)
        var received: [ChangeEvent] = []
        for await event in events {
            received.append(event)
            if received.count == 3 { break }
        }
        #expect(received[0] == ChangeEvent(ref: ref, fields: ["local"], origin: .local))
        #expect(received[1] == ChangeEvent(ref: ref, fields: ["other", "remote"], origin: .remote(a.replicaID)))
        #expect(received[2] == ChangeEvent(ref: ref, fields: [], origin: .local))
    }

    /// A joined snapshot's changes are the snapshot's, not local writes: AutoSync, which
    /// pushes after `.local` events, has nothing to push for them (it scheduled a push).
    @Test func aJoinedSnapshotsChangesAreNotLocal() async throws {
        let clock = ManualClock()
        let a = try Store.temporary(directory, "a", clock: clock)
        let b = try Store.temporary(directory, "b", clock: clock)
        let ref = RecordRef(collection: "c", id: "x")
        try a.put(ref, ["title": .scalar(.string("from a"))])
        _ = try a.seal()
        let events = b.changes()
        #expect(try b.join(snapshot: try a.exportSnapshot()) == .applied)
        try b.set(ref, "mine", .int(1))
        var received: [ChangeEvent] = []
        for await event in events {
            received.append(event)
            if received.count == 2 { break }
        }
        #expect(received == [ChangeEvent(ref: ref, fields: ["title"], origin: .snapshot), ChangeEvent(ref: ref, fields: ["mine"], origin: .local)])
    }

    @Test func historyKeepsSupersededFilesForTheRetentionWindow() throws {
        let clock = ManualClock()
        let store = try Store(path: directory.file("h.db"), configuration: .init(clock: clock, historyRetention: 1_000))
        let ref = RecordRef(collection: "c", id: "x")
        let first = try store.attachFile(ref, "doc", bytes: Array("first".utf8))
        clock.advance(by: 10)
        let second = try store.attachFile(ref, "doc", bytes: Array("second".utf8))
        #expect(try store.versions(ref, "doc").map(\.file) == [first])
        #expect(try store.sweepFiles().isEmpty)  // the window keeps it
        try store.restore(ref, "doc", hash: first.hash)
        #expect(try store.record(ref)?.first?.value == .file(first))
        #expect(try store.versions(ref, "doc").map(\.file.hash).contains(second.hash))
        #expect(throws: ConcordError.self) { try store.restore(ref, "doc", hash: ContentHash(bytes: [UInt8](repeating: 9, count: 32))!) }
        // After the window, history goes and unreferenced files with it.
        clock.advance(by: 2_000)
        #expect(try store.versions(ref, "doc").isEmpty)
        #expect(try store.sweepFiles() == [second.hash])
        #expect(store.blobs.contains(first.hash))
        #expect(!store.blobs.contains(second.hash))
    }

    @Test func purgeDropsADeadRecordEverywhereAndKeepsItsFilesInHistory() throws {
        let clock = ManualClock()
        let laptop = try Store.temporary(directory, "purge-laptop", clock: clock)
        let phone = try Store.temporary(directory, "purge-phone", clock: clock)
        let ref = RecordRef(collection: "notes", id: "n1")
        let file = try laptop.attachFile(ref, "doc", bytes: Array("draft".utf8))
        _ = try phone.blobs.add(bytes: Array("draft".utf8))
        try laptop.set(ref, "title", .string("Draft"))
        try laptop.add(ref, "tags", .string("work"))
        try exchange([laptop, phone])
        // The phone updates it; then the laptop, having seen that, deletes it.
        try phone.set(ref, "title", .string("Draft 2"))
        try exchange([laptop, phone])
        try laptop.delete(ref)
        try exchange([laptop, phone])
        let dumps = try [laptop.canonicalDump(), phone.canonicalDump()]

        // Dead on both, holding fields, set dots and a tombstone.
        let dead = try laptop.deadRecords()
        #expect(dead.map(\.ref) == [ref])
        #expect(try laptop.deadRecords() == phone.deadRecords())
        // A bound below the record's newest entries purges nothing.
        var short = try #require(dead.first).newest
        short[laptop.replicaID] -= 1
        #expect(try laptop.purge([ref], within: short).isEmpty)
        // Within what both have seen: purged, with nothing visible changed.
        #expect(try laptop.purge([ref], within: laptop.versionVector()) == [ref])
        #expect(try laptop.rawRecord(ref) == nil)
        #expect(try laptop.deadRecords().isEmpty)
        #expect(try laptop.canonicalDump() == dumps[0])
        #expect(try laptop.pendingChangeCount() == 1)
        #expect(throws: ConcordError.self) { try laptop.exportSnapshot() }
        // The file version stays in history for the retention window.
        #expect(try laptop.versions(ref, "doc").map(\.file.hash) == [file.hash])

        // The next delta ships the record whole and empty; the phone drops it too.
        let delta = try #require(try laptop.seal()?.delta)
        #expect(delta.records.map(\.ref) == [ref] && delta.records[0].whole && delta.records[0].slots.isEmpty)
        try phone.apply(encoded: DeltaCodec.encode(delta))
        #expect(try phone.rawRecord(ref) == nil)
        #expect(try phone.state() == laptop.state())
        #expect(try phone.canonicalDump() == dumps[1])
        #expect(try laptop.exportSnapshot().record(ref) == nil)

        // Re-created on the phone: only the new field, on both.
        try phone.set(ref, "title", .string("New"))
        try exchange([laptop, phone])
        #expect(try laptop.record(ref)?.map(\.name) == ["title"])
        #expect(try laptop.canonicalDump() == phone.canonicalDump())
        // A visible record is never purged.
        #expect(try laptop.purge([ref], within: laptop.versionVector()).isEmpty)
    }

    /// Point reads from many threads while another writes: each read is one consistent
    /// snapshot (every field from the same write, never half of one), sees every write
    /// committed before it started, and readers that find the store's point-read connection
    /// busy read through the pool with the same answers.
    @Test func concurrentPointReadsSeeWholeWrites() async throws {
        let store = try Store(path: directory.file("concurrent-reads.db"))
        let ref = RecordRef(collection: "c", id: "x")
        let names = (0..<6).map { "f\($0)" }
        func write(_ round: Int64) throws {
            try store.write { tx throws(ConcordError) in for name in names { try tx.set(ref, name, .int(round)) } }
        }
        try write(0)
        let rounds: Int64 = 300
        let seen = try await withThrowingTaskGroup(of: [Int64].self) { group in
            group.addTask {
                for round in 1...rounds { try write(round) }
                return []
            }
            for _ in 0..<4 {
                group.addTask {
                    var seen: [Int64] = []
                    for _ in 0..<400 {
                        let fields = try #require(try store.record(ref))
                        #expect(fields.map(\.name) == names)
                        let values = Set(fields.map(\.value))
                        #expect(values.count == 1, "one read saw parts of several writes: \(fields)")
                        if case let .scalar(.int(round))? = values.first { seen.append(round) }
                    }
                    return seen
                }
            }
            return try await group.reduce(into: [[Int64]]()) { $0.append($1) }
        }
        for reader in seen where !reader.isEmpty {
            // A reader never goes back in time: each read starts after the previous ended.
            #expect(reader == reader.sorted(), "a later read saw an older write")
        }
        #expect(try store.record(ref)?.first?.value == .scalar(.int(rounds)))
    }

    @Test func storeWrittenByANewerReleaseIsRefused() throws {
        let path = directory.file("newer.db")
        _ = try Store(path: path)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: "INSERT INTO grdb_migrations (identifier) VALUES ('v99-from-the-future')")
        }
        do {
            _ = try Store(path: path)
            Issue.record("a newer store opened")
        } catch {
            #expect(error.code == .newerSchema, "\(error)")
        }
    }

    /// A store of schema version 2 kept its dirty fields in a partial index; version 3 finds
    /// them through their records' liveness rows in the outbox. The migration adds such a row
    /// where one is missing, so nothing waiting to be sealed is forgotten.
    @Test func storeOfSchemaVersionTwoKeepsEveryUnsealedWrite() throws {
        let path = directory.file("v2.db")
        let first = RecordRef(collection: "notes", id: "first")
        let second = RecordRef(collection: "notes", id: "second")
        do {
            let store = try Store(path: path, configuration: .init(clock: ManualClock()))
            try store.write { tx throws(ConcordError) in
                try tx.set(first, "title", .string("one"))
                try tx.set(second, "title", .string("two"))
                try tx.set(second, "body", .string("text"))
            }
        }
        // As version 2 left it: the partial index, no record of "v3" (nor `low` in the
        // outbox), and (as a change of identity could leave it) a record whose dirty fields
        // have no row in the outbox.
        try DatabaseQueue(path: path).write { db in
            try downgradeOutboxToVersionThree(db)
            try db.execute(sql: """
                CREATE INDEX concord_fields_dirty ON concord_fields (dirty) WHERE dirty > -9223372036854775808;
                DELETE FROM grdb_migrations WHERE identifier = 'v3';
                DELETE FROM concord_outbox WHERE id = 'second';
                """)
        }
        let store = try Store(path: path, configuration: .init(clock: ManualClock()))
        let index = try store.reader.read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = 'concord_fields_dirty'")
        }
        #expect(index == 0)
        #expect(try store.pendingSlots() == [
            SlotRef(record: first, key: .liveness), SlotRef(record: first, key: .field("title")),
            SlotRef(record: second, key: .liveness), SlotRef(record: second, key: .field("body")),
            SlotRef(record: second, key: .field("title")),
        ])
        let delta = try #require(try store.seal()?.delta)
        #expect(delta.records.map(\.ref) == [first, second])
        #expect(delta.records[1].slots.map(\.key) == [.liveness, .field("body"), .field("title")])
        #expect(try store.pendingChangeCount() == 0)
        #expect(try store.seal() == nil)
    }

    @Test func storeReopensWithItsIdentityAndWAL() throws {
        let path = directory.file("w.db")
        let id = try Store(path: path).replicaID
        let store = try Store(path: path)
        #expect(store.replicaID == id)
        try store.setName("laptop")
        #expect(try store.name() == "laptop")
        let mode = try DatabaseQueue(path: path).read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
    }

    /// A failure underneath (SQLite's, the file system's) is kept whole as the error's
    /// cause, not only flattened into its message.
    @Test func anErrorKeepsTheErrorUnderneathAsItsCause() throws {
        let path = directory.file("not-a-store.db")
        try Data(repeating: 0x5a, count: 8192).write(to: URL(fileURLWithPath: path))
        do {
            _ = try Store(path: path)
            Issue.record("a file that is not a database opened as a store")
        } catch {
            #expect(error.code == .corrupt, "\(error)")
            let sqlite = try #require(error.cause as? DatabaseError, "cause: \(String(describing: error.cause))")
            #expect(sqlite.resultCode == .SQLITE_NOTADB)
        }
        let blobs = BlobStore(directory: directory.file("file-in-the-way"))
        try Data("x".utf8).write(to: URL(fileURLWithPath: directory.file("file-in-the-way")))
        do {
            _ = try blobs.add(bytes: Array("content".utf8))
            Issue.record("a blob was written under a plain file")
        } catch {
            #expect(error.code == .storage, "\(error)")
            #expect(error.cause is POSIXError, "cause: \(String(describing: error.cause))")
        }
    }
}

@Suite struct ObservationTests {
    let directory = TemporaryDirectory("observe")

    /// A new store, and what `fetch` reads from it each time that changes, as an app
    /// observing it with GRDB sees it.
    func observe<T: Equatable & Sendable>(
        _ fetch: @escaping @Sendable (Database) throws -> T
    ) throws -> (store: Store, values: AsyncValueObservation<T>.Iterator) {
        let store = try Store(path: directory.file("o.db"))
        return (store, ValueObservation.tracking(fetch).removeDuplicates().values(in: store.reader).makeAsyncIterator())
    }

    @Test(.timeLimit(.minutes(1)))
    func appsObserveCurrentValuesWithGRDB() async throws {
        var (store, iterator) = try observe { db in
            try String.fetchAll(db, sql: "SELECT value FROM concord_fields WHERE field = 'title' ORDER BY id")
        }
        #expect(try await iterator.next() == [])
        try store.set(RecordRef(collection: "c", id: "x"), "title", .string("Zelda"))
        let next = try await iterator.next()
        #expect(next == ["Zelda"], "\(String(describing: next))")
        // An update of a stored field, and a remote delta's fields (each written by the
        // upserts whose arguments are bound through SQLite's C API), are seen too.
        try store.set(RecordRef(collection: "c", id: "x"), "title", .string("Link"))
        let updated = try await iterator.next()
        #expect(updated == ["Link"], "\(String(describing: updated))")
        var remote = Replica(id: ReplicaID(high: 9, low: 9))
        _ = try remote.set(RecordRef(collection: "c", id: "y"), "title", .string("Mario"), now: 1)
        let first = remote.seal()
        try store.apply(try #require(first))
        _ = try remote.set(RecordRef(collection: "c", id: "y"), "title", .string("Luigi"), now: 2)
        let second = remote.seal()
        try store.apply(try #require(second))
        var seen = try await iterator.next()
        if seen == ["Link", "Mario"] { seen = try await iterator.next() }
        #expect(seen == ["Link", "Luigi"], "\(String(describing: seen))")
    }

    /// A record's liveness dots are written through statements bound by the store
    /// (`renewLiveness`): an app observing the records (the `concord_records` view over
    /// `concord_dots`) sees a new record appear, its liveness renewed by a later write, and
    /// its deletion.
    @Test(.timeLimit(.minutes(1)))
    func appsObserveRecordsAppearAndGoWithGRDB() async throws {
        var (store, iterator) = try observe { db in
            try Row.fetchAll(db, sql: "SELECT id, hlc FROM concord_dots WHERE kind = 0 ORDER BY id")
                .map { "\($0["id"] as String)@\($0["hlc"] as Int64)" }
        }
        #expect(try await iterator.next() == [])
        let ref = RecordRef(collection: "c", id: "x")
        try store.set(ref, "title", .string("Zelda"))
        let created = try #require(try await iterator.next())
        #expect(created.count == 1 && created[0].hasPrefix("x@"), "\(created)")
        try store.set(ref, "title", .string("Link"))
        let renewed = try #require(try await iterator.next())
        #expect(renewed.count == 1 && renewed != created, "\(renewed) after \(created)")
        try store.delete(ref)
        #expect(try await iterator.next() == [])
    }
}

@Suite struct BoundedSealTests {
    @Test func largeBacklogsSealInBoundedBatchesThatApplyToTheSameState() throws {
        let directory = TemporaryDirectory("bounded")
        let clock = ManualClock()
        let writer = try Store.temporary(directory, "w", clock: clock)
        let whole = try Store.temporary(directory, "whole", clock: clock)
        let parts = try Store.temporary(directory, "parts", clock: clock)
        // 40 writes (transactions) of 10 fields each, then deletes and set changes.
        for batch in 0..<40 {
            clock.advance(by: 1)
            try writer.write { tx throws(ConcordError) in
                for field in 0..<10 { try tx.set(RecordRef(collection: "c", id: "r\(batch % 7)"), "f\(field)", .int(Int64(batch))) }
            }
        }
        try writer.delete(RecordRef(collection: "c", id: "r3"))
        try writer.add(RecordRef(collection: "c", id: "r4"), "tags", .string("t"))
        // The same outbox sealed whole (on a copy of the writer) and in parts of ≤ 25 slots.
        let copyPath = directory.file("copy.db")
        try FileManager.default.copyItem(atPath: directory.file("w.db"), toPath: copyPath)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: directory.file("w.db") + suffix) {
            try FileManager.default.copyItem(atPath: directory.file("w.db") + suffix, toPath: copyPath + suffix)
        }
        let copy = try Store(path: copyPath, configuration: .init(clock: clock))
        try whole.apply(try #require(try copy.seal()?.delta))
        #expect(try !copy.hasPendingChanges())
        #expect(try writer.hasPendingChanges())
        var deltas: [Delta] = []
        while let delta = try writer.seal(maxSlots: 25)?.delta { deltas.append(delta) }
        #expect(deltas.count > 2)
        for delta in deltas {
            #expect(delta.records.reduce(0) { $0 + $1.slots.count } <= 25)
            try parts.apply(delta)
        }
        #expect(try writer.pendingChangeCount() == 0)
        #expect(try !writer.hasPendingChanges())
        #expect(try parts.state() == whole.state())
        #expect(try parts.canonicalDump() == writer.canonicalDump())
    }
}

@Suite struct StreamAttachTests {
    @Test func filesAttachFromAByteStreamAndDeduplicate() throws {
        let directory = TemporaryDirectory("stream")
        let store = try Store(path: directory.file("s.db"))
        let ref = RecordRef(collection: "c", id: "x")
        // 3 MiB produced 10 KiB at a time, never held whole.
        var produced = 0
        let file = try store.write { tx throws(ConcordError) -> FileRef in
            try tx.attachFile(ref, "data", mediaType: "application/octet-stream") { (buffer: UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int in
                let count = min(10_240, buffer.count, (3 << 20) - produced)
                for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: produced + index) }
                produced += count
                return count
            }
        }
        #expect(file.size == 3 << 20)
        let bytes = try store.blobs.bytes(file.hash)
        #expect(bytes.count == 3 << 20 && bytes[1_000_000] == UInt8(truncatingIfNeeded: 1_000_000))
        // The same content attached again is stored once.
        let again = try store.attachFile(RecordRef(collection: "c", id: "y"), "data", bytes: bytes)
        #expect(again.hash == file.hash)
        #expect(try store.blobs.all() == [file.hash])
    }
}
