import ConcordCore

/// A store's identity: 128 random bits, written as 32 lowercase hex digits in
/// `concord.json`. A store deleted and re-created gets a new id, so a replica that
/// compares the remote's id with the one it joined (``StoreManifest/requireStoreID(_:)``)
/// notices instead of merging two unrelated stores (docs/ARCHITECTURE.md §5).
public struct StoreID: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The 16 id bytes.
    public let bytes: [UInt8]

    /// A new random id from libsodium's secure random generator.
    public static func random() -> StoreID {
        StoreID(uncheckedBytes: Sodium.randomBytes(16))
    }

    /// Wraps 16 bytes; nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses 32 hex digits (either case); nil for anything else.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 32, let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    private init(uncheckedBytes: [UInt8]) {
        bytes = uncheckedBytes
    }

    /// 32 lowercase hex digits.
    public var hex: String { Hex.encode(bytes) }
    /// 32 lowercase hex digits, as ``hex``.
    public var description: String { hex }

    /// Decodes from a JSON string of 32 hex digits.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let id = StoreID(hex: text) else {
            throw ConcordError(.malformed, "store id \"\(text)\" is not 32 hexadecimal digits")
        }
        self = id
    }

    /// Encodes as a JSON string of 32 lowercase hex digits.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}
