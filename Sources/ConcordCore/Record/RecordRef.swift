/// Identifies one record: its collection and its id.
///
/// Collections and ids are identified by their UTF-8 bytes (see `Bytewise`), not by
/// Unicode canonical equivalence.
public struct RecordRef: Hashable, Comparable, Sendable, CustomStringConvertible {
    public let collection: String
    public let id: String

    public init(collection: String, id: String) {
        self.collection = collection
        self.id = id
    }

    public static func == (lhs: RecordRef, rhs: RecordRef) -> Bool {
        Bytewise.equal(lhs.id, rhs.id) && Bytewise.equal(lhs.collection, rhs.collection)
    }

    public func hash(into hasher: inout Hasher) {
        Bytewise.hash(collection, into: &hasher)
        Bytewise.hash(id, into: &hasher)
    }

    public static func < (lhs: RecordRef, rhs: RecordRef) -> Bool {
        if !Bytewise.equal(lhs.collection, rhs.collection) {
            return Bytewise.less(lhs.collection, rhs.collection)
        }
        return Bytewise.less(lhs.id, rhs.id)
    }

    public var description: String { "\(collection)/\(id)" }
}
