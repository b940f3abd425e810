/// How the store key is protected in `concord.json` (its `kdf` field). A struct with static
/// members rather than an enum, so later releases can add algorithms; this release reads
/// exactly the ones below and reports any other as `unsupportedVersion`.
public struct KeyDerivationAlgorithm: Hashable, Sendable, CustomStringConvertible {
    /// The name written in `concord.json`.
    public let name: String

    init(name: String) {
        self.name = name
    }

    /// The name, as written in `concord.json`.
    public var description: String { name }

    /// Argon2id v1.3 (`crypto_pwhash_ALG_ARGON2ID13`) derives a key-encryption key from
    /// the passphrase; the store key is wrapped under it with XChaCha20-Poly1305.
    public static let argon2id13 = KeyDerivationAlgorithm(name: "argon2id13")

    /// No passphrase: the store key itself is supplied as a key file, and `concord.json`
    /// holds only its key check.
    public static let keyFile = KeyDerivationAlgorithm(name: "keyfile")

    /// The algorithms this release can read.
    public static let known: [KeyDerivationAlgorithm] = [.argon2id13, .keyFile]
}
