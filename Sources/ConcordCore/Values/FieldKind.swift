/// What a field's value is — a scalar of one type, or a file — and what that kind means,
/// in one place (docs/ARCHITECTURE.md, "Adding a field kind"):
///
/// - how concurrent writes end (``keepsConcurrentVersions``: a file forks, rule 6; every
///   scalar goes to the greatest stamp, rule 1);
/// - where it sorts among set elements and in hashing (``ScalarValue/kindRank`` is its raw
///   value);
/// - its code in the store's `kind` columns (`concord_fields`, `concord_field_versions`,
///   `concord_elements`): the raw value. The binary format has tags of its own
///   (docs/FORMAT.md), which `ConcordCodec` maps to and from these kinds.
///
/// A set field is no kind of its own: it is a set of scalar elements, each of a scalar kind.
public enum FieldKind: UInt8, CaseIterable, Hashable, Sendable, CustomStringConvertible {
    case null = 0
    case bool = 1
    case int = 2
    case double = 3
    case string = 4
    case bytes = 5
    case file = 6

    /// The kind of a scalar value.
    public init(_ value: ScalarValue) {
        switch value {
        case .null: self = .null
        case .bool: self = .bool
        case .int: self = .int
        case .double: self = .double
        case .string: self = .string
        case .bytes: self = .bytes
        }
    }

    /// The kind of what a register holds; nil for a bare dot (a liveness dot, a tombstone,
    /// a set element's add), which holds no value.
    public init?(_ payload: Payload) {
        switch payload {
        case .marker: return nil
        case let .scalar(value): self.init(value)
        case .file: self = .file
        }
    }

    /// Whether concurrent writes of this kind are all kept, as a fork the user resolves
    /// (rule 6: files), rather than resolved to the write with the greatest stamp (rule 1).
    public var keepsConcurrentVersions: Bool { self == .file }

    /// Whether a value of this kind can be a set's element (every scalar kind can).
    public var isScalar: Bool { self != .file }

    public var description: String {
        switch self {
        case .null: "null"
        case .bool: "bool"
        case .int: "int"
        case .double: "double"
        case .string: "string"
        case .bytes: "bytes"
        case .file: "file"
        }
    }
}
