import CSodium
import ConcordCore

extension EncryptedObject {
    /// Encrypts `plaintext` for `path` with a nonce derived from the key, the path and the
    /// plaintext (a synthetic nonce, as in SIV): encrypting the same plaintext for the same path
    /// gives the same bytes. Push uses it so that a retry after a crash uploads identical
    /// bytes (docs/ARCHITECTURE.md §4).
    ///
    /// What it reveals beyond `encrypt(_:path:key:)`: only whether two objects at the *same*
    /// path have the same plaintext — and the store never writes different plaintexts to one
    /// path. Different plaintexts get different nonces (a 192-bit keyed BLAKE2b), so no
    /// nonce is reused with different plaintexts.
    public static func encryptDeterministically(_ plaintext: some Collection<UInt8>, path: String, key: SubKey) -> [UInt8] {
        encrypt(plaintext, path: path, key: key, nonce: syntheticNonce(plaintext, path: path, key: key))
    }

    /// A fingerprint of `plaintext` as the object at `path`: the first 8 bytes of its
    /// synthetic nonce (little-endian), a keyed BLAKE2b of the path and the plaintext. Two
    /// objects at one path with different plaintexts have different fingerprints but with
    /// probability 2^-64; it is the same whether the object was sealed with a synthetic or a
    /// random nonce (it is computed from the plaintext), and it reveals nothing without the key.
    public static func fingerprint(of plaintext: some Collection<UInt8>, path: String, key: SubKey) -> UInt64 {
        syntheticNonce(plaintext, path: path, key: key).prefix(8).reversed().reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// The keyed BLAKE2b-192 of "concord synthetic nonce v1", 0, the path, 0 and the
    /// plaintext, hashed in parts (the plaintext is not copied).
    private static func syntheticNonce(_ plaintext: some Collection<UInt8>, path: String, key: SubKey) -> [UInt8] {
        Sodium.ensureInitialized()
        let prefix = Array("concord synthetic nonce v1".utf8) + [0] + Array(path.utf8) + [0]
        var nonce = [UInt8](repeating: 0, count: XChaCha20Poly1305.nonceByteCount)
        let stateByteCount = crypto_generichash_statebytes()
        // libsodium declares its BLAKE2b state 64-byte aligned.
        let state = UnsafeMutableRawPointer.allocate(byteCount: stateByteCount, alignment: 64)
        defer {
            sodium_memzero(state, stateByteCount)
            state.deallocate()
        }
        key.secret.withKeyPointer { keyPointer in
            _ = crypto_generichash_init(OpaquePointer(state), keyPointer, SubKey.byteCount, nonce.count)
        }
        prefix.withNonNullBytes { bytes, count in _ = crypto_generichash_update(OpaquePointer(state), bytes, UInt64(count)) }
        plaintext.withNonNullBytes { bytes, count in _ = crypto_generichash_update(OpaquePointer(state), bytes, UInt64(count)) }
        _ = crypto_generichash_final(OpaquePointer(state), &nonce, nonce.count)
        return nonce
    }
}
