import ConcordCore

/// One batch this replica sealed: the delta ``Store/seal(maxSlots:)`` closed the outbox
/// into, numbered ``seq``, with the bytes it was encoded to — kept in the store exactly as
/// first sealed, so every push of it, retried or repaired, sends the same ones — and the
/// files it references that this replica wrote (the ones its push uploads; others' files
/// are uploaded by their writers).
///
/// `seal` returns it as it was just sealed; ``Store/sealedBatch(seq:)`` reads the same
/// value back, for as long as the store keeps it (until ``Store/forgetSealedDeltas(_:)``).
/// Sealing encrypts nothing: the sync engine encrypts ``bytes`` when it pushes them.
///
/// ```swift
/// try store.put(RecordRef(collection: "games", id: "zelda"), ["title": .scalar(.string("Zelda"))])
/// if let batch = try store.seal() {
///     // batch.seq == 1; batch.delta holds the one record; batch.files is empty
///     let again = try store.sealedBatch(seq: batch.seq)
///     assert(again == batch)  // the same delta, the same bytes
/// }
/// ```
public struct SealedBatch: Hashable, Sendable {
    /// The changes sealed: this replica's delta `seq`.
    public let delta: Delta
    /// `delta` encoded by `DeltaCodec`, exactly as sealed: the plaintext a push encrypts.
    public let bytes: [UInt8]

    /// The batch's number, its place in this replica's sequence (`delta.seq`).
    public var seq: UInt64 { delta.seq }

    /// The files the batch references that this replica wrote: the ones pushing it
    /// uploads before the batch itself.
    public var files: Set<ContentHash> {
        Set(delta.fileReferences.lazy.filter { $0.writer == delta.origin }.map(\.file.hash))
    }

    init(delta: Delta, bytes: [UInt8]) {
        self.delta = delta
        self.bytes = bytes
    }
}
