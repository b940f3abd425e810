/// The state machine: one character at a time, each looked at once.
extension XMLStreamParser {
    static let cdataOpening = Array("[CDATA[".unicodeScalars.map(\.value))

    mutating func step(_ c: UInt32, wasAtOrigin: Bool, _ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        switch state {
        case .misc:
            if c == 0x3C {  // <
                textBrackets = 0
                declaration = wasAtOrigin ? [] : nil
                state = .markup
            } else if open.isEmpty {
                guard Self.isWhitespace(c) else {
                    try fail(.malformed, rootEnded ? "text after the root element" : "text before the root element (is the answer XML?)")
                }
            } else if c == 0x26 {  // &
                textBrackets = 0
                reference.removeAll(keepingCapacity: true)
                state = .reference(quote: 0)
            } else {
                if c == 0x3E, textBrackets >= 2 { try fail(.malformed, "\"]]>\" in text") }
                textBrackets = c == 0x5D ? textBrackets + 1 : 0
                try appendText(c)
            }

        case .markup:
            switch c {
            case 0x21: state = .bang  // !
            case 0x3F:  // ?
                resetName()
                state = .instructionTarget
            case 0x2F:  // /
                guard !open.isEmpty else { try fail(.malformed, "an end tag with no element open") }
                resetName()
                state = .endName
            default:
                guard !rootEnded else { try fail(.malformed, "a second root element") }
                resetName()
                attributes.removeAll(keepingCapacity: true)
                try appendToName(c, what: "an element name")
                state = .startName
            }

        case .bang:
            switch c {
            case 0x2D: state = .commentOpen  // -
            case 0x5B where !open.isEmpty: state = .cdataOpen(matched: 1)  // [
            case 0x44: try fail(.doctype, "a document type declaration (<!DOCTYPE): refused, so that no entity is ever defined")
            default: try fail(.malformed, "\"<!\" begins neither a comment nor a CDATA section")
            }

        case .commentOpen:
            guard c == 0x2D else { try fail(.malformed, "\"<!-\" begins no comment") }
            state = .comment(dashes: 0)

        case let .comment(dashes):
            if dashes == 2 {
                guard c == 0x3E else { try fail(.malformed, "\"--\" inside a comment") }
                state = .misc
            } else {
                state = .comment(dashes: c == 0x2D ? dashes + 1 : 0)
            }

        case let .cdataOpen(matched):
            guard c == Self.cdataOpening[matched] else { try fail(.malformed, "\"<![\" begins no CDATA section") }
            state = matched + 1 == Self.cdataOpening.count ? .cdata(brackets: 0) : .cdataOpen(matched: matched + 1)

        case let .cdata(brackets):
            if c == 0x5D {  // ]
                if brackets == 2 { try appendText(c) }
                state = .cdata(brackets: min(brackets + 1, 2))
            } else if c == 0x3E, brackets == 2 {
                state = .misc
            } else {
                for _ in 0..<brackets { try appendText(0x5D) }
                try appendText(c)
                state = .cdata(brackets: 0)
            }

        case .instructionTarget:
            if Self.isWhitespace(c) || c == 0x3F {
                try endInstructionTarget()
                state = .instructionBody(question: c == 0x3F)
            } else {
                try appendToName(c, what: "a processing instruction's target")
            }

        case let .instructionBody(question):
            if question, c == 0x3E {
                if declaration != nil { try readDeclaration() }
                state = .misc
            } else {
                if declaration != nil {
                    Self.append(c, to: &declaration!)
                    guard declaration!.count <= 256 else { try fail(.malformed, "an XML declaration longer than 256 bytes") }
                }
                state = .instructionBody(question: c == 0x3F)
            }

        case .startName:
            if Self.isWhitespace(c) || c == 0x2F || c == 0x3E {
                try endName(what: "an element")
                swap(&element, &name)
                if Self.isWhitespace(c) { state = .tag } else { try tagEnds(c, handle) }
            } else {
                try appendToName(c, what: "an element name")
            }

        case .tag, .tagAfterValue:
            if Self.isWhitespace(c) {
                state = .tag
            } else if c == 0x2F || c == 0x3E {
                try tagEnds(c, handle)
            } else {
                guard case .tag = state else { try fail(.malformed, "attributes not separated by whitespace in <\(elementName)>") }
                guard attributes.count < limits.maxAttributes else {
                    try fail(.tooManyAttributes, "<\(elementName)> has more than \(limits.maxAttributes) attributes")
                }
                resetName()
                try appendToName(c, what: "an attribute name")
                state = .attributeName
            }

        case .attributeName:
            if Self.isWhitespace(c) || c == 0x3D {
                try endName(what: "an attribute")
                state = c == 0x3D ? .attributeQuote : .attributeEquals
            } else {
                try appendToName(c, what: "an attribute name")
            }

        case .attributeEquals:
            guard !Self.isWhitespace(c) else { return }
            guard c == 0x3D else { try fail(.malformed, "attribute \(quotedName) has no value") }
            state = .attributeQuote

        case .attributeQuote:
            guard !Self.isWhitespace(c) else { return }
            guard c == 0x22 || c == 0x27 else { try fail(.malformed, "attribute \(quotedName)'s value is not quoted") }
            value.removeAll(keepingCapacity: true)
            state = .attributeValue(quote: c)

        case let .attributeValue(quote):
            switch c {
            case quote:
                guard !attributes.contains(where: { $0.name == name }) else {
                    try fail(.namespace, "attribute \(quotedName) appears twice on one element")
                }
                attributes.append((name, value))
                state = .tagAfterValue
            case 0x3C: try fail(.malformed, "\"<\" in an attribute value")
            case 0x26:
                reference.removeAll(keepingCapacity: true)
                state = .reference(quote: quote)
            default: try appendToValue(Self.isWhitespace(c) ? 0x20 : c)
            }

        case .emptyElementClose:
            guard c == 0x3E else { try fail(.malformed, "\"/\" not followed by \">\" in <\(elementName)>") }
            try startElement(empty: true, handle)
            state = .misc

        case .endName:
            if Self.isWhitespace(c) || c == 0x3E {
                try endName(what: "an end tag")
                if c == 0x3E {
                    try endElement(handle)
                    state = .misc
                } else {
                    state = .endSpace
                }
            } else {
                try appendToName(c, what: "an end tag's name")
            }

        case .endSpace:
            guard !Self.isWhitespace(c) else { return }
            guard c == 0x3E else { try fail(.malformed, "an end tag </\(String(decoding: name, as: UTF8.self))> with more than a name") }
            try endElement(handle)
            state = .misc

        case let .reference(quote):
            guard c == 0x3B else {  // ;
                guard c == 0x23 || Self.isNameCharacter(c), c < 0x80 else {
                    try fail(.malformed, "\"&\" that begins no reference (write &amp;)")
                }
                guard reference.count < 10 else { try fail(.unknownEntity, "an entity reference longer than any XML defines") }
                reference.append(UInt8(c))
                return
            }
            let character = try resolveReference()
            if quote == 0 {
                try appendText(character)
                state = .misc
            } else {
                try appendToValue(character)
                state = .attributeValue(quote: quote)
            }
        }
    }

