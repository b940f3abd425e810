import ConcordCore

/// Encrypted blob streams: how file contents are stored remotely (docs/ARCHITECTURE.md §5), with
/// `crypto_secretstream_xchacha20poly1305` in 64 KiB chunks, so encrypting or decrypting a
/// multi-gigabyte file needs a few hundred KiB of memory whatever its size.
///
/// Layout (all lengths in bytes):
///
/// | offset | length | content |
/// |---|---|---|
/// | 0 | 3 | magic `"CNB"` (`43 4E 42`) |
/// | 3 | 1 | format version, `01` |
/// | 4 | 24 | secretstream header |
/// | 28 | … | frames: each chunk of plaintext encrypted with secretstream, 17 bytes longer |
///
/// Every chunk but the last holds exactly 64 KiB of plaintext; the last holds 0 to 64 KiB
/// and carries the `FINAL` tag (an empty blob is one empty final chunk). Each chunk's
/// associated data is the 4 bytes of magic and version followed by the UTF-8 bytes of the
/// blob's name (its remote path), so a blob stored under another name fails to open.
///
/// Format version 2 is the same but for the key generation it was sealed under, named
/// right after the version byte as in ``EncryptedObject``'s format 2 — one byte `n` (1…16),
/// then `n` sorted 16-byte generation ids — before the secretstream header. Those bytes take
/// the place of the 4-byte prefix in every chunk's associated data, so a stream cannot be
/// relabelled with another generation. A key of generation 0 seals format 1, byte for byte
/// as before key generations existed; every other generation seals format 2.
///
/// Decryption checks every chunk before handing out its plaintext and rejects, with
/// `authenticationFailed` naming the blob: a modified bit, reordered, duplicated or missing
/// chunks, a stream that ends before its final chunk (truncation), and data after it.
/// Chunks already handed out before a failure must be discarded by the caller (write to
/// a temporary file; rename only when decryption returns).
public enum BlobStream {
    /// Plaintext bytes per chunk: 64 KiB.
    public static let chunkByteCount = 65_536
    /// The 4 bytes every blob stream starts with: magic `"CNB"` and format version 1.
    public static let prefix: [UInt8] = [0x43, 0x4E, 0x42, formatVersion]
    /// The blob-stream format version this release writes and reads.
    public static let formatVersion: UInt8 = 1
    /// Bytes before the first frame: prefix and secretstream header.
    public static let headerByteCount = 4 + 24
    /// Bytes each frame adds to its chunk (secretstream's tag byte and MAC).
    public static let frameOverheadByteCount = 17
    /// The size of every frame but the last.
    public static let frameByteCount = chunkByteCount + frameOverheadByteCount

    /// Reads up to `maxCount` bytes: the buffer arrives holding at least `maxCount` bytes;
    /// the reader stores up to `maxCount` bytes at its start and returns how many. It may
    /// return fewer than asked (a short read); it returns 0 only at the end of the input.
    public typealias Reader = (_ buffer: inout [UInt8], _ maxCount: Int) throws -> Int
    /// Receives output bytes, in order. Each call hands over at most one frame (or one
    /// chunk of plaintext), never the whole blob.
    public typealias Writer = (_ bytes: [UInt8]) throws -> Void

    /// The size of the encrypted stream of a blob of `plaintextByteCount` bytes sealed under
    /// a key of `generation`.
    public static func sealedByteCount(plaintextByteCount: UInt64, generation: KeyGeneration = .zero) -> UInt64 {
        let chunks = max(1, (plaintextByteCount + UInt64(chunkByteCount) - 1) / UInt64(chunkByteCount))
        return UInt64(headerByteCount(for: generation)) + plaintextByteCount + chunks * UInt64(frameOverheadByteCount)
    }

