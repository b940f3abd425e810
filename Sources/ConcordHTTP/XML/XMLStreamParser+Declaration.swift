/// The XML declaration (`<?xml version="1.0" encoding="UTF-8" standalone="yes"?>`): a
/// version 1.x, then optionally an encoding — UTF-8 or its subset US-ASCII, the only ones
/// read — and `standalone`, in that order.
extension XMLStreamParser {
    mutating func readDeclaration() throws(XMLStreamError) {
        var body = String(decoding: declaration ?? [], as: UTF8.self)
        declaration = nil
        if body.hasSuffix("?") { body.removeLast() }
        var fields: [(name: Substring, value: Substring)] = []
        var rest = Substring(body)
        while true {
            rest = rest.drop { $0 == " " || $0 == "\n" || $0 == "\t" }
            if rest.isEmpty { break }
            let name = rest.prefix { $0.isLetter }
            rest = rest.dropFirst(name.count).drop { $0 == " " || $0 == "\n" || $0 == "\t" }
            guard rest.first == "=" else { try fail(.malformed, "the XML declaration is not pseudo-attributes: \(body)") }
            rest = rest.dropFirst().drop { $0 == " " || $0 == "\n" || $0 == "\t" }
            guard let quote = rest.first, quote == "\"" || quote == "'", let end = rest.dropFirst().firstIndex(of: quote) else {
                try fail(.malformed, "a value in the XML declaration is not quoted: \(body)")
            }
            fields.append((name, rest[rest.index(after: rest.startIndex)..<end]))
            rest = rest[rest.index(after: end)...]
            guard rest.isEmpty || rest.first == " " || rest.first == "\n" || rest.first == "\t" else {
                try fail(.malformed, "the XML declaration's fields are not separated by whitespace: \(body)")
            }
        }
        var names = fields.map { String($0.name) }
        guard names.first == "version", let version = fields.first?.value, version.hasPrefix("1."), version.count > 2,
            version.dropFirst(2).allSatisfy({ $0.isASCII && $0.isNumber })
        else {
            try fail(.malformed, "the XML declaration names no version 1.x: \(body)")
        }
        names.removeFirst()
        if names.first == "encoding" {
            let encoding = fields[1].value.lowercased()
            guard ["utf-8", "utf8", "us-ascii"].contains(encoding) else {
                try fail(.unsupportedEncoding, "the answer is in \(fields[1].value); only UTF-8 is read")
            }
            names.removeFirst()
        }
        if names.first == "standalone" {
            guard ["yes", "no"].contains(fields[fields.count - names.count].value) else {
                try fail(.malformed, "standalone is neither yes nor no in the XML declaration: \(body)")
            }
            names.removeFirst()
        }
        guard names.isEmpty else { try fail(.malformed, "the XML declaration has fields out of place: \(body)") }
    }
}
