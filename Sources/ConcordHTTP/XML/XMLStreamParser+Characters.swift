/// The character classes of XML 1.0 (fifth edition), and UTF-8 encoding into the buffers.
extension XMLStreamParser {
    /// `Char`: tab, line feed, carriage return and everything from space up, but surrogates,
    /// U+FFFE and U+FFFF (the decoder never produces surrogates).
    static func isXMLCharacter(_ c: UInt32) -> Bool {
        switch c {
        case 0x20...0xD7FF, 0x09, 0x0A, 0x0D, 0xE000...0xFFFD, 0x10000...0x10FFFF: true
        default: false
        }
    }

    static func isWhitespace(_ c: UInt32) -> Bool {
        c == 0x20 || c == 0x0A || c == 0x09 || c == 0x0D
    }

    /// `NameStartChar`, the colon aside (namespaces give it its own role).
    static func isNameStart(_ c: UInt32) -> Bool {
        switch c {
        case 0x61...0x7A, 0x41...0x5A, 0x5F: true
        case 0xC0...0xD6, 0xD8...0xF6, 0xF8...0x2FF, 0x370...0x37D, 0x37F...0x1FFF, 0x200C...0x200D,
             0x2070...0x218F, 0x2C00...0x2FEF, 0x3001...0xD7FF, 0xF900...0xFDCF, 0xFDF0...0xFFFD, 0x10000...0xEFFFF: true
        default: false
        }
    }

    /// `NameChar`, the colon aside.
    static func isNameCharacter(_ c: UInt32) -> Bool {
        switch c {
        case 0x61...0x7A, 0x41...0x5A, 0x30...0x39, 0x5F, 0x2D, 0x2E: true
        case 0xB7, 0x300...0x36F, 0x203F...0x2040: true
        default: isNameStart(c)
        }
    }

    static func append(_ c: UInt32, to bytes: inout [UInt8]) {
        switch c {
        case ..<0x80:
            bytes.append(UInt8(c))
        case ..<0x800:
            bytes.append(UInt8(0xC0 | c >> 6))
            bytes.append(UInt8(0x80 | c & 0x3F))
        case ..<0x10000:
            bytes.append(UInt8(0xE0 | c >> 12))
            bytes.append(UInt8(0x80 | c >> 6 & 0x3F))
            bytes.append(UInt8(0x80 | c & 0x3F))
        default:
            bytes.append(UInt8(0xF0 | c >> 18))
            bytes.append(UInt8(0x80 | c >> 12 & 0x3F))
            bytes.append(UInt8(0x80 | c >> 6 & 0x3F))
            bytes.append(UInt8(0x80 | c & 0x3F))
        }
    }

    /// Adds a character to the name being read: a qualified name (`prefix:local`, one
    /// colon at most, neither part empty, each beginning with a name-start character).
    mutating func appendToName(_ c: UInt32, what: String) throws(XMLStreamError) {
        if c == 0x3A {
            guard nameColon == nil, !name.isEmpty else { try fail(.malformed, "\(what) \(quotedName) has a misplaced colon") }
            nameColon = name.count + 1
        } else if name.isEmpty || nameColon == name.count {
            guard Self.isNameStart(c) else { try fail(.malformed, "\(what) \(quotedName) cannot go on with U+\(String(c, radix: 16, uppercase: true))") }
        } else {
            guard Self.isNameCharacter(c) else { try fail(.malformed, "\(what) \(quotedName) cannot go on with U+\(String(c, radix: 16, uppercase: true))") }
        }
        Self.append(c, to: &name)
        guard name.count <= limits.maxNameLength else {
            try fail(.nameTooLong, "\(what) is longer than \(limits.maxNameLength) bytes")
        }
    }

    /// Checks the name just read ends well (not on its colon), and starts the next one.
    mutating func endName(what: String) throws(XMLStreamError) {
        guard !name.isEmpty else { try fail(.malformed, "\(what) has no name") }
        guard nameColon != name.count else { try fail(.malformed, "\(what) \(quotedName) ends with a colon") }
    }

    mutating func resetName() {
        name.removeAll(keepingCapacity: true)
        nameColon = nil
    }

    var quotedName: String { "\"\(String(decoding: name, as: UTF8.self))\"" }

    /// Adds text, within ``XMLLimits/maxTextLength``.
    mutating func appendText(_ c: UInt32) throws(XMLStreamError) {
        Self.append(c, to: &text)
        guard text.count <= limits.maxTextLength else {
            try fail(.textTooLong, "more than \(limits.maxTextLength) bytes of text between two tags")
        }
    }
}