    /// Encrypts everything `read` yields for storage under `name`, handing the header and
    /// then each frame to `write`. Holds at most two chunks of plaintext at a time (one of
    /// look-ahead, to know which chunk is the last).
    ///
    /// - Returns: the number of plaintext bytes encrypted.
    /// - Throws: whatever `read` or `write` throw; `invalidParameter` if `read` claims more
    ///   bytes than asked for.
    @discardableResult
    public static func encrypt(key: SubKey, name: String, read: Reader, write: Writer) throws -> UInt64 {
        var encryptor = BlobEncryptor(key: key, name: name)
        try write(encryptor.header)
        var input = ChunkReader()
        var current = [UInt8](repeating: 0, count: chunkByteCount)
        var next = [UInt8](repeating: 0, count: chunkByteCount)
        var currentCount = try input.fill(&current, count: chunkByteCount, from: read)
        var total: UInt64 = 0
        while true {
            if currentCount < chunkByteCount {
                try write(encryptor.seal(chunk: current[0..<currentCount], isFinal: true))
                return total + UInt64(currentCount)
            }
            let nextCount = try input.fill(&next, count: chunkByteCount, from: read)
            try write(encryptor.seal(chunk: current, isFinal: nextCount == 0))
            total += UInt64(currentCount)
            if nextCount == 0 { return total }
            swap(&current, &next)
            currentCount = nextCount
        }
    }

    /// Decrypts a stream written by ``encrypt(key:name:read:write:)`` for `name`, checking
    /// each frame before handing its plaintext to `write`. Holds at most one frame at a time.
    ///
    /// - Returns: the number of plaintext bytes decrypted.
    /// - Throws: `authenticationFailed` naming `name` for any tampering, truncation,
    ///   reordering, duplication, trailing data, wrong key or wrong name;
    ///   `unsupportedVersion` for an unknown format version; whatever `read` or `write`
    ///   throw.
    @discardableResult
    public static func decrypt(key: SubKey, name: String, read: Reader, write: Writer) throws -> UInt64 {
        var input = ChunkReader()
        var header = [UInt8](repeating: 0, count: leadByteCount)
        header.removeLast(leadByteCount - (try input.fill(&header, count: leadByteCount, from: read)))
        let length = headerByteCount(startingWith: header)
        if length > header.count {
            var rest = [UInt8](repeating: 0, count: length - header.count)
            let got = try input.fill(&rest, count: rest.count, from: read)
            header += rest.prefix(got)
        }
        var decryptor = try BlobDecryptor(header: header.prefix(length), key: key, name: name)
        var frame = [UInt8](repeating: 0, count: frameByteCount)
        var total: UInt64 = 0
        while !decryptor.isFinished {
            let count = try input.fill(&frame, count: frameByteCount, from: read)
            if count == 0 { try decryptor.finish() }  // throws: no final chunk
            let chunk = try decryptor.open(frame: frame[0..<count])
            total += UInt64(chunk.count)
            try write(chunk)
        }
        var probe = [UInt8](repeating: 0, count: 1)
        if try input.fill(&probe, count: 1, from: read) != 0 {
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it has data after its final chunk; it was modified; run `concord doctor`")
        }
        return total
    }
}

/// Turns a ``BlobStream/Reader`` that may return short reads into exact fills.
struct ChunkReader {
    private var scratch: [UInt8] = []
    private var ended = false

    /// Fills `buffer[0..<count]` as far as the input allows; returns how many bytes it
    /// stored, fewer than `count` only at the end of the input.
    mutating func fill(_ buffer: inout [UInt8], count: Int, from read: BlobStream.Reader) throws -> Int {
        var filled = 0
        while filled < count, !ended {
            let want = count - filled
            if scratch.count < want { scratch = [UInt8](repeating: 0, count: max(want, BlobStream.frameByteCount)) }
            let got = try read(&scratch, want)
            guard got >= 0, got <= want, got <= scratch.count else {
                throw ConcordError(.invalidParameter, "a blob reader returned \(got) bytes when asked for at most \(want): a reader stores up to maxCount bytes at the start of the buffer and returns how many")
            }
            if got == 0 {
                ended = true
                break
            }
            buffer.withUnsafeMutableBytes { out in
                scratch.withUnsafeBytes { src in
                    out.baseAddress!.advanced(by: filled).copyMemory(from: src.baseAddress!, byteCount: got)
                }
            }
            filled += got
        }
        return filled
    }
}
