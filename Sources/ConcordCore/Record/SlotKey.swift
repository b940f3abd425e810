/// Names one dot store inside a record. Field names are identified by their UTF-8 bytes.
///
/// A record is an observed-remove map of slots (docs/ARCHITECTURE.md §2, rules 4 and 5): its liveness
/// dots, its tombstones, one register per scalar or file field, and one dot set per element
/// of a set field. Deltas and the store's outbox track changes per slot, so writing one
/// field or adding one element ships only that slot.
public enum SlotKey: Hashable, Sendable, CustomStringConvertible {
    /// The record's liveness dots: it is visible while one survives.
    case liveness
    /// The dots of deletes not yet superseded by an acknowledgement or re-creation.
    case tombstones
    /// The register of a scalar or file field.
    case field(String)
    /// The adds of one element of a set field.
    case element(String, ScalarValue)

    /// The field this slot belongs to, if any.
    public var fieldName: String? {
        switch self {
        case .liveness, .tombstones: nil
        case let .field(name), let .element(name, _): name
        }
    }

    /// Whether an entry of this slot may carry `payload`: liveness dots, tombstones and set
    /// elements are bare dots; a field register holds a scalar or a file.
    public func accepts(_ payload: Payload) -> Bool {
        switch (self, payload) {
        case (.liveness, .marker), (.tombstones, .marker), (.element, .marker), (.field, .scalar), (.field, .file): true
        default: false
        }
    }

    var rank: UInt8 {
        switch self {
        case .liveness: 0
        case .tombstones: 1
        case .field: 2
        case .element: 3
        }
    }

    public static func == (lhs: SlotKey, rhs: SlotKey) -> Bool {
        switch (lhs, rhs) {
        case (.liveness, .liveness), (.tombstones, .tombstones): true
        case let (.field(a), .field(b)): Bytewise.equal(a, b)
        case let (.element(a, x), .element(b, y)): x == y && Bytewise.equal(a, b)
        default: false
        }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(rank)
        switch self {
        case .liveness, .tombstones: break
        case let .field(name): Bytewise.hash(name, into: &hasher)
        case let .element(name, element):
            Bytewise.hash(name, into: &hasher)
            hasher.combine(element)
        }
    }

    /// A total order: liveness, tombstones, fields by name, then elements by field name and
    /// element. Encodings list slots in this order.
    public static func canonicalOrder(_ lhs: SlotKey, _ rhs: SlotKey) -> Bool {
        switch (lhs, rhs) {
        case let (.field(a), .field(b)):
            return Bytewise.less(a, b)
        case let (.element(a, x), .element(b, y)):
            if !Bytewise.equal(a, b) { return Bytewise.less(a, b) }
            return ScalarValue.canonicalOrder(x, y)
        default:
            return lhs.rank < rhs.rank
        }
    }

    public var description: String {
        switch self {
        case .liveness: "<liveness>"
        case .tombstones: "<tombstones>"
        case let .field(name): name
        case let .element(name, element): "\(name)[\(element)]"
        }
    }
}

