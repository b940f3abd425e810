/// What an entry of a slot carries besides its dot.
public enum Payload: Hashable, Sendable {
    /// A bare dot: a liveness dot, a tombstone, or a set element's add.
    case marker
    /// A scalar field's value.
    case scalar(ScalarValue)
    /// A file field's value.
    case file(FileRef)
}

/// One entry of a dot store: a write's dot and what it wrote. A dot is unique, so two
/// replicas holding an entry with the same dot hold the same payload.
public struct Entry: Hashable, Sendable {
    public let dot: Stamp
    public let payload: Payload

    public init(dot: Stamp, payload: Payload) {
        self.dot = dot
        self.payload = payload
    }
}