    /// The tag being read ends with `/` or `>`.
    mutating func tagEnds(_ c: UInt32, _ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        if c == 0x2F {
            state = .emptyElementClose
        } else {
            try startElement(empty: false, handle)
            state = .misc
        }
    }

    var elementName: String { String(decoding: element, as: UTF8.self) }

    mutating func appendToValue(_ c: UInt32) throws(XMLStreamError) {
        Self.append(c, to: &value)
        guard value.count <= limits.maxAttributeLength else {
            try fail(.attributeTooLong, "an attribute value longer than \(limits.maxAttributeLength) bytes")
        }
    }

    /// The character a reference (`&…;`, its name in `reference`) stands for.
    mutating func resolveReference() throws(XMLStreamError) -> UInt32 {
        switch reference {
        case Array("lt".utf8): return 0x3C
        case Array("gt".utf8): return 0x3E
        case Array("amp".utf8): return 0x26
        case Array("apos".utf8): return 0x27
        case Array("quot".utf8): return 0x22
        default: break
        }
        let text = String(decoding: reference, as: UTF8.self)
        guard reference.first == 0x23 else {
            try fail(.unknownEntity, "&\(text); is not one of XML's five entities (and no DTD may define more)")
        }
        let hex = reference.dropFirst().first == 0x78
        let digits = reference.dropFirst(hex ? 2 : 1)
        guard !digits.isEmpty, let value = UInt32(String(decoding: digits, as: UTF8.self), radix: hex ? 16 : 10),
            Self.isXMLCharacter(value)
        else {
            try fail(.unknownEntity, "&\(text); is no character XML allows")
        }
        return value
    }

    /// Checks a processing instruction's target: `xml` begins the XML declaration, and
    /// only at the very start; no other target may be `xml` in any case, or have a colon.
    mutating func endInstructionTarget() throws(XMLStreamError) {
        try endName(what: "a processing instruction")
        guard nameColon == nil else { try fail(.malformed, "a processing instruction's target \(quotedName) has a colon") }
        if name.count == 3, String(decoding: name, as: UTF8.self).lowercased() == "xml" {
            guard declaration != nil, name == Array("xml".utf8) else {
                try fail(.malformed, "an XML declaration that is not at the start of the answer")
            }
        } else {
            declaration = nil
        }
    }
}
