import CSodium
import ConcordCore

/// Encrypts one blob chunk by chunk, for callers that drive their own I/O (for instance
/// an async upload). ``BlobStream/encrypt(key:name:read:write:)`` does the same for a
/// reader and a writer closure.
///
/// Write ``header`` first, then the frame of each chunk, in order. Every chunk but the
/// last must hold exactly ``BlobStream/chunkByteCount`` bytes; the last one (0 to 64 KiB,
/// `isFinal: true`) ends the stream. The type is non-copyable: a copied encryptor state
/// would encrypt two chunks under one nonce.
public struct BlobEncryptor: ~Copyable {
    /// The stream header to write before the first frame: prefix and secretstream header.
    public let header: [UInt8]
    /// True once the final chunk was sealed; no further chunks are accepted.
    public private(set) var isFinished = false

    private let state: UnsafeMutableRawPointer
    private let stateByteCount: Int
    private let associatedData: [UInt8]
    private let name: String

    /// Starts a stream for the blob stored under `name`, keyed by the
    /// ``KeyPurpose/blobContents`` sub-key, with a fresh random secretstream header. A key of
    /// generation 0 writes format 1; any other, format 2 naming its generation.
    public init(key: SubKey, name: String) {
        Sodium.ensureInitialized()
        let stateByteCount = crypto_secretstream_xchacha20poly1305_statebytes()
        let state = UnsafeMutableRawPointer.allocate(byteCount: stateByteCount, alignment: 16)
        var streamHeader = [UInt8](repeating: 0, count: Int(crypto_secretstream_xchacha20poly1305_headerbytes()))
        key.secret.withKeyPointer { keyPointer in
            _ = crypto_secretstream_xchacha20poly1305_init_push(
                state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self),
                &streamHeader, keyPointer)
        }
        self.stateByteCount = stateByteCount
        self.state = state
        let prefix = BlobStream.prefix(for: key.generation)
        header = prefix + streamHeader
        associatedData = prefix + Array(name.utf8)
        self.name = name
    }

    deinit {
        sodium_memzero(state, stateByteCount)
        state.deallocate()
    }

    /// Encrypts one chunk and returns its frame.
    ///
    /// - Throws: `invalidParameter` when a non-final chunk is not exactly 64 KiB or a
    ///   final one is larger; `invalidOperation` after the final chunk.
    public mutating func seal(chunk: some Collection<UInt8>, isFinal: Bool) throws(ConcordError) -> [UInt8] {
        guard !isFinished else {
            throw ConcordError(.invalidOperation, "blob \(name): the stream already ended with its final chunk")
        }
        guard chunk.count == BlobStream.chunkByteCount || (isFinal && chunk.count < BlobStream.chunkByteCount) else {
            throw ConcordError(.invalidParameter, "blob \(name): a \(isFinal ? "final" : "non-final") chunk of \(chunk.count) bytes; every chunk but the last holds exactly \(BlobStream.chunkByteCount) bytes and the last at most that")
        }
        let tag = isFinal ? crypto_secretstream_xchacha20poly1305_tag_final() : crypto_secretstream_xchacha20poly1305_tag_message()
        let frameCount = chunk.count + BlobStream.frameOverheadByteCount
        let state = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
        let frame = [UInt8](unsafeUninitializedCapacity: frameCount) { out, initialized in
            var written: UInt64 = 0
            chunk.withNonNullBytes { m, mCount in
                associatedData.withNonNullBytes { a, aCount in
                    _ = crypto_secretstream_xchacha20poly1305_push(
                        state, out.baseAddress!, &written, m, UInt64(mCount), a, UInt64(aCount), tag)
                }
            }
            initialized = Int(written)
        }
        isFinished = isFinal
        return frame
    }
}
