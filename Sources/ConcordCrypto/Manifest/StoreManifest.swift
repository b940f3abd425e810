import ConcordCore

/// The contents of a store's `concord.json` (docs/ARCHITECTURE.md §4, §5): what a client must know
/// before it reads anything else — the format version, the store's id, how the store key
/// is protected, and a key check that tells a right key from a wrong one without
/// decrypting any data.
///
/// `concord.json` is not secret and not encrypted, but it is protected where it matters:
/// the wrapped key is authenticated (a modified salt, limit or wrapped key cannot unwrap to
/// any key), and the key check rejects any key but the store's. Tampering can therefore
/// only make unlocking fail, never make a client accept a wrong key.
///
/// Create one with ``create(storeKey:passphrase:limits:storeID:)`` or
/// ``createForKeyFile(storeKey:storeID:)``; read one with ``init(json:)``; unlock with
/// ``unlock(passphrase:)`` or ``verify(_:)``.
public struct StoreManifest: Hashable, Sendable {
    /// The `concord.json` format version this release writes and reads.
    public static let currentFormatVersion = 1
    /// Length of the Argon2id salt in bytes (`crypto_pwhash_SALTBYTES`).
    public static let saltByteCount = 16
    /// Length of a wrapped key: 24-byte nonce, 32-byte encrypted key, 16-byte tag.
    public static let wrappedKeyByteCount = XChaCha20Poly1305.nonceByteCount + StoreKey.byteCount + XChaCha20Poly1305.tagByteCount
    /// Length of the key check in bytes.
    public static let keyCheckByteCount = 32

    /// The format version of this manifest (always ``currentFormatVersion`` once decoded).
    public let formatVersion: Int
    /// The store's id. The sync layer compares it with the id a replica joined, see
    /// ``requireStoreID(_:)``.
    public let storeID: StoreID
    /// How the store key is protected.
    public let kdf: KeyDerivationAlgorithm
    /// The Argon2id salt (16 random bytes); nil for ``KeyDerivationAlgorithm/keyFile``.
    public let salt: [UInt8]?
    /// The Argon2id limits; nil for ``KeyDerivationAlgorithm/keyFile``.
    public let limits: PasswordHashLimits?
    /// The store key encrypted under the passphrase's key: nonce, ciphertext and tag; nil
    /// for ``KeyDerivationAlgorithm/keyFile``.
    public let wrappedKey: [UInt8]?
    /// Keyed BLAKE2b-256 of a fixed label under the store key's ``KeyPurpose/keyCheck``
    /// sub-key: checks a key without decrypting any data.
    public let keyCheck: [UInt8]
    /// When a named store was created (milliseconds since the epoch, as its creator's clock
    /// read); nil for a store at a remote's root. Not secret: the list of a remote's stores
    /// shows it to everyone.
    public let created: UInt64?
    /// A named store's name, sealed under the store key's ``KeyPurpose/storeName`` sub-key
    /// (``name(with:)``); nil for a store at a remote's root. Only who can unlock the store
    /// can read it: a name is never plaintext on the remote.
    public let sealedName: [UInt8]?

    /// A manifest from its fields, checking their lengths and that the fields `kdf` needs
    /// are present (and the others absent). Throws `malformed` otherwise and
    /// `unsupportedVersion` for an unknown format version or algorithm.
    public init(
        formatVersion: Int = StoreManifest.currentFormatVersion, storeID: StoreID, kdf: KeyDerivationAlgorithm,
        salt: [UInt8]?, limits: PasswordHashLimits?, wrappedKey: [UInt8]?, keyCheck: [UInt8],
        created: UInt64? = nil, sealedName: [UInt8]? = nil
    ) throws(ConcordError) {
        guard formatVersion == Self.currentFormatVersion else {
            throw ConcordError(.unsupportedVersion, "concord.json has format version \(formatVersion); this release reads version \(Self.currentFormatVersion): upgrade Concord to use this store")
        }
        guard KeyDerivationAlgorithm.known.contains(kdf) else {
            throw ConcordError(.unsupportedVersion, "concord.json protects the store key with \"\(kdf)\", which this release does not know (it knows \(KeyDerivationAlgorithm.known.map(\.name).joined(separator: ", "))): upgrade Concord to use this store")
        }
        guard keyCheck.count == Self.keyCheckByteCount else {
            throw ConcordError(.malformed, "concord.json: keyCheck is \(keyCheck.count) bytes, not \(Self.keyCheckByteCount); it was modified; run `concord doctor`")
        }
        switch kdf {
        case .argon2id13:
            guard let salt, salt.count == Self.saltByteCount else {
                throw ConcordError(.malformed, "concord.json: an argon2id13 store needs a salt of \(Self.saltByteCount) bytes; it was modified; run `concord doctor`")
            }
            guard limits != nil else {
                throw ConcordError(.malformed, "concord.json: an argon2id13 store needs opsLimit and memLimit; it was modified; run `concord doctor`")
            }
            guard let wrappedKey, wrappedKey.count == Self.wrappedKeyByteCount else {
                throw ConcordError(.malformed, "concord.json: an argon2id13 store needs a wrappedKey of \(Self.wrappedKeyByteCount) bytes; it was modified; run `concord doctor`")
            }
        default:
            guard salt == nil, limits == nil, wrappedKey == nil else {
                throw ConcordError(.malformed, "concord.json: a key-file store has no salt, limits or wrapped key; it was modified; run `concord doctor`")
            }
        }
        self.formatVersion = formatVersion
        self.storeID = storeID
        self.kdf = kdf
        self.salt = salt
        self.limits = limits
        self.wrappedKey = wrappedKey
        self.keyCheck = keyCheck
        self.created = created
        self.sealedName = sealedName
    }

    /// Throws `storeMismatch` unless this manifest's store id is `expected` — the id of the
    /// store the replica joined. A different id means the remote store was deleted and
    /// re-created (or the replica points at another store): never merge them.
    public func requireStoreID(_ expected: StoreID) throws(ConcordError) {
        guard storeID == expected else {
            throw ConcordError(.storeMismatch, "the remote holds store \(storeID), but this replica belongs to store \(expected): the remote store was deleted and re-created, or this is the wrong location. Nothing was merged; point the replica at its own store, or join the new store as a new replica")
        }
    }
}
