/// What may be handed to FoundationXML's `XMLParser`, which on Linux traps (rather than
/// failing) on some malformed input — found by ParserTests' seeded mutations of real
/// answers. Servers' PROPFIND and S3 answers never need what is refused here:
/// - bytes that are not UTF-8, or an XML declaration naming another encoding;
/// - NUL bytes;
/// - processing instructions other than the leading XML declaration;
/// - markup declarations and sections (`<!DOCTYPE`, `<!ENTITY`, `<![CDATA[`, comments);
/// - elements nested deeper than 64.
public enum XMLInput {
    public static let maxDepth = 64

    public static func isParseable(_ bytes: [UInt8]) -> Bool {
        guard !bytes.contains(0), let text = String(validating: bytes, as: UTF8.self) else { return false }
        if text.hasPrefix("<?xml"), let end = text.firstIndex(of: ">") {
            let declaration = text[..<end].lowercased()
            if let range = declaration.range(of: "encoding=") {
                let value = declaration[range.upperBound...].dropFirst().prefix { $0 != "\"" && $0 != "'" }
                guard value == "utf-8" || value == "utf8" || value == "us-ascii" else { return false }
            }
        }
        var depth = 0
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "<"), index + 1 < bytes.count {
                switch bytes[index + 1] {
                case UInt8(ascii: "!"): return false
                case UInt8(ascii: "/"): depth -= 1
                case UInt8(ascii: "?"):
                    // Only the XML declaration: a processing instruction without data
                    // makes XMLParser read a null pointer.
                    guard index == 0, bytes.starts(with: Array("<?xml ".utf8)) else { return false }
                default:
                    depth += 1
                    if depth > maxDepth { return false }
                }
            } else if bytes[index] == UInt8(ascii: "/"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: ">") {
                depth -= 1
            }
            index += 1
        }
        return true
    }
}
