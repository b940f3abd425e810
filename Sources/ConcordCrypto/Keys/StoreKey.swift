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
    /// The key generation this key is (``KeyGeneration/zero`` for the key of `concord.json`):
    /// what objects sealed under it name in their header.
    public let generation: KeyGeneration

    init(secret: SecretBytes, generation: KeyGeneration = .zero) {
        self.secret = secret
        self.generation = generation
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
        generation = .zero
    }

    /// This key's bytes as the key of `generation`.
    public func of(_ generation: KeyGeneration) -> StoreKey {
        StoreKey(secret: secret, generation: generation)
    }

    /// The key of the generation that merges concurrent generations: with one key, that
    /// key itself; with several, the BLAKE2b-256 of `"concord merged generation v1"`, a zero
    /// byte, and each generation's id and key in id order. Only whoever holds every one of
    /// the keys derives it; everyone who does derives the same key, in the same generation
    /// (the ids together). Nil for no key, or more than ``KeyGeneration/maxCount``.
    public static func merged(_ keys: [KeyGenerationID: StoreKey]) -> StoreKey? {
        guard let generation = KeyGeneration(keys.keys) else { return nil }
        if generation.ids.count == 1 { return keys[generation.ids[0]]!.of(generation) }
        var input = Array("concord merged generation v1".utf8) + [0]
        for id in generation.ids { input += id.bytes + keys[id]!.secret.copiedBytes }
        defer { input.withUnsafeMutableBytes { sodium_memzero($0.baseAddress!, $0.count) } }
        Sodium.ensureInitialized()
        let secret = SecretBytes(count: byteCount) { out in
            _ = crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), byteCount, input, UInt64(input.count), nil, 0)
        }
        return StoreKey(secret: secret, generation: generation)
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
        return SubKey(purpose: purpose, secret: derived, generation: generation)
    }

    /// Keys are equal when their bytes are, compared in constant time (whatever generation
    /// each is labelled with).
    public static func == (lhs: StoreKey, rhs: StoreKey) -> Bool {
        lhs.secret.constantTimeEquals(rhs.secret)
    }

    /// Never shows the key.
    public var description: String { "StoreKey(redacted)" }
    /// Never shows the key.
    public var debugDescription: String { description }
}
