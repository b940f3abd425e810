/// A small, strict, streaming XML parser for the answers servers send (PROPFIND
/// multistatus, S3 listings and errors): fed bytes in chunks of any size, as they arrive or
/// from a buffer, it reports elements with their namespaces resolved and the text between
/// them (``XMLEvent``), and keeps only what ``XMLLimits`` bounds — never the document.
///
/// It reads XML 1.0 with namespaces, in UTF-8: an XML declaration, comments, processing
/// instructions, CDATA sections, the five predefined entities and numeric character
/// references, attributes (namespace declarations among them). It refuses, with a typed
/// ``XMLStreamError``, whatever is not well-formed, and on purpose:
/// - a document type declaration (`<!DOCTYPE`): no entity is ever defined or expanded;
/// - any encoding but UTF-8 (a UTF-8 byte-order mark is skipped);
/// - an entity other than the five predefined ones.
///
/// Each byte is looked at once, so time is linear in the answer. Events are handed to a
/// closure during ``feed(_:_:)``; an error leaves the parser failed (every later call
/// throws it again). ``finish(_:)`` says whether the answer ended where its root did.
///
/// ```swift
/// var parser = XMLStreamParser(limits: XMLLimits(maxBytes: 32 << 20))
/// for chunk in body { try parser.feed(chunk) { event in … } }
/// try parser.finish { event in … }
/// ```
public struct XMLStreamParser: Sendable {
    /// The bounds the answer is held to.
    public let limits: XMLLimits
    /// How many bytes have been fed so far.
    public private(set) var bytesRead: UInt64 = 0

    // UTF-8 decoding, across chunk boundaries.
    var scalar: UInt32 = 0
    var pendingContinuations = 0
    var continuationRange: ClosedRange<UInt8> = 0x80...0xBF
    var sawCarriageReturn = false
    /// No character has been read yet (a byte-order mark aside): an XML declaration may begin.
    var atOrigin = true

    var state: State = .misc
    var failure: XMLStreamError?

    // What the current markup has collected.
    var name: [UInt8] = []
    /// The qualified name of the start tag being read (`name` then reads its attributes').
    var element: [UInt8] = []
    /// Where the local part of the name being read begins, once it has had its colon.
    var nameColon: Int?
    var text: [UInt8] = []
    var textBrackets = 0
    var attributes: [(name: [UInt8], value: [UInt8])] = []
    var value: [UInt8] = []
    var reference: [UInt8] = []
    var declaration: [UInt8]?

    // Open elements, and the namespaces in scope.
    var open: [Frame] = []
    var bindings: [String: [String]] = [:]
    var rootEnded = false

    struct Frame: Sendable {
        let qualifiedName: [UInt8]
        let name: XMLName
        let declared: [String]
    }

    /// Where the parser is. `misc` is between markup: text inside the root element,
    /// whitespace before or after it.
    enum State: Sendable {
        case misc
        case markup
        case bang
        case commentOpen
        case comment(dashes: Int)
        case cdataOpen(matched: Int)
        case cdata(brackets: Int)
        case instructionTarget
        case instructionBody(question: Bool)
        case startName
        case tag
        case tagAfterValue
        case attributeName
        case attributeEquals
        case attributeQuote
        case attributeValue(quote: UInt32)
        case emptyElementClose
        case endName
        case endSpace
        case reference(quote: UInt32)
    }

    /// A parser at the start of an answer.
    public init(limits: XMLLimits = XMLLimits()) {
        self.limits = limits
    }

    /// Parses a whole answer held in memory, handing each event to `handle`.
    public static func parse(
        _ bytes: some Collection<UInt8>, limits: XMLLimits = XMLLimits(), _ handle: (XMLEvent) -> Void
    ) throws(XMLStreamError) {
        var parser = XMLStreamParser(limits: limits)
        try parser.feed(bytes, handle)
        try parser.finish(handle)
    }

