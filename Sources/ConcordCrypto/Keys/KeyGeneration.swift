import CSodium
import ConcordCore

/// The id of one key generation: 16 random bytes, chosen by the device that rotated the
/// store key, shown as 32 lowercase hex digits (the name of its `keys/<id>` object).
///
/// Generation 0 — the store key unlocked from `concord.json` — has the id of 16 zero bytes
/// and no key object.
public struct KeyGenerationID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The length of an id in bytes.
    public static let byteCount = 16
    /// The id's bytes.
    public let bytes: [UInt8]

    /// The id of these 16 bytes; nil for any other length.
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = Array(bytes)
    }

    /// The id of 32 lowercase hex digits; nil for anything else.
    public init?(hex: some StringProtocol) {
        guard hex.utf8.count == 2 * Self.byteCount, Hex.isLowercase(Array(hex.utf8)), let bytes = Hex.decode(hex) else { return nil }
        self.bytes = bytes
    }

    /// Generation 0's id: 16 zero bytes.
    public static let zero = KeyGenerationID(bytes: [UInt8](repeating: 0, count: byteCount))!

    /// A new random id (never zero but with probability 2^-128).
    public static func random() -> KeyGenerationID {
        KeyGenerationID(bytes: Sodium.randomBytes(byteCount))!
    }

    /// Byte order.
    public static func < (lhs: KeyGenerationID, rhs: KeyGenerationID) -> Bool {
        lhs.bytes.lexicographicallyPrecedes(rhs.bytes)
    }

    /// 32 lowercase hex digits.
    public var description: String { Hex.encode(bytes) }
}

/// The generation a key belongs to: one rotation's id, or — when two or more rotations were
/// concurrent — the ids of every generation at the frontier of the key graph, whose keys
/// together derive the key (``StoreKey/merged(_:)``). Ids are kept sorted and distinct, so
/// every replica names one generation the same way.
///
/// Objects sealed under a key of generation 0 keep encrypted-object format 1, byte for
/// byte; objects sealed under any other generation name it in their header (format 2).
public struct KeyGeneration: Hashable, Sendable, CustomStringConvertible {
    /// The most ids one generation names: more concurrent rotations than this are refused.
    public static let maxCount = 16
    /// The ids, sorted and distinct, at least one.
    public let ids: [KeyGenerationID]

    /// The generation of these ids (sorted and deduplicated); nil when there are none or
    /// more than ``maxCount``.
    public init?(_ ids: some Sequence<KeyGenerationID>) {
        let sorted = Array(Set(ids)).sorted()
        guard !sorted.isEmpty, sorted.count <= Self.maxCount else { return nil }
        self.ids = sorted
    }

    /// Generation 0: the store key of `concord.json`.
    public static let zero = KeyGeneration([KeyGenerationID.zero])!

    /// Whether this is generation 0.
    public var isZero: Bool { self == .zero }

    /// The ids joined by `+`.
    public var description: String { ids.map(\.description).joined(separator: "+") }
}
