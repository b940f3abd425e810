import CSodium
import ConcordCore
import Foundation

/// The public half of a device's identity (``DeviceIdentity``): an X25519 key that others
/// seal store keys to (`crypto_box_seal`) and an Ed25519 key that checks what the device
/// signs. Safe to show, copy and publish.
///
/// As one string (``description``, ``init(string:)``): `cpk1` followed by 136 lowercase hex
/// digits — the 32-byte X25519 key, the 32-byte Ed25519 key, and a 4-byte check (the first
/// 4 bytes of the BLAKE2b-256 of the 64 key bytes), so a key mistyped or cut short when
/// pasted is refused rather than used.
public struct PublicIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The prefix of the string form; a later form takes another.
    public static let stringPrefix = "cpk1"
    /// The X25519 public key (`crypto_box_PUBLICKEYBYTES`, 32 bytes).
    public let exchangeKey: [UInt8]
    /// The Ed25519 public key (`crypto_sign_PUBLICKEYBYTES`, 32 bytes).
    public let signingKey: [UInt8]

    /// The identity of these two keys; nil unless each is 32 bytes.
    public init?(exchangeKey: [UInt8], signingKey: [UInt8]) {
        guard exchangeKey.count == Int(crypto_box_PUBLICKEYBYTES), signingKey.count == Int(crypto_sign_PUBLICKEYBYTES) else { return nil }
        self.exchangeKey = exchangeKey
        self.signingKey = signingKey
    }

    /// Parses the string form. Throws `invalidKey`, saying what is wrong, for anything else.
    public init(string: String) throws(ConcordError) {
        let text = string.trimmingCharacters(in: .whitespacesAndNewlines)
        guard text.hasPrefix(Self.stringPrefix) else {
            throw ConcordError(.invalidKey, "a public key starts with \"\(Self.stringPrefix)\" (what `concord id show` prints); this one does not")
        }
        let digits = text.dropFirst(Self.stringPrefix.count)
        guard digits.utf8.count == 2 * 68, let bytes = Hex.decode(digits) else {
            throw ConcordError(.invalidKey, "a public key is \"\(Self.stringPrefix)\" and 136 hex digits; this one has \(digits.utf8.count) characters after the prefix: copy it whole")
        }
        let keys = Array(bytes.prefix(64))
        guard Array(bytes.suffix(4)) == Self.check(keys) else {
            throw ConcordError(.invalidKey, "the public key's check digits do not match: it was mistyped or altered; copy it again")
        }
        self.init(exchangeKey: Array(keys.prefix(32)), signingKey: Array(keys.suffix(32)))!
    }

    /// The string form: `cpk1` and 136 lowercase hex digits.
    public var description: String {
        let keys = exchangeKey + signingKey
        return Self.stringPrefix + Hex.encode(keys + Self.check(keys))
    }

    /// Whether `signature` is this identity's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: [UInt8], of message: some Collection<UInt8>) -> Bool {
        Sodium.ensureInitialized()
        guard signature.count == Int(crypto_sign_BYTES) else { return false }
        let bytes = Array(message)
        return bytes.withUnsafeBufferPointer { messagePointer in
            crypto_sign_verify_detached(signature, messagePointer.baseAddress, UInt64(bytes.count), signingKey) == 0
        }
    }

    /// `plaintext` sealed to this identity (`crypto_box_seal`: an ephemeral X25519 key and
    /// XSalsa20-Poly1305): only the holder of the matching ``DeviceIdentity`` opens it
    /// (``DeviceIdentity/openSealed(_:)``). 48 bytes longer than `plaintext`.
    public func seal(_ plaintext: some Collection<UInt8>) -> [UInt8] {
        Sodium.ensureInitialized()
        let bytes = Array(plaintext)
        var sealed = [UInt8](repeating: 0, count: bytes.count + crypto_box_sealbytes())
        let result = bytes.withUnsafeBufferPointer { plain in
            crypto_box_seal(&sealed, plain.baseAddress, UInt64(bytes.count), exchangeKey)
        }
        precondition(result == 0, "crypto_box_seal failed on a valid public key")
        return sealed
    }

    /// The 4 check bytes of `keys`.
    static func check(_ keys: [UInt8]) -> [UInt8] {
        Array(ContentHasher.hash(keys).bytes.prefix(4))
    }
}
