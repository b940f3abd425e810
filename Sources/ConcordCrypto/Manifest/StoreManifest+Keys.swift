import CSodium
import ConcordCore
import Foundation

extension StoreManifest {
    /// A manifest for a new store whose key is wrapped under `passphrase`.
    ///
    /// Argon2id (`crypto_pwhash`, `ALG_ARGON2ID13`) with a fresh random salt and `limits`
    /// derives a key-encryption key from the passphrase; the store key is encrypted under
    /// it with XChaCha20-Poly1305 (random nonce; the associated data binds the store id).
    ///
    /// The passphrase is used as the UTF-8 bytes of its Unicode NFC form, so the same
    /// passphrase typed on systems that compose accents differently unlocks the store.
    ///
    /// - Throws: `invalidParameter` for an empty passphrase or limits out of range;
    ///   `cryptoFailure` when Argon2id cannot allocate its memory.
    public static func create(
        storeKey: StoreKey, passphrase: String, limits: PasswordHashLimits = .interactive,
        storeID: StoreID = .random()
    ) throws(ConcordError) -> StoreManifest {
        guard !passphrase.isEmpty else {
            throw ConcordError(.invalidParameter, "an empty passphrase protects nothing: choose a passphrase, or use a key file")
        }
        try limits.validate()
        let salt = Sodium.randomBytes(saltByteCount)
        let keyEncryptionKey = try deriveKeyEncryptionKey(passphrase: passphrase, salt: salt, limits: limits)
        let nonce = Sodium.randomBytes(XChaCha20Poly1305.nonceByteCount)
        let body = keyEncryptionKey.withKeyPointer { kek in
            storeKey.secret.withUnsafeBytes { plain in
                XChaCha20Poly1305.seal(key: kek, nonce: nonce, plaintext: plain, ad: wrappingAssociatedData(storeID))
            }
        }
        return try StoreManifest(
            storeID: storeID, kdf: .argon2id13, salt: salt, limits: limits,
            wrappedKey: nonce + body, keyCheck: keyCheck(for: storeKey))
    }

    /// A manifest for a new store whose key is kept in a key file (see
    /// ``StoreKey/keyFileContents``) rather than behind a passphrase: it holds only the
    /// store id and the key check.
    public static func createForKeyFile(storeKey: StoreKey, storeID: StoreID = .random()) -> StoreManifest {
        try! StoreManifest(storeID: storeID, kdf: .keyFile, salt: nil, limits: nil, wrappedKey: nil, keyCheck: keyCheck(for: storeKey))
    }

