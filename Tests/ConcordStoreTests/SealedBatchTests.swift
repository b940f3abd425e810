import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// A sealed batch is one value: `seal` returns it as sealed and `sealedBatch(seq:)` reads
/// the same one back, for as long as the store keeps its bytes.
@Suite struct SealedBatchTests {
    @Test func sealReturnsTheBatchSealedBatchReadsBack() throws {
        let directory = TemporaryDirectory("sealed-batch")
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let ref = RecordRef(collection: "notes", id: "n1")
        let file = try store.attachFile(ref, "doc", bytes: Array("a document".utf8))
        try store.set(ref, "title", .string("with a file"))
        let batch = try #require(try store.seal())
        #expect(batch.seq == 1 && batch.delta.seq == 1 && batch.delta.origin == store.replicaID)
        #expect(batch.bytes == DeltaCodec.encode(batch.delta))
        #expect(batch.files == [file.hash])
        #expect(try store.sealedBatch(seq: 1) == batch)
        #expect(try store.sealedBatch(seq: 2) == nil)

        clock.advance(by: 1_000)
        try store.set(ref, "title", .string("again"))
        let second = try #require(try store.seal())
        #expect(second.seq == 2 && second.files.isEmpty)
        #expect(try store.sealedBatch(seq: 2) == second)
        try store.forgetSealedDeltas([1])
        #expect(try store.sealedBatch(seq: 1) == nil)
        #expect(try store.sealedBatch(seq: 2) == second)
    }
}
