import ConcordCore
import ConcordStore
import ConcordTesting
import GRDB
import Testing

/// Another replica can depend on this one only up to 0 or the end of a batch this one
/// sealed; the store keeps those ends (schema version 5) so a sync can tell a batch that
/// depends on changes this store never sealed.
@Suite struct OwnBatchesTests {
    /// Three batches, each ended at its own stamp; returns the ends.
    func sealThree(_ store: Store, _ clock: ManualClock) throws -> [UInt64] {
        var ends: [UInt64] = []
        for index in 1...3 {
            clock.advance(by: 1_000)
            try store.set(RecordRef(collection: "notes", id: "n\(index)"), "title", .string("\(index)"))
            ends.append(try #require(try store.seal()?.delta).upTo)
        }
        return ends
    }

    @Test func onlyTheEndsOfSealedBatchesAndZeroAreStampsAnotherReplicaMayDependOn() throws {
        let directory = TemporaryDirectory("own-batches")
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let ends = try sealThree(store, clock)
        #expect(try store.sealedABatchEnding(at: 0))
        for end in ends { #expect(try store.sealedABatchEnding(at: end), "end \(end)") }
        // Between two ends, before the first, past the last: never an end this store sealed.
        for stamp in [ends[0] - 1, ends[0] + 1, ends[2] + 1, UInt64.max] {
            #expect(try !store.sealedABatchEnding(at: stamp), "stamp \(stamp)")
        }
        // Unsealed writes end no batch.
        clock.advance(by: 1_000)
        try store.set(RecordRef(collection: "notes", id: "n4"), "title", .string("4"))
        #expect(try !store.sealedABatchEnding(at: store.versionVector()[store.replicaID]))
    }

    /// Compaction forgets the first batches' bytes and the record of their ends: a stamp
    /// before the first end kept may be one of them, so it is not held against anyone;
    /// past it the record is complete.
    @Test func forgettingSealedBatchesKeepsTheRecordCompleteFromTheNewestForgotten() throws {
        let directory = TemporaryDirectory("own-batches-pruned")
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let ends = try sealThree(store, clock)
        try store.forgetSealedDeltas([1, 2])
        let rows = try store.reader.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM concord_own_batches") }
        #expect(rows == 2)
        #expect(try store.sealedABatchEnding(at: ends[0]))
        #expect(try store.sealedABatchEnding(at: ends[0] - 1))
        #expect(try store.sealedABatchEnding(at: ends[1]))
        #expect(try !store.sealedABatchEnding(at: ends[1] + 1))
        #expect(try !store.sealedABatchEnding(at: ends[2] + 1))
    }

    /// A store of version 4 knows the end of its newest batch and of the batches whose bytes
    /// it keeps; the migration records those, and is lenient only before the first.
    @Test func aVersionFourStoreMigratesWithTheEndsItStillKnows() throws {
        let directory = TemporaryDirectory("own-batches-v4")
        let clock = ManualClock()
        let path = directory.file("a.db")
        var ends: [UInt64] = []
        do {
            let store = try Store(path: path, configuration: .init(clock: clock))
            ends = try sealThree(store, clock)
            try store.forgetSealedDeltas([1])
        }
        try DatabaseQueue(path: path).write { db in try downgradeOwnBatchesToVersionFour(db) }
        let store = try Store(path: path, configuration: .init(clock: clock))
        let from = try store.reader.read { db in try Int.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'own_batches_from'") }
        #expect(from == 2)
        #expect(try store.sealedABatchEnding(at: ends[0]))
        #expect(try store.sealedABatchEnding(at: ends[1]))
        #expect(try store.sealedABatchEnding(at: ends[2]))
        #expect(try !store.sealedABatchEnding(at: ends[1] + 1))
        #expect(try !store.sealedABatchEnding(at: ends[2] + 1))
        // And the next batch is recorded as it is sealed.
        clock.advance(by: 1_000)
        try store.set(RecordRef(collection: "notes", id: "n4"), "title", .string("4"))
        #expect(try store.sealedABatchEnding(at: try #require(try store.seal()?.delta).upTo))
    }

    /// A store that continues under a new id has sealed nothing under it: of the old id's
    /// ends, only the stamp its context for the new id starts at (the old top) stands.
    @Test func aNewIdentityHasNoBatchEnds() throws {
        let directory = TemporaryDirectory("own-batches-adopt")
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let ends = try sealThree(store, clock)
        var generator = SystemRandomNumberGenerator()
        try store.adoptIdentity(ReplicaID.random(using: &generator), sharedThrough: 3)
        for end in ends.dropLast() { #expect(try !store.sealedABatchEnding(at: end)) }
        #expect(try store.versionVector()[store.replicaID] == ends[2])
        #expect(try store.sealedABatchEnding(at: 0))
    }

    /// A store that continues under a new id with writes past what it shares takes them
    /// over: its context for the new id starts at their top, and a snapshot it writes
    /// before its first batch shows that stamp, so others may depend on it.
    @Test func aNewIdentitysContextStartIsAStampOthersMayDependOn() throws {
        let directory = TemporaryDirectory("own-batches-adopt-top")
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        _ = try sealThree(store, clock)
        var generator = SystemRandomNumberGenerator()
        try store.adoptIdentity(ReplicaID.random(using: &generator), sharedThrough: 1)
        let top = try store.versionVector()[store.replicaID]
        #expect(top > 0)
        #expect(try store.sealedABatchEnding(at: top))
        #expect(try !store.sealedABatchEnding(at: top - 1))
    }
}
