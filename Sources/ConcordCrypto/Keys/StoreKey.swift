import CSodium
import ConcordCore

/// The store key: 256 random bits from which every other key of a store is derived
/// (docs/ARCHITECTURE.md §5). Every replica of a store holds the same store key.
///
/// It is made once, when the store is created (`StoreKey.random()`), and is then either
/// wrapped under a passphrase in `concord.json` (see ``StoreManifest``) or kept in a key
/// file (see ``init(keyFileContents:)``). Changing the passphrase rewraps this same key,
/// so no data is ever re-encrypted.
///
/// The bytes live in one heap buffer that is wiped when the last copy of the key goes
/// away; `description` never shows them. Equality is checked in constant time.
public struct StoreKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The length of a store key in bytes.
    public static let byteCount = 32

    let secret: SecretBytes

    init(secret: SecretBytes) {
        self.secret = secret
    }

    /// A new random store key from libsodium's secure random generator.
    public static func random() -> StoreKey {
        Sodium.ensureInitialized()
        return StoreKey(secret: SecretBytes(count: byteCount) { buffer in
            randombytes_buf(buffer.baseAddress!, byteCount)
        })
    }

    /// A store key from its 32 raw bytes (for instance the contents of a binary key file).
    /// Throws `invalidKey` for any other length.
    public init(bytes: some Collection<UInt8>) throws(ConcordError) {
        guard bytes.count == Self.byteCount else {
            throw ConcordError(.invalidKey, "a store key is \(Self.byteCount) bytes, not \(bytes.count): check that the key file is the one `concord` wrote")
        }
        Sodium.ensureInitialized()
        secret = SecretBytes(copying: bytes)
    }

    /// The sub-key for `purpose`: `crypto_kdf_derive_from_key(32 bytes, purpose.subkeyID,
    /// "concord1", storeKey)`. Deterministic: every replica derives the same sub-keys.
    public func subkey(for purpose: KeyPurpose) -> SubKey {
        Sodium.ensureInitialized()
        let derived = SecretBytes(count: SubKey.byteCount) { out in
            secret.withKeyPointer { key in
                _ = KeyPurpose.kdfContext.withCString { context in
                    crypto_kdf_derive_from_key(
                        out.baseAddress!.assumingMemoryBound(to: UInt8.self), SubKey.byteCount,
                        purpose.subkeyID, context, key)
                }
            }
        }
        return SubKey(purpose: purpose, secret: derived)
    }

    /// Keys are equal when their bytes are, compared in constant time.
    public static func == (lhs: StoreKey, rhs: StoreKey) -> Bool {
        lhs.secret.constantTimeEquals(rhs.secret)
    }

    /// Never shows the key.
    public var description: String { "StoreKey(redacted)" }
    /// Never shows the key.
    public var debugDescription: String { description }
}
