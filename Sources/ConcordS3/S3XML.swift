import ConcordHTTP
import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// S3's XML answers, read with FoundationXML's `XMLParser`: records (`Contents`, `Upload`,
/// `Part`) as name → text maps, and the other leaf elements (`IsTruncated`,
/// `NextContinuationToken`, `UploadId`, `Code`, `Message`) as fields of the answer. Local
/// names only (AWS uses a default namespace, others none). Whatever the bytes, it returns
/// a value or nil — malformed XML is nil; it never traps.
public struct S3XML: Sendable {
    /// Leaf elements outside records, by local name (the first of each).
    public var fields: [String: String] = [:]
    /// Each record element's leaf children, by local name.
    public var records: [[String: String]] = []
    /// The root element's local name.
    public var root = ""

    public static func parse(_ bytes: [UInt8], record: String) -> S3XML? {
        // FoundationXML traps on an element name that is not UTF-8 (found by ParserTests'
        // mutations): only UTF-8 documents are parsed, as servers send.
        guard XMLInput.isParseable(bytes) else { return nil }
        let delegate = Delegate(record: record)
        let parser = XMLParser(data: Data(bytes))
        parser.shouldProcessNamespaces = true
        parser.shouldResolveExternalEntities = false
        parser.delegate = delegate
        guard parser.parse() else { return nil }
        return delegate.result
    }

    final class Delegate: NSObject, XMLParserDelegate {
        let record: String
        var result = S3XML()
        var current: [String: String]?
        var text = ""
        var depth = 0

        init(record: String) { self.record = record }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            depth += 1
            if depth == 1 { result.root = name }
            if name == record && current == nil { current = [:] }
            text = ""
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) { text += string }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            defer { depth -= 1; text = "" }
            if name == record, let finished = current {
                result.records.append(finished)
                current = nil
            } else if current != nil {
                if current?[name] == nil { current?[name] = text }
            } else if result.fields[name] == nil {
                result.fields[name] = text
            }
        }
    }
}
