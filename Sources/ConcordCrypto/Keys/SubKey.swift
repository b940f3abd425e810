/// A 256-bit key for one ``KeyPurpose``, derived from the ``StoreKey`` with
/// ``StoreKey/subkey(for:)``. Sealing and naming functions take a `SubKey`, so the
/// purpose a key was made for travels with it.
public struct SubKey: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The length of a sub-key in bytes.
    public static let byteCount = 32

    /// What this key is for.
    public let purpose: KeyPurpose
    let secret: SecretBytes
    /// The generation of the store key it was derived from: objects sealed under it name
    /// this generation (``EncryptedObject``).
    public let generation: KeyGeneration

    init(purpose: KeyPurpose, secret: SecretBytes, generation: KeyGeneration = .zero) {
        self.purpose = purpose
        self.secret = secret
        self.generation = generation
    }

    /// Keys are equal when their purposes, generations and bytes are (bytes compared in constant time).
    public static func == (lhs: SubKey, rhs: SubKey) -> Bool {
        lhs.purpose == rhs.purpose && lhs.generation == rhs.generation && lhs.secret.constantTimeEquals(rhs.secret)
    }

    /// The raw bytes, for tests inside this package. Never log them.
    package var rawBytesForTesting: [UInt8] { secret.copiedBytes }

    /// Never shows the key.
    public var description: String { "SubKey(\(purpose), redacted)" }
    /// Never shows the key.
    public var debugDescription: String { description }
}