    /// Unwraps the store key with `passphrase`. This is the first thing a client does with
    /// a store: a wrong passphrase is reported before any other object is read.
    ///
    /// - Throws: `wrongKey` when the passphrase does not unwrap the key;
    ///   `invalidOperation` when the store uses a key file; `invalidParameter` when the
    ///   limits in `concord.json` are out of range; `malformed` when the unwrapped key
    ///   does not match the key check (`concord.json` was modified);
    ///   `cryptoFailure` when Argon2id cannot allocate its memory.
    public func unlock(passphrase: String) throws(ConcordError) -> StoreKey {
        guard kdf == .argon2id13, let salt, let limits, let wrappedKey else {
            throw ConcordError(.invalidOperation, "store \(storeID) is unlocked with a key file, not a passphrase: pass its key file")
        }
        try limits.validate()
        let keyEncryptionKey = try Self.deriveKeyEncryptionKey(passphrase: passphrase, salt: salt, limits: limits)
        let nonce = Array(wrappedKey[0..<XChaCha20Poly1305.nonceByteCount])
        let opened = keyEncryptionKey.withKeyPointer { kek in
            XChaCha20Poly1305.open(
                key: kek, nonce: nonce, ciphertext: wrappedKey[XChaCha20Poly1305.nonceByteCount...],
                ad: Self.wrappingAssociatedData(storeID))
        }
        guard var opened else {
            throw ConcordError(.wrongKey, "the passphrase does not unlock store \(storeID): check it and try again. Nothing was read or changed. (If the passphrase is right, concord.json was modified; run `concord doctor`)")
        }
        let storeKey = try StoreKey(bytes: opened)
        opened.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, $0.count) }
        guard matches(storeKey) else {
            throw ConcordError(.malformed, "concord.json: the wrapped key does not match the key check; it was modified; run `concord doctor`")
        }
        return storeKey
    }

    /// True when `storeKey` is this store's key, by the key check (constant time). Reads
    /// nothing but this manifest.
    public func matches(_ storeKey: StoreKey) -> Bool {
        Sodium.constantTimeEqual(Self.keyCheck(for: storeKey), keyCheck)
    }

    /// Throws `wrongKey` unless `storeKey` (for instance read from a key file) is this
    /// store's key. Works for every store, passphrase-protected or not.
    public func verify(_ storeKey: StoreKey) throws(ConcordError) {
        guard matches(storeKey) else {
            throw ConcordError(.wrongKey, "this key does not unlock store \(storeID): it is not this store's key file. Nothing was read or changed")
        }
    }

    /// The same store, with its key wrapped under a new passphrase: unlocks with
    /// `oldPassphrase`, then wraps the same store key under `newPassphrase` with a fresh
    /// salt and nonce. No data is re-encrypted; the old passphrase stops working once the
    /// new `concord.json` replaces the old one.
    ///
    /// - Throws: the errors of ``unlock(passphrase:)`` for the old passphrase and of
    ///   ``create(storeKey:passphrase:limits:storeID:)`` for the new one.
    public func changingPassphrase(
        from oldPassphrase: String, to newPassphrase: String, limits: PasswordHashLimits = .interactive
    ) throws(ConcordError) -> StoreManifest {
        let storeKey = try unlock(passphrase: oldPassphrase)
        return try settingPassphrase(newPassphrase, storeKey: storeKey, limits: limits)
    }

    /// The same store, with `storeKey` wrapped under `passphrase` (for instance to move a
    /// key-file store to a passphrase). Throws `wrongKey` unless `storeKey` is this store's
    /// key, so a wrong key can never be wrapped into a store's manifest.
    public func settingPassphrase(
        _ passphrase: String, storeKey: StoreKey, limits: PasswordHashLimits = .interactive
    ) throws(ConcordError) -> StoreManifest {
        try verify(storeKey)
        return try Self.create(storeKey: storeKey, passphrase: passphrase, limits: limits, storeID: storeID)
            .keeping(created: created, sealedName: sealedName)
    }

    /// The same store, protected by its key file only (no passphrase). Throws `wrongKey`
    /// unless `storeKey` is this store's key. Save ``StoreKey/keyFileContents`` first.
    public func removingPassphrase(storeKey: StoreKey) throws(ConcordError) -> StoreManifest {
        try verify(storeKey)
        return Self.createForKeyFile(storeKey: storeKey, storeID: storeID).keeping(created: created, sealedName: sealedName)
    }

    // MARK: - Internals

    /// The label hashed under the key-check sub-key.
    static let keyCheckLabel = Array("concord key check v1".utf8)

    /// `BLAKE2b-256(key: keyCheck sub-key, message: "concord key check v1")`.
    static func keyCheck(for storeKey: StoreKey) -> [UInt8] {
        let subkey = storeKey.subkey(for: .keyCheck)
        var out = [UInt8](repeating: 0, count: keyCheckByteCount)
        subkey.secret.withKeyPointer { key in
            keyCheckLabel.withNonNullBytes { message, count in
                _ = crypto_generichash(&out, keyCheckByteCount, message, UInt64(count), key, SubKey.byteCount)
            }
        }
        return out
    }

    /// Associated data of the wrapped key: a label and the store id, so a wrapped key
    /// copied into another store's manifest does not unwrap.
    static func wrappingAssociatedData(_ storeID: StoreID) -> [UInt8] {
        Array("concord wrapped store key v1".utf8) + storeID.bytes
    }

    /// Argon2id13 of the NFC-normalized passphrase: the 32-byte key-encryption key.
    static func deriveKeyEncryptionKey(
        passphrase: String, salt: [UInt8], limits: PasswordHashLimits
    ) throws(ConcordError) -> SecretBytes {
        Sodium.ensureInitialized()
        precondition(salt.count == saltByteCount)
        var password = Array(passphrase.precomposedStringWithCanonicalMapping.utf8)
        defer { password.withUnsafeMutableBytes { if let base = $0.baseAddress { sodium_memzero(base, $0.count) } } }
        var status: Int32 = 0
        let key = SecretBytes(count: StoreKey.byteCount) { out in
            password.withNonNullBytes { pw, pwCount in
                pw.withMemoryRebound(to: CChar.self, capacity: max(pwCount, 1)) { pwChars in
                    status = crypto_pwhash(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(StoreKey.byteCount),
                        pwChars, UInt64(pwCount), salt, limits.opsLimit, Int(limits.memLimit),
                        crypto_pwhash_alg_argon2id13())
                }
            }
        }
        guard status == 0 else {
            throw ConcordError(.cryptoFailure, "Argon2id could not derive the key with limits \(limits): not enough memory? Close other programs and try again")
        }
        return key
    }
}
