/// The BLAKE2b-256 digest of a file's content: a file's identity everywhere in Concord.
public struct ContentHash: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The 32 digest bytes.
    public let bytes: [UInt8]

    /// Wraps 32 digest bytes; nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 32 else { return nil }
        self.bytes = Array(bytes)
    }

    /// Parses 64 hexadecimal digits.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 64, let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// 64 lowercase hexadecimal digits.
    public var hex: String { Hex.encode(bytes) }
    public var description: String { hex }

    public static func < (lhs: ContentHash, rhs: ContentHash) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }
}
