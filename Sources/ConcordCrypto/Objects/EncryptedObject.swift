import ConcordCore

/// Encrypted objects: how batches, heads and snapshots are stored remotely (docs/ARCHITECTURE.md §5).
///
/// Layout of a encrypted object (all lengths in bytes):
///
/// | offset | length | content |
/// |---|---|---|
/// | 0 | 3 | magic `"CNC"` (`43 4E 43`) |
/// | 3 | 1 | format version, `01` |
/// | 4 | 24 | random nonce |
/// | 28 | n + 16 | XChaCha20-Poly1305-IETF ciphertext of the n plaintext bytes, then the tag |
///
/// The associated data is the 4 bytes of magic and version followed by the UTF-8 bytes of
/// the object's remote path (e.g. `replicas/3f…/deltas/000000000000002a`). So an object
/// copied, moved or replayed under another name fails to open, exactly as a modified or
/// truncated one does: with `authenticationFailed` and a message naming the path.
///
/// Format version 2 is the same but for the key generation it was sealed under, named
/// right after the version byte — one byte `n` (1…16), then `n` 16-byte generation ids,
/// sorted (``KeyGeneration``) — before the nonce. Those bytes are part of the associated
/// data too, so an object cannot be relabelled with another generation. A key of
/// generation 0 (the key of `concord.json`) seals format 1, byte for byte as before key
/// generations existed; every other generation seals format 2. A reader opens either.
///
/// Rule: encrypt each object with the sub-key of its kind (``KeyPurpose/batches``,
/// ``KeyPurpose/heads``, ``KeyPurpose/snapshots``) and its final remote path; open it
/// with the same. The nonce is random (192 bits), so encrypting the same bytes twice gives
/// different objects and nonces never repeat in practice.
public enum EncryptedObject {
    /// The 4 bytes every encrypted object starts with: magic `"CNC"` and format version 1.
    public static let prefix: [UInt8] = [0x43, 0x4E, 0x43, formatVersion]
    /// The encrypted-object format version sealed under generation 0's key.
    public static let formatVersion: UInt8 = 1
    /// The encrypted-object format version sealed under any later key generation.
    public static let generationFormatVersion: UInt8 = 2
    /// Bytes before the ciphertext of a format-1 object: prefix and nonce.
    public static let headerByteCount = 4 + XChaCha20Poly1305.nonceByteCount
    /// How many bytes encryption adds to a plaintext under generation 0: header and tag.
    public static let overheadByteCount = headerByteCount + XChaCha20Poly1305.tagByteCount

    /// How many bytes encryption under a key of `generation` adds to a plaintext.
    public static func overheadByteCount(for generation: KeyGeneration) -> Int {
        generationHeader(generation).count + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount
    }

    /// Whether an object of `size` bytes could be `count` plaintext bytes sealed under some
    /// key generation (format 1, or format 2 naming 1 to 16 generations): how a listing's
    /// size tells a torn object from a whole one without knowing which key sealed it.
    public static func isSealedSize(_ size: UInt64, ofPlaintext count: Int) -> Bool {
        guard size >= UInt64(count + overheadByteCount) else { return false }
        let extra = size - UInt64(count + overheadByteCount)
        if extra == 0 { return true }
        let idBytes = UInt64(KeyGenerationID.byteCount)
        return extra > 1 && (extra - 1) % idBytes == 0 && (extra - 1) / idBytes <= UInt64(KeyGeneration.maxCount)
    }

    /// The header bytes before the nonce: the prefix for generation 0; magic, version 2,
    /// the id count and the ids for any other.
    static func generationHeader(_ generation: KeyGeneration) -> [UInt8] {
        guard !generation.isZero else { return prefix }
        return Array(prefix.prefix(3)) + [generationFormatVersion, UInt8(generation.ids.count)] + generation.ids.flatMap(\.bytes)
    }

    /// Encrypts `plaintext` for storage at `path`, with a fresh random nonce.
    public static func encrypt(_ plaintext: some Collection<UInt8>, path: String, key: SubKey) -> [UInt8] {
        encrypt(plaintext, path: path, key: key, nonce: Sodium.randomBytes(XChaCha20Poly1305.nonceByteCount))
    }

