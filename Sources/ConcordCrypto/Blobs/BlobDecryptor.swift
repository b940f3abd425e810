import CSodium
import ConcordCore

/// Decrypts one blob frame by frame, for callers that drive their own I/O (for instance
/// an async download). ``BlobStream/decrypt(key:name:read:write:)`` does the same for a
/// reader and a writer closure.
///
/// Pass the stream's first ``BlobStream/headerByteCount`` bytes to `init`, then each frame
/// (``BlobStream/frameByteCount`` bytes, the last one shorter) to ``open(frame:)``. When the
/// input ends, call ``finish()``: it throws if the final chunk never came (truncation).
/// After any failure the decryptor refuses further frames. Non-copyable, like
/// ``BlobEncryptor``.
public struct BlobDecryptor: ~Copyable {
    /// True once the final chunk was opened: the blob is complete.
    public private(set) var isFinished = false
    /// How many frames were opened so far.
    public private(set) var frameIndex = 0

    private var failed = false
    private let state: UnsafeMutableRawPointer
    private let stateByteCount: Int
    private let associatedData: [UInt8]
    private let name: String

    /// Starts decrypting the blob stored under `name`, keyed by the
    /// ``KeyPurpose/blobContents`` sub-key of the generation its header names.
    ///
    /// - Throws: `authenticationFailed` when `header` is too short, not a blob stream
    ///   header, or names another key generation than `key`'s; `unsupportedVersion` for an
    ///   unknown format version.
    public init(header: some Collection<UInt8>, key: SubKey, name: String) throws(ConcordError) {
        try self.init(header: header, name: name) { (generation: KeyGeneration) throws(ConcordError) -> SubKey in
            guard generation == key.generation else {
                throw ConcordError(.authenticationFailed, "remote blob \(name) was sealed under key generation \(generation), not under the key given (generation \(key.generation))")
            }
            return key
        }
    }

    /// Starts decrypting the blob stored under `name`, with the ``KeyPurpose/blobContents``
    /// sub-key `key` gives for the generation its header names (and throws for one it does
    /// not hold).
    ///
    /// - Throws: what ``BlobStream/generation(ofHeader:name:)`` and `key` throw, and
    ///   `authenticationFailed` for an invalid stream header.
    public init(header: some Collection<UInt8>, name: String, key keyOf: (KeyGeneration) throws(ConcordError) -> SubKey) throws(ConcordError) {
        let header = Array(header)
        let generation = try BlobStream.generation(ofHeader: header, name: name)
        let key = try keyOf(generation)
        guard key.generation == generation, key.purpose == .blobContents else {
            throw ConcordError(.authenticationFailed, "remote blob \(name) was sealed under key generation \(generation), not under the key given (generation \(key.generation))")
        }
        let prefix = BlobStream.prefix(for: generation)
        Sodium.ensureInitialized()
        let stateByteCount = crypto_secretstream_xchacha20poly1305_statebytes()
        let state = UnsafeMutableRawPointer.allocate(byteCount: stateByteCount, alignment: 16)
        let status = key.secret.withKeyPointer { keyPointer in
            Array(header[prefix.count...]).withNonNullBytes { h, _ in
                crypto_secretstream_xchacha20poly1305_init_pull(
                    state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self), h, keyPointer)
            }
        }
        guard status == 0 else {
            sodium_memzero(state, stateByteCount)
            state.deallocate()
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: its stream header is invalid; it was modified; run `concord doctor`")
        }
        self.state = state
        self.stateByteCount = stateByteCount
        self.associatedData = prefix + Array(name.utf8)
        self.name = name
    }

    deinit {
        sodium_memzero(state, stateByteCount)
        state.deallocate()
    }

    /// Checks and decrypts the next frame and returns its plaintext chunk.
    ///
    /// - Throws: `authenticationFailed` naming the blob and the frame when the frame was
    ///   modified, is out of order, duplicated, or of an impossible size, when it follows
    ///   the final chunk, or when an earlier frame already failed.
    public mutating func open(frame: some Collection<UInt8>) throws(ConcordError) -> [UInt8] {
        guard !failed else {
            throw ConcordError(.authenticationFailed, "remote blob \(name): an earlier chunk failed authentication; discard everything decrypted from it")
        }
        guard !isFinished else {
            failed = true
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it has data after its final chunk; it was modified; run `concord doctor`")
        }
        guard frame.count >= BlobStream.frameOverheadByteCount, frame.count <= BlobStream.frameByteCount else {
            failed = true
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication at chunk \(frameIndex): a frame of \(frame.count) bytes is impossible; it was truncated or modified; run `concord doctor`")
        }
        let state = state.assumingMemoryBound(to: crypto_secretstream_xchacha20poly1305_state.self)
        var tag: UInt8 = 0
        var status: Int32 = -1
        let chunk = [UInt8](unsafeUninitializedCapacity: max(frame.count - BlobStream.frameOverheadByteCount, 1)) { out, initialized in
            var written: UInt64 = 0
            frame.withNonNullBytes { c, cCount in
                associatedData.withNonNullBytes { a, aCount in
                    status = crypto_secretstream_xchacha20poly1305_pull(
                        state, out.baseAddress!, &written, &tag, c, UInt64(cCount), a, UInt64(aCount))
                }
            }
            initialized = status == 0 ? Int(written) : 0
        }
        guard status == 0 else {
            failed = true
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication at chunk \(frameIndex): it was modified, truncated or reordered, or it is stored under the wrong name; run `concord doctor`")
        }
        let isFinal = tag == crypto_secretstream_xchacha20poly1305_tag_final()
        let isFull = frame.count == BlobStream.frameByteCount
        guard isFinal || (tag == crypto_secretstream_xchacha20poly1305_tag_message() && isFull) else {
            failed = true
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication at chunk \(frameIndex): the chunk breaks the stream layout (tag \(tag), \(frame.count) bytes); run `concord doctor`")
        }
        frameIndex += 1
        isFinished = isFinal
        return chunk
    }

    /// Call when the input has ended: throws `authenticationFailed` unless the final
    /// chunk was opened, since a stream cut at a chunk boundary is otherwise well-formed.
    public func finish() throws(ConcordError) {
        guard isFinished else {
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it ends after chunk \(frameIndex) without its final chunk; it was truncated (perhaps still uploading); run `concord doctor`")
        }
    }
}
