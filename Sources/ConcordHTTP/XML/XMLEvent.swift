/// An element's name with its prefix resolved: the namespace its prefix (or the default
/// namespace) is bound to, `""` for none, and the local part. `<D:href xmlns:D="DAV:">`
/// and `<href xmlns="DAV:">` both have the name (`DAV:`, `href`).
public struct XMLName: Hashable, Sendable, CustomStringConvertible {
    /// The namespace name (a URI such as `DAV:`), or `""` for none.
    public let namespace: String
    /// The name without its prefix.
    public let local: String

    public init(namespace: String, local: String) {
        self.namespace = namespace
        self.local = local
    }

    public var description: String { namespace.isEmpty ? local : "{\(namespace)}\(local)" }
}

/// What ``XMLStreamParser`` reports, in document order.
public enum XMLEvent: Hashable, Sendable {
    /// An element begins (an empty element `<a/>` gives `start` then `end`).
    case start(XMLName)
    /// An element ends.
    case end(XMLName)
    /// The text between two tags, entities and character references replaced, CDATA
    /// sections included, comments and processing instructions left out, line ends
    /// normalized to `\n`. Never empty; one event per run between two tags.
    case text(String)
}