    /// Encrypts with a given nonce: for fixtures inside this package only. Never reuse a nonce.
    package static func encrypt(_ plaintext: some Collection<UInt8>, path: String, key: SubKey, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == XChaCha20Poly1305.nonceByteCount)
        let header = generationHeader(key.generation)
        let body = key.secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.seal(key: keyPointer, nonce: nonce, plaintext: plaintext, ad: header + Array(path.utf8))
        }
        var encrypted = header
        encrypted.reserveCapacity(header.count + nonce.count + body.count)
        encrypted += nonce
        encrypted += body
        return encrypted
    }

    /// Opens an object read from `path`, returning its plaintext.
    ///
    /// - Throws: `authenticationFailed` (naming `path`) when the bytes were modified,
    ///   truncated, encrypted for another path, or under another key — never a crash, and no
    ///   plaintext is returned. `unsupportedVersion` when the magic is right but the format
    ///   version is one this release cannot read.
    public static func open(_ encrypted: some Collection<UInt8>, path: String, key: SubKey) throws(ConcordError) -> [UInt8] {
        let bytes = Array(encrypted)
        let header = try checkHeader(bytes, path: path, key: key)
        let end = header + XChaCha20Poly1305.nonceByteCount
        let nonce = Array(bytes[header..<end])
        let opened = key.secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.open(key: keyPointer, nonce: nonce, ciphertext: bytes[end...], ad: Array(bytes[..<header]) + Array(path.utf8))
        }
        guard let opened else { throw authenticationFailed(path) }
        return opened
    }

    /// ``open(_:path:key:)`` in the bytes' own memory: the plaintext takes the place of the
    /// object, so opening a large object (a snapshot) never holds it twice.
    public static func open(consuming encrypted: consuming [UInt8], path: String, key: SubKey) throws(ConcordError) -> [UInt8] {
        var bytes = consume encrypted
        let header = try checkHeader(bytes, path: path, key: key)
        let end = header + XChaCha20Poly1305.nonceByteCount
        let nonce = Array(bytes[header..<end])
        let ad = Array(bytes[..<header]) + Array(path.utf8)
        let count = key.secret.withKeyPointer { keyPointer in
            bytes.withUnsafeMutableBufferPointer { buffer in
                XChaCha20Poly1305.openInPlace(key: keyPointer, nonce: nonce, buffer: UnsafeMutableBufferPointer(rebasing: buffer[end...]), ad: ad)
            }
        }
        guard let count else { throw authenticationFailed(path) }
        bytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            base.update(from: base + end, count: count)
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    /// The key generation `encrypted` names in its header: generation 0 for format 1.
    /// Throws as ``open(_:path:key:)`` does for a header that is not a Concord object's.
    public static func generation(of encrypted: some Collection<UInt8>, path: String) throws(ConcordError) -> KeyGeneration {
        let bytes = Array(encrypted.prefix(5 + KeyGeneration.maxCount * KeyGenerationID.byteCount))
        return try parseHeader(bytes, path: path, whole: false).generation
    }

    /// Checks the header and that it names `key`'s generation; returns the length of the
    /// header before the nonce.
    private static func checkHeader(_ bytes: [UInt8], path: String, key: SubKey) throws(ConcordError) -> Int {
        let (generation, length) = try parseHeader(bytes, path: path, whole: true)
        guard generation == key.generation else {
            throw ConcordError(.authenticationFailed, "remote object \(path) was sealed under key generation \(generation), not under the key given (generation \(key.generation))")
        }
        return length
    }

    private static func parseHeader(_ bytes: [UInt8], path: String, whole: Bool) throws(ConcordError) -> (generation: KeyGeneration, length: Int) {
        guard bytes.count >= 5, bytes[0..<3].elementsEqual(prefix[0..<3]), bytes[3] == generationFormatVersion else {
            try checkHeader(bytes, path: path)
            return (.zero, 4)
        }
        let length = 5 + Int(bytes[4]) * KeyGenerationID.byteCount
        let ids = bytes.count >= length
            ? stride(from: 5, to: length, by: KeyGenerationID.byteCount).compactMap { KeyGenerationID(bytes: bytes[$0..<($0 + KeyGenerationID.byteCount)]) }
            : []
        guard let generation = KeyGeneration(ids), generation.ids == ids, !generation.isZero else {
            throw ConcordError(.authenticationFailed, "remote object \(path) failed authentication: its header names no valid key generation; it was modified or truncated; run `concord doctor`")
        }
        let least = length + XChaCha20Poly1305.nonceByteCount + XChaCha20Poly1305.tagByteCount
        if whole, bytes.count < least {
            throw ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it is \(bytes.count) bytes, shorter than any encrypted object of its header (\(least)); it was truncated; run `concord doctor`")
        }
        return (generation, length)
    }

    /// The format-1 checks, in their order of old: length, magic, version.
    private static func checkHeader(_ bytes: [UInt8], path: String) throws(ConcordError) {
        guard bytes.count >= overheadByteCount else {
            throw ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it is \(bytes.count) bytes, shorter than any encrypted object (\(overheadByteCount)); it was truncated or is not a Concord object; run `concord doctor`")
        }
        guard bytes[0..<3].elementsEqual(prefix[0..<3]) else {
            throw ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it does not start with a Concord encrypted-object header; it was modified or is not a Concord object; run `concord doctor`")
        }
        guard bytes[3] == formatVersion else {
            throw ConcordError(.unsupportedVersion, "remote object \(path) uses encrypted-object format version \(bytes[3]), which this release cannot read (it reads versions \(formatVersion) and \(generationFormatVersion)): upgrade Concord; if no newer client writes to this store, the object was damaged; run `concord doctor`")
        }
    }

    private static func authenticationFailed(_ path: String) -> ConcordError {
        ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it was modified or truncated, or it was written under another name or for another store; run `concord doctor`")
    }
}