    /// Reads the next bytes of the answer; events they complete go to `handle`.
    public mutating func feed(_ bytes: some Collection<UInt8>, _ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        var thrown: XMLStreamError?
        let contiguous: Void? = bytes.withContiguousStorageIfAvailable { buffer in
            do throws(XMLStreamError) { try feed(buffer: buffer, handle) } catch { thrown = error }
        }
        if contiguous == nil {
            let copy = Array(bytes)
            copy.withUnsafeBufferPointer { buffer in
                do throws(XMLStreamError) { try feed(buffer: buffer, handle) } catch { thrown = error }
            }
        }
        if let thrown { throw thrown }
    }

    /// Ends the answer: throws ``XMLStreamError/Code/truncated`` unless its root element
    /// was read whole.
    public mutating func finish(_ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        if let failure { throw failure }
        if pendingContinuations > 0 {
            try fail(.truncated, "the answer ends inside a UTF-8 sequence")
        }
        guard rootEnded, case .misc = state else {
            let open = self.open.last.map { " inside <\(String(decoding: $0.qualifiedName, as: UTF8.self))>" } ?? ""
            try fail(.truncated, bytesRead == 0 ? "the answer is empty" : "the answer ends before its root element does\(open)")
        }
    }

    mutating func feed(buffer: UnsafeBufferPointer<UInt8>, _ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        if let failure { throw failure }
        guard UInt64(buffer.count) <= limits.maxBytes - bytesRead else {
            bytesRead = limits.maxBytes
            try fail(.tooLarge, "the answer is longer than \(limits.maxBytes) bytes")
        }
        for byte in buffer {
            bytesRead += 1
            if pendingContinuations == 0 {
                if byte < 0x80 {
                    try take(UInt32(byte), handle)
                    continue
                }
                switch byte {
                case 0xC2...0xDF: pendingContinuations = 1; scalar = UInt32(byte & 0x1F); continuationRange = 0x80...0xBF
                case 0xE0: pendingContinuations = 2; scalar = 0; continuationRange = 0xA0...0xBF
                case 0xED: pendingContinuations = 2; scalar = 0xD; continuationRange = 0x80...0x9F
                case 0xE1...0xEF: pendingContinuations = 2; scalar = UInt32(byte & 0x0F); continuationRange = 0x80...0xBF
                case 0xF0: pendingContinuations = 3; scalar = 0; continuationRange = 0x90...0xBF
                case 0xF1...0xF3: pendingContinuations = 3; scalar = UInt32(byte & 0x07); continuationRange = 0x80...0xBF
                case 0xF4: pendingContinuations = 3; scalar = 4; continuationRange = 0x80...0x8F
                default: try fail(.invalidCharacter, "byte \(byte) begins no UTF-8 character")
                }
            } else {
                guard continuationRange.contains(byte) else {
                    try fail(.invalidCharacter, "byte \(byte) does not continue a UTF-8 character")
                }
                scalar = scalar << 6 | UInt32(byte & 0x3F)
                continuationRange = 0x80...0xBF
                pendingContinuations -= 1
                if pendingContinuations == 0 { try take(scalar, handle) }
            }
        }
    }

    /// One character: checked, line ends normalized, then handed to the state machine.
    mutating func take(_ character: UInt32, _ handle: (XMLEvent) -> Void) throws(XMLStreamError) {
        var character = character
        if atOrigin, character == 0xFEFF, bytesRead == 3 { return }
        guard Self.isXMLCharacter(character) else {
            try fail(.invalidCharacter, "character U+\(String(character, radix: 16, uppercase: true)) is not allowed in XML")
        }
        if character == 0x0D {
            sawCarriageReturn = true
            character = 0x0A
        } else if character == 0x0A, sawCarriageReturn {
            sawCarriageReturn = false
            return
        } else {
            sawCarriageReturn = false
        }
        let wasAtOrigin = atOrigin
        atOrigin = false
        try step(character, wasAtOrigin: wasAtOrigin, handle)
    }

    /// Records the failure (every later call throws it) and throws it.
    mutating func fail(_ code: XMLStreamError.Code, _ message: String) throws(XMLStreamError) -> Never {
        let error = XMLStreamError(code, message, offset: bytesRead)
        failure = error
        throw error
    }
}
