import CSodium
import ConcordCore

/// The raw XChaCha20-Poly1305-IETF AEAD of libsodium
/// (`crypto_aead_xchacha20poly1305_ietf_*`): deterministic given key and nonce.
///
/// Prefer ``EncryptedObject``, which picks a random nonce and binds the object's path. Use
/// this only when you manage nonces yourself — and then never use one nonce twice with one
/// key: that reveals the XOR of the two plaintexts and lets anyone forge tags.
public enum XChaCha20Poly1305 {
    /// Key length in bytes.
    public static let keyByteCount = 32
    /// Nonce length in bytes. Any other length is rejected.
    public static let nonceByteCount = 24
    /// Authentication tag length in bytes (appended to the ciphertext).
    public static let tagByteCount = 16

    /// Encrypts `plaintext` and returns ciphertext followed by the 16-byte tag, which
    /// authenticates the ciphertext and `ad`. Throws `invalidParameter` when the key or
    /// nonce has the wrong length.
    public static func seal(
        key: some Collection<UInt8>, nonce: some Collection<UInt8>,
        plaintext: some Collection<UInt8>, ad: some Collection<UInt8> = [UInt8]()
    ) throws(ConcordError) -> [UInt8] {
        try checkLengths(key: key.count, nonce: nonce.count)
        return Array(key).withNonNullBytes { keyPointer, _ in
            seal(key: keyPointer, nonce: Array(nonce), plaintext: plaintext, ad: ad)
        }
    }

    /// Decrypts ciphertext-and-tag produced by ``seal(key:nonce:plaintext:ad:)`` with the
    /// same key, nonce and `ad`. Throws `authenticationFailed` when the tag does not match
    /// (any modified bit, truncation, another key, nonce or `ad`), `invalidParameter` when
    /// the key or nonce has the wrong length.
    public static func open(
        key: some Collection<UInt8>, nonce: some Collection<UInt8>,
        ciphertext: some Collection<UInt8>, ad: some Collection<UInt8> = [UInt8]()
    ) throws(ConcordError) -> [UInt8] {
        try checkLengths(key: key.count, nonce: nonce.count)
        let opened = Array(key).withNonNullBytes { keyPointer, _ in
            open(key: keyPointer, nonce: Array(nonce), ciphertext: ciphertext, ad: ad)
        }
        guard let opened else {
            throw ConcordError(.authenticationFailed, "XChaCha20-Poly1305 ciphertext failed authentication: it was modified or truncated, or the key, nonce or associated data differ")
        }
        return opened
    }

    private static func checkLengths(key: Int, nonce: Int) throws(ConcordError) {
        guard key == keyByteCount else {
            throw ConcordError(.invalidParameter, "an XChaCha20-Poly1305 key is \(keyByteCount) bytes, not \(key)")
        }
        guard nonce == nonceByteCount else {
            throw ConcordError(.invalidParameter, "an XChaCha20-Poly1305 nonce is \(nonceByteCount) bytes, not \(nonce)")
        }
    }

    /// Seals with a key pointer (lengths already checked).
    static func seal(
        key: UnsafePointer<UInt8>, nonce: [UInt8], plaintext: some Collection<UInt8>, ad: some Collection<UInt8>
    ) -> [UInt8] {
        Sodium.ensureInitialized()
        precondition(nonce.count == nonceByteCount)
        let outputCount = plaintext.count + tagByteCount
        return [UInt8](unsafeUninitializedCapacity: outputCount) { out, initialized in
            var written: UInt64 = 0
            plaintext.withNonNullBytes { m, mCount in
                ad.withNonNullBytes { a, aCount in
                    nonce.withNonNullBytes { n, _ in
                        _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                            out.baseAddress!, &written, m, UInt64(mCount), a, UInt64(aCount), nil, n, key)
                    }
                }
            }
            initialized = Int(written)
        }
    }

    /// Opens with a key pointer (lengths already checked); nil when authentication fails.
    static func open(
        key: UnsafePointer<UInt8>, nonce: [UInt8], ciphertext: some Collection<UInt8>, ad: some Collection<UInt8>
    ) -> [UInt8]? {
        Sodium.ensureInitialized()
        precondition(nonce.count == nonceByteCount)
        guard ciphertext.count >= tagByteCount else { return nil }
        var status: Int32 = -1
        let plaintext = [UInt8](unsafeUninitializedCapacity: max(ciphertext.count - tagByteCount, 1)) { out, initialized in
            var written: UInt64 = 0
            ciphertext.withNonNullBytes { c, cCount in
                ad.withNonNullBytes { a, aCount in
                    nonce.withNonNullBytes { n, _ in
                        status = crypto_aead_xchacha20poly1305_ietf_decrypt(
                            out.baseAddress!, &written, nil, c, UInt64(cCount), a, UInt64(aCount), n, key)
                    }
                }
            }
            initialized = status == 0 ? Int(written) : 0
        }
        return status == 0 ? plaintext : nil
    }

    /// Opens ciphertext-and-tag in place (lengths already checked): the plaintext overwrites
    /// the start of `buffer`'s ciphertext; returns its length, nil when authentication fails
    /// (and then nothing was written). libsodium checks the tag before it decrypts, and
    /// decrypts with input and output at the same address.
    static func openInPlace(key: UnsafePointer<UInt8>, nonce: [UInt8], buffer: UnsafeMutableBufferPointer<UInt8>, ad: [UInt8]) -> Int? {
        Sodium.ensureInitialized()
        precondition(nonce.count == nonceByteCount)
        guard buffer.count >= tagByteCount, let base = buffer.baseAddress else { return nil }
        var written: UInt64 = 0
        let status = ad.withNonNullBytes { a, aCount in
            nonce.withNonNullBytes { n, _ in
                crypto_aead_xchacha20poly1305_ietf_decrypt(base, &written, nil, base, UInt64(buffer.count), a, UInt64(aCount), n, key)
            }
        }
        return status == 0 ? Int(written) : nil
    }
}
