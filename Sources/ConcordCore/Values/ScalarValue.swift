/// The value of a scalar field, or an element of a set field (docs/ARCHITECTURE.md §2).
///
/// Equality and hashing are by representation: doubles compare by bit pattern (so `NaN`
/// equals itself and `-0.0` differs from `0.0`), strings by their UTF-8 bytes (not Unicode
/// canonical equivalence). ``canonicalOrder(_:_:)`` is the total order used to sort set
/// elements in dumps and encodings.
public enum ScalarValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case bytes([UInt8])

    /// The order of kinds in ``canonicalOrder(_:_:)`` and in hashing: the ``FieldKind``'s
    /// raw value.
    public var kindRank: UInt8 { FieldKind(self).rawValue }

    public static func == (lhs: ScalarValue, rhs: ScalarValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): true
        case let (.bool(a), .bool(b)): a == b
        case let (.int(a), .int(b)): a == b
        case let (.double(a), .double(b)): a.bitPattern == b.bitPattern
        case let (.string(a), .string(b)): Bytewise.equal(a, b)
        case let (.bytes(a), .bytes(b)): a == b
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(kindRank)
        switch self {
        case .null: break
        case let .bool(value): hasher.combine(value)
        case let .int(value): hasher.combine(value)
        case let .double(value): hasher.combine(value.bitPattern)
        case let .string(value): Bytewise.hash(value, into: &hasher)
        case let .bytes(value): hasher.combine(value)
        }
    }

    /// A total order: by kind (null < bool < int < double < string < bytes), then by value;
    /// doubles by IEEE 754 total order, strings and bytes by their UTF-8 / raw bytes.
    public static func canonicalOrder(_ lhs: ScalarValue, _ rhs: ScalarValue) -> Bool {
        switch (lhs, rhs) {
        case let (.bool(a), .bool(b)): !a && b
        case let (.int(a), .int(b)): a < b
        case let (.double(a), .double(b)): a.isTotallyOrdered(belowOrEqualTo: b) && a.bitPattern != b.bitPattern
        case let (.string(a), .string(b)): Bytewise.less(a, b)
        case let (.bytes(a), .bytes(b)): a.lexicographicallyPrecedes(b)
        default: lhs.kindRank < rhs.kindRank
        }
    }

    public var description: String {
        switch self {
        case .null: "null"
        case let .bool(value): "\(value)"
        case let .int(value): "\(value)"
        case let .double(value): "\(value)"
        case let .string(value): "\"\(value)\""
        case let .bytes(value): "0x" + Hex.encode(value)
        }
    }
}
