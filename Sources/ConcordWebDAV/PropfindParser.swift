import ConcordHTTP
import Foundation

/// One entry of a PROPFIND `207 Multi-Status` answer.
public struct PropfindEntry: Hashable, Sendable {
    /// The href's path, percent-decoded, without scheme and host (servers send either).
    public let path: String
    public let isCollection: Bool
    public let size: UInt64?
    /// `getlastmodified`, in milliseconds since the epoch.
    public let modified: UInt64?

    public init(path: String, isCollection: Bool, size: UInt64?, modified: UInt64?) {
        self.path = path
        self.isCollection = isCollection
        self.size = size
        self.modified = modified
    }
}

/// Parses a PROPFIND answer with ``/ConcordHTTP/XMLStreamParser``, namespace-aware (`DAV:`
/// elements under any prefix, or none), within ``/ConcordHTTP/XMLLimits``. Whatever the
/// bytes, it returns entries or nil — it never traps: malformed XML, an answer over the
/// limits and one whose root is not `DAV:multistatus` are nil, and an entry without a
/// usable href is skipped.
public enum PropfindParser {
    /// The entries of a whole answer, or nil if it is not a well-formed multistatus within `limits`.
    public static func parse(_ bytes: [UInt8], limits: XMLLimits = XMLLimits()) -> [PropfindEntry]? {
        XMLAnswer.parse(bytes, into: Reader(), limits: limits)?.entries
    }

    /// An answer read as it arrives; ``Reader/entries`` of what it finishes with.
    typealias Answer = XMLAnswer<Reader>

    /// The path of an href: an absolute URL loses its scheme and authority; the rest is
    /// percent-decoded. Nil for an href that is not a path.
    public static func path(ofHref href: String) -> String? {
        var text = trimmed(href)
        if let scheme = text.range(of: "://") {
            let rest = text[scheme.upperBound...]
            guard let slash = rest.firstIndex(of: "/") else { return "/" }
            text = String(rest[slash...])
        }
        if let query = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = String(text[..<query]) }
        guard text.hasPrefix("/"), let decoded = PercentEncoding.decode(text) else { return nil }
        return decoded
    }

    /// `text` without the whitespace and newlines it begins or ends with (most texts have
    /// none, and are returned as they are, without a trip through Foundation).
    static func trimmed(_ text: String) -> String {
        guard let first = text.unicodeScalars.first, let last = text.unicodeScalars.last else { return text }
        let whitespace = CharacterSet.whitespacesAndNewlines
        guard whitespace.contains(first) || whitespace.contains(last) else { return text }
        return text.trimmingCharacters(in: whitespace)
    }

    /// Turns the parser's events into entries: per `response`, its first href and the
    /// properties of its `propstat`s whose status is 2xx.
    struct Reader: XMLEventReader {
        /// The entries, or nil if the root is not `DAV:multistatus`.
        var entries: [PropfindEntry]? { sawForeignRoot ? nil : found.entries }
        var found = PackedEntries()
        var sawForeignRoot = false
        private var depth = 0
        private var inResponse = false
        private var inPropstat = false
        private var propstatOK = true
        private var text = ""
        private var href: String?
        private var isCollection = false
        private var size: UInt64?
        private var modified: UInt64?
        private var propSize: UInt64?
        private var propModified: UInt64?
        private var propCollection = false

        mutating func take(_ event: XMLEvent) {
            switch event {
            case let .start(name): start(name)
            case let .text(string): text += string
            case let .end(name): end(name)
            }
        }

        mutating func start(_ name: XMLName) {
            depth += 1
            text = ""
            if depth == 1 && name != XMLName(namespace: "DAV:", local: "multistatus") { sawForeignRoot = true }
            guard name.namespace == "DAV:" else { return }
            switch name.local {
            case "response":
                inResponse = true
                href = nil; isCollection = false; size = nil; modified = nil
            case "propstat":
                inPropstat = true
                propstatOK = true
                propSize = nil; propModified = nil; propCollection = false
            case "collection" where inPropstat:
                propCollection = true
            default: break
            }
        }

        mutating func end(_ name: XMLName) {
            defer { depth -= 1; text = "" }
            guard name.namespace == "DAV:", inResponse else { return }
            switch name.local {
            case "href" where !inPropstat:
                if href == nil { href = PropfindParser.trimmed(text) }
            case "status" where inPropstat:
                // "HTTP/1.1 404 Not Found" for properties the server lacks.
                let parts = PropfindParser.trimmed(text).split(separator: " ")
                propstatOK = parts.count >= 2 && parts[1].hasPrefix("2")
            case "getcontentlength" where inPropstat:
                propSize = UInt64(PropfindParser.trimmed(text))
            case "getlastmodified" where inPropstat:
                propModified = HTTPDate.millis(PropfindParser.trimmed(text))
            case "propstat":
                if propstatOK {
                    size = propSize ?? size
                    modified = propModified ?? modified
                    isCollection = isCollection || propCollection
                }
                inPropstat = false
            case "response":
                if let href, let path = PropfindParser.path(ofHref: href) {
                    found.append(PropfindEntry(path: path, isCollection: isCollection || path.hasSuffix("/") && size == nil, size: size, modified: modified))
                }
                inResponse = false
            default: break
            }
        }
    }

    /// Entries kept packed while an answer is read: every path's UTF-8 bytes in one buffer
    /// and the rest in flat arrays, about 80 bytes an entry instead of a string and a struct
    /// each (about 150). A page refused at its size bound (32 MiB, some 160,000 entries)
    /// never becomes 160,000 strings; a page read whole becomes entries once, at the end.
    struct PackedEntries {
        private var bytes: [UInt8] = []
        private var ends: [Int] = []
        private var sizes: [UInt64] = []
        private var times: [UInt64] = []
        /// Per entry: 1 a collection, 2 a size known, 4 a time known.
        private var flags: [UInt8] = []

        mutating func append(_ entry: PropfindEntry) {
            bytes.append(contentsOf: entry.path.utf8)
            ends.append(bytes.count)
            sizes.append(entry.size ?? 0)
            times.append(entry.modified ?? 0)
            flags.append((entry.isCollection ? 1 : 0) | (entry.size != nil ? 2 : 0) | (entry.modified != nil ? 4 : 0))
        }

        var entries: [PropfindEntry] {
            var start = 0
            return ends.indices.map { index in
                defer { start = ends[index] }
                let flag = flags[index]
                return PropfindEntry(
                    path: String(decoding: bytes[start..<ends[index]], as: UTF8.self), isCollection: flag & 1 != 0,
                    size: flag & 2 != 0 ? sizes[index] : nil, modified: flag & 4 != 0 ? times[index] : nil)
            }
        }
    }
}
