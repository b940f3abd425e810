import ConcordHTTP

/// S3's XML answers, read with ``/ConcordHTTP/XMLStreamParser``: records (`Contents`,
/// `Upload`, `Part`) as name → text maps, and the other leaf elements (`IsTruncated`,
/// `NextContinuationToken`, `UploadId`, `Code`, `Message`) as fields of the answer. Local
/// names only (AWS uses a default namespace, others none). Whatever the bytes, it returns
/// a value or nil — malformed XML and an answer over ``/ConcordHTTP/XMLLimits`` are nil; it
/// never traps.
public struct S3XML: Sendable {
    /// Leaf elements outside records, by local name (the first of each).
    public var fields: [String: String] = [:]
    /// Each record element's leaf children, by local name.
    public var records: [[String: String]] = []
    /// The root element's local name.
    public var root = ""

    /// A whole answer whose `record` elements (`"-"` for none) become ``records``, or nil
    /// if it is not well-formed XML within `limits`.
    public static func parse(_ bytes: [UInt8], record: String, limits: XMLLimits = XMLLimits()) -> S3XML? {
        XMLAnswer.parse(bytes, into: Reader(record: record), limits: limits)?.result
    }

    /// An answer read as it arrives, whose `record` elements become ``records``:
    /// ``Reader/result`` of what it finishes with.
    static func answer(record: String) -> XMLAnswer<Reader> {
        XMLAnswer(Reader(record: record))
    }

    /// Turns the parser's events into the answer: the text of each element is the run
    /// just before its end tag.
    struct Reader: XMLEventReader {
        let record: String
        var result = S3XML()
        var current: [String: String]?
        var text = ""
        var depth = 0

        init(record: String) { self.record = record }

        mutating func take(_ event: XMLEvent) {
            switch event {
            case let .start(name):
                depth += 1
                if depth == 1 { result.root = name.local }
                if name.local == record && current == nil { current = [:] }
                text = ""
            case let .text(string):
                text += string
            case let .end(name):
                defer { depth -= 1; text = "" }
                if name.local == record, let finished = current {
                    result.records.append(finished)
                    current = nil
                } else if current != nil {
                    if current?[name.local] == nil { current?[name.local] = text }
                } else if result.fields[name.local] == nil {
                    result.fields[name.local] = text
                }
            }
        }
    }
}
