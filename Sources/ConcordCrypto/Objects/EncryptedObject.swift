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
/// Rule: encrypt each object with the sub-key of its kind (``KeyPurpose/batches``,
/// ``KeyPurpose/heads``, ``KeyPurpose/snapshots``) and its final remote path; open it
/// with the same. The nonce is random (192 bits), so encrypting the same bytes twice gives
/// different objects and nonces never repeat in practice.
public enum EncryptedObject {
    /// The 4 bytes every encrypted object starts with: magic `"CNC"` and format version 1.
    public static let prefix: [UInt8] = [0x43, 0x4E, 0x43, formatVersion]
    /// The encrypted-object format version this release writes and reads.
    public static let formatVersion: UInt8 = 1
    /// Bytes before the ciphertext: prefix and nonce.
    public static let headerByteCount = 4 + XChaCha20Poly1305.nonceByteCount
    /// How many bytes encryption adds to a plaintext: header and tag.
    public static let overheadByteCount = headerByteCount + XChaCha20Poly1305.tagByteCount

    /// Encrypts `plaintext` for storage at `path`, with a fresh random nonce.
    public static func encrypt(_ plaintext: some Collection<UInt8>, path: String, key: SubKey) -> [UInt8] {
        encrypt(plaintext, path: path, key: key, nonce: Sodium.randomBytes(XChaCha20Poly1305.nonceByteCount))
    }

    /// Encrypts with a given nonce: for fixtures inside this package only. Never reuse a nonce.
    package static func encrypt(_ plaintext: some Collection<UInt8>, path: String, key: SubKey, nonce: [UInt8]) -> [UInt8] {
        precondition(nonce.count == XChaCha20Poly1305.nonceByteCount)
        let body = key.secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.seal(key: keyPointer, nonce: nonce, plaintext: plaintext, ad: associatedData(path: path))
        }
        var encrypted = prefix
        encrypted.reserveCapacity(headerByteCount + body.count)
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
        try checkHeader(bytes, path: path)
        let nonce = Array(bytes[4..<headerByteCount])
        let opened = key.secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.open(key: keyPointer, nonce: nonce, ciphertext: bytes[headerByteCount...], ad: associatedData(path: path))
        }
        guard let opened else { throw authenticationFailed(path) }
        return opened
    }

    /// ``open(_:path:key:)`` in the bytes' own memory: the plaintext takes the place of the
    /// object, so opening a large object (a snapshot) never holds it twice.
    public static func open(consuming encrypted: consuming [UInt8], path: String, key: SubKey) throws(ConcordError) -> [UInt8] {
        var bytes = consume encrypted
        try checkHeader(bytes, path: path)
        let nonce = Array(bytes[4..<headerByteCount])
        let ad = associatedData(path: path)
        let count = key.secret.withKeyPointer { keyPointer in
            bytes.withUnsafeMutableBufferPointer { buffer in
                XChaCha20Poly1305.openInPlace(key: keyPointer, nonce: nonce, buffer: UnsafeMutableBufferPointer(rebasing: buffer[headerByteCount...]), ad: ad)
            }
        }
        guard let count else { throw authenticationFailed(path) }
        bytes.withUnsafeMutableBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            base.update(from: base + headerByteCount, count: count)
        }
        bytes.removeLast(bytes.count - count)
        return bytes
    }

    private static func checkHeader(_ bytes: [UInt8], path: String) throws(ConcordError) {
        guard bytes.count >= overheadByteCount else {
            throw ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it is \(bytes.count) bytes, shorter than any encrypted object (\(overheadByteCount)); it was truncated or is not a Concord object; run `concord doctor`")
        }
        guard bytes[0..<3].elementsEqual(prefix[0..<3]) else {
            throw ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it does not start with a Concord encrypted-object header; it was modified or is not a Concord object; run `concord doctor`")
        }
        guard bytes[3] == formatVersion else {
            throw ConcordError(.unsupportedVersion, "remote object \(path) uses encrypted-object format version \(bytes[3]), which this release cannot read (it reads version \(formatVersion)): upgrade Concord; if no newer client writes to this store, the object was damaged; run `concord doctor`")
        }
    }

    private static func authenticationFailed(_ path: String) -> ConcordError {
        ConcordError(.authenticationFailed, "remote object \(path) failed authentication: it was modified or truncated, or it was written under another name or for another store; run `concord doctor`")
    }

    static func associatedData(path: String) -> [UInt8] {
        prefix + Array(path.utf8)
    }
}
