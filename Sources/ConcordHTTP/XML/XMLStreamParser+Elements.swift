/// Elements open and close, with XML Namespaces: `xmlns` and `xmlns:p` attributes bind
/// namespaces for the element and what it holds; a name's prefix resolves to the nearest
/// binding.
extension XMLStreamParser {
    static let xmlNamespace = "http://www.w3.org/XML/1998/namespace"
    static let xmlnsNamespace = "http://www.w3.org/2000/xmlns/"

    /// The start tag read (name in `element`, attributes in `attributes`) opens an element.
    mutating func startElement(empty: Bool, _ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        guard open.count < limits.maxDepth else {
            try fail(.tooDeep, "elements nested deeper than \(limits.maxDepth)")
        }
        var declared: [String] = []
        for attribute in attributes {
            let (prefix, local) = Self.split(attribute.name)
            let uri = String(decoding: attribute.value, as: UTF8.self)
            let bound: String
            if prefix.isEmpty, local == "xmlns" {
                bound = ""
                guard uri != Self.xmlNamespace, uri != Self.xmlnsNamespace else {
                    try fail(.namespace, "xmlns=\"\(uri)\": that namespace cannot be the default")
                }
            } else if prefix == "xmlns" {
                bound = local
                guard local != "xmlns", !uri.isEmpty, (local == "xml") == (uri == Self.xmlNamespace), uri != Self.xmlnsNamespace else {
                    try fail(.namespace, "xmlns:\(local)=\"\(uri)\" is a declaration XML Namespaces forbids")
                }
            } else {
                continue
            }
            guard !declared.contains(bound) else { try fail(.namespace, "one element declares \(bound.isEmpty ? "the default namespace" : "prefix \(bound)") twice") }
            declared.append(bound)
            bindings[bound, default: []].append(uri)
        }
        let elementName = try resolve(element, isAttribute: false)
        var seen: [XMLName] = []
        for attribute in attributes where !Self.isDeclaration(attribute.name) {
            let resolved = try resolve(attribute.name, isAttribute: true)
            guard !seen.contains(resolved) else { try fail(.namespace, "attribute \(resolved) appears twice on <\(self.elementName)>") }
            seen.append(resolved)
        }
        flushText(handle)
        open.append(Frame(qualifiedName: element, name: elementName, declared: declared))
        handle(.start(elementName))
        if empty { closeElement(handle) }
    }

    /// The end tag read (name in `name`) closes the element open.
    mutating func endElement(_ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        guard let frame = open.last, frame.qualifiedName == name else {
            let expected = open.last.map { String(decoding: $0.qualifiedName, as: UTF8.self) } ?? ""
            try fail(.mismatchedTag, "</\(String(decoding: name, as: UTF8.self))> where </\(expected)> was due")
        }
        flushText(handle)
        closeElement(handle)
    }

    mutating func closeElement(_ handle: (XMLEvent) -> Void) {
        let frame = open.removeLast()
        for prefix in frame.declared { bindings[prefix]?.removeLast() }
        handle(.end(frame.name))
        if open.isEmpty { rootEnded = true }
    }

    mutating func flushText(_ handle: (XMLEvent) -> Void) {
        guard !text.isEmpty else { return }
        handle(.text(String(decoding: text, as: UTF8.self)))
        text.removeAll(keepingCapacity: true)
    }

    /// A qualified name's namespace and local part. Unprefixed attributes are in no
    /// namespace; unprefixed elements in the default one.
    mutating func resolve(_ qualifiedName: [UInt8], isAttribute: Bool) throws(XMLStreamError) -> XMLName {
        let (prefix, local) = Self.split(qualifiedName)
        let namespace: String
        if prefix.isEmpty {
            namespace = isAttribute ? "" : bindings[""]?.last ?? ""
        } else if prefix == "xml" {
            namespace = Self.xmlNamespace
        } else if let bound = bindings[prefix]?.last {
            namespace = bound
        } else {
            try fail(.namespace, "prefix \(prefix) of \(prefix):\(local) is bound by no xmlns:\(prefix) declaration")
        }
        return XMLName(namespace: namespace, local: local)
    }

    static func split(_ qualifiedName: [UInt8]) -> (prefix: String, local: String) {
        guard let colon = qualifiedName.firstIndex(of: 0x3A) else { return ("", String(decoding: qualifiedName, as: UTF8.self)) }
        return (String(decoding: qualifiedName[..<colon], as: UTF8.self), String(decoding: qualifiedName[(colon + 1)...], as: UTF8.self))
    }

    static func isDeclaration(_ qualifiedName: [UInt8]) -> Bool {
        qualifiedName == Array("xmlns".utf8) || qualifiedName.starts(with: Array("xmlns:".utf8))
    }
}
