import CSodium
import ConcordCore

/// A device's (or a person's) identity: an X25519 key pair for key exchange — others seal
/// a store key to its public half, and only this secret opens it — and an Ed25519 key pair
/// for signatures. The public half is ``publicIdentity``; the secret half never leaves the
/// device: it is kept in a file beside the store, readable by its owner only
/// (``writeNewSecretFile(at:)``), never on the remote and never in any output.
///
/// ```swift
/// let identity = DeviceIdentity.generate()
/// try identity.writeNewSecretFile(at: storePath + ".identity")
/// print(identity.publicIdentity)          // cpk1…, safe to share
/// ```
public struct DeviceIdentity: Sendable {
    /// The X25519 secret key (32 bytes).
    let exchangeSecret: SecretBytes
    /// The Ed25519 seed (32 bytes) the signing key pair is derived from.
    let signingSeed: SecretBytes
    /// The Ed25519 secret key as libsodium uses it (seed and public key, 64 bytes).
    let signingSecret: SecretBytes
    /// The public half.
    public let publicIdentity: PublicIdentity

    /// A new random identity (libsodium's secure random generator).
    public static func generate() -> DeviceIdentity {
        Sodium.ensureInitialized()
        let exchange = SecretBytes(count: Int(crypto_box_SECRETKEYBYTES)) { randombytes_buf($0.baseAddress!, $0.count) }
        let seed = SecretBytes(count: Int(crypto_sign_SEEDBYTES)) { randombytes_buf($0.baseAddress!, $0.count) }
        return try! DeviceIdentity(exchangeSecret: exchange, signingSeed: seed)
    }

    /// The identity of an X25519 secret key and an Ed25519 seed (32 bytes each); the
    /// public keys are derived from them. Throws `invalidKey` for other lengths.
    init(exchangeSecret: SecretBytes, signingSeed: SecretBytes) throws(ConcordError) {
        guard exchangeSecret.count == Int(crypto_box_SECRETKEYBYTES), signingSeed.count == Int(crypto_sign_SEEDBYTES) else {
            throw ConcordError(.invalidKey, "an identity's secret keys are 32 bytes each")
        }
        Sodium.ensureInitialized()
        var exchangePublic = [UInt8](repeating: 0, count: Int(crypto_box_PUBLICKEYBYTES))
        let derived = exchangeSecret.withKeyPointer { crypto_scalarmult_base(&exchangePublic, $0) }
        guard derived == 0 else { throw ConcordError(.invalidKey, "the identity's X25519 secret key is not usable") }
        var signingPublic = [UInt8](repeating: 0, count: Int(crypto_sign_PUBLICKEYBYTES))
        let secret = SecretBytes(count: Int(crypto_sign_SECRETKEYBYTES)) { buffer in
            signingSeed.withKeyPointer { seed in
                _ = crypto_sign_seed_keypair(&signingPublic, buffer.baseAddress!.assumingMemoryBound(to: UInt8.self), seed)
            }
        }
        self.exchangeSecret = exchangeSecret
        self.signingSeed = signingSeed
        self.signingSecret = secret
        self.publicIdentity = PublicIdentity(exchangeKey: exchangePublic, signingKey: signingPublic)!
    }

    /// The Ed25519 signature (64 bytes) of `message`, which
    /// ``PublicIdentity/isValidSignature(_:of:)`` checks.
    public func sign(_ message: some Collection<UInt8>) -> [UInt8] {
        let bytes = Array(message)
        var signature = [UInt8](repeating: 0, count: Int(crypto_sign_BYTES))
        _ = signingSecret.withKeyPointer { secret in
            bytes.withUnsafeBufferPointer { crypto_sign_detached(&signature, nil, $0.baseAddress, UInt64(bytes.count), secret) }
        }
        return signature
    }

    /// Opens what ``PublicIdentity/seal(_:)`` sealed to this identity. Throws
    /// `authenticationFailed` when it was sealed to another identity, modified or cut short.
    public func openSealed(_ sealed: some Collection<UInt8>) throws(ConcordError) -> [UInt8] {
        let bytes = Array(sealed)
        guard bytes.count >= crypto_box_sealbytes() else {
            throw ConcordError(.authenticationFailed, "a sealed box of \(bytes.count) bytes is shorter than its \(crypto_box_sealbytes())-byte overhead: it was cut short")
        }
        var plain = [UInt8](repeating: 0, count: bytes.count - crypto_box_sealbytes())
        let result = exchangeSecret.withKeyPointer { secret in
            crypto_box_seal_open(&plain, bytes, UInt64(bytes.count), publicIdentity.exchangeKey, secret)
        }
        guard result == 0 else {
            throw ConcordError(.authenticationFailed, "the sealed box does not open with this identity: it was sealed to another key, or modified")
        }
        return plain
    }
}
