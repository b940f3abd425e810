import ConcordCore

/// What a snapshot object holds: a replica's full state, and per origin the seq of the
/// newest batch that state contains (so a reader knows which batches it covers).
public struct SnapshotContents: Hashable, Sendable {
    public var state: StoreState
    public var appliedSeqs: [ReplicaID: UInt64]

    public init(state: StoreState, appliedSeqs: [ReplicaID: UInt64]) {
        self.state = state
        self.appliedSeqs = appliedSeqs
    }
}

/// The plaintext of a snapshot object (docs/FORMAT.md §8): `u32 count`, then `count ×
/// (16-byte replica id, u64 seq)` in ascending replica order, then the snapshot encoding
/// (§4.4). The two integers are big-endian — the one place in the format that is, kept so
/// that every snapshot already written still reads.
public enum SnapshotObjectCodec {
    public static func encode(_ contents: SnapshotContents) throws(ConcordError) -> [UInt8] {
        seqTable(contents.appliedSeqs) + (try SnapshotCodec.encode(contents.state))
    }

    /// The seq table that starts the plaintext, before the snapshot encoding (a store writing
    /// its snapshot as it reads it passes it to ``SnapshotWriter`` as its prefix).
    package static func seqTable(_ appliedSeqs: [ReplicaID: UInt64]) -> [UInt8] {
        let sorted = appliedSeqs.sorted { $0.key < $1.key }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(4 + sorted.count * 24)
        appendBigEndian(UInt64(sorted.count), width: 4, to: &bytes)
        for (replica, seq) in sorted {
            bytes += replica.bytes
            appendBigEndian(seq, width: 8, to: &bytes)
        }
        return bytes
    }

    /// - Throws: ``/ConcordCore/ConcordError/Code/truncated`` when the seq table runs past
    ///   the end; `malformed` when its replicas are not in strictly ascending order (one
    ///   encoding per contents, as everywhere in the format); what ``SnapshotCodec/decode(_:)``
    ///   throws for the state.
    public static func decode(_ bytes: [UInt8], path: String) throws(ConcordError) -> SnapshotContents {
        let reader = try SnapshotObjectReader(bytes, path: path)
        return SnapshotContents(state: try reader.records.state(), appliedSeqs: reader.appliedSeqs)
    }

    static func appendBigEndian(_ value: UInt64, width: Int, to bytes: inout [UInt8]) {
        for shift in stride(from: (width - 1) * 8, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift))) }
    }

    static func readBigEndian(_ bytes: ArraySlice<UInt8>) -> UInt64 {
        bytes.reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
    }
}

/// A snapshot object's plaintext read as far as its first record: what it covers, and a
/// ``SnapshotReader`` for its records, one at a time (a new replica joins a snapshot this way
/// without holding the whole state in memory).
public struct SnapshotObjectReader: Sendable {
    /// Per origin, the seq of the newest batch the snapshot contains.
    public let appliedSeqs: [ReplicaID: UInt64]
    /// The snapshot's records, from the first; copy it to read them more than once.
    public let records: SnapshotReader

    /// - Throws: what ``SnapshotObjectCodec/decode(_:path:)`` throws for the seq table, the
    ///   header, the context and the tables; the records throw as they are read.
    public init(_ bytes: [UInt8], path: String) throws(ConcordError) {
        guard bytes.count >= 4 else { throw ConcordError(.truncated, "snapshot \(path) is truncated") }
        // The count's high byte is the framing's version: 0 in this format (no store has
        // 2^24 replicas). A later framing sets it, and this release refuses that snapshot
        // as a newer format rather than misreading it (docs/FORMAT.md §8.3).
        guard bytes[0] == 0 else {
            throw ConcordError(.unsupportedVersion, "snapshot \(path) has framing version \(bytes[0]), which this release does not read: upgrade Concord")
        }
        let count = Int(SnapshotObjectCodec.readBigEndian(bytes[0..<4]))
        guard count <= (bytes.count - 4) / 24 else { throw ConcordError(.truncated, "snapshot \(path) is truncated") }
        var seqs: [ReplicaID: UInt64] = [:]
        var offset = 4
        var previous: ReplicaID?
        for _ in 0..<count {
            let replica = ReplicaID(bytes: bytes[offset..<offset + 16])!
            if let previous, replica <= previous {
                throw ConcordError(.malformed, "snapshot \(path)'s table of applied seqs is not in ascending replica order (\(replica) after \(previous))")
            }
            previous = replica
            seqs[replica] = SnapshotObjectCodec.readBigEndian(bytes[offset + 16..<offset + 24])
            offset += 24
        }
        appliedSeqs = seqs
        records = try SnapshotReader(bytes, startingAt: offset)
    }
}
