/// Why ``XMLStreamParser`` refused an answer: a code a program can switch on, a message
/// that says what was wrong, and the byte offset in the answer where the parser stopped.
/// Codes are static members of an extensible struct, as ``/ConcordCore/ConcordError``'s are.
public struct XMLStreamError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which rule the answer broke.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Not well-formed XML: a stray `<` or `&`, a bad name, text outside the root
        /// element, `--` in a comment, a second root, an XML declaration not at the start.
        public static let malformed = Code("malformed")
        /// Bytes that are not UTF-8, or a character XML does not allow (NUL, most controls).
        public static let invalidCharacter = Code("invalidCharacter")
        /// An XML declaration naming an encoding other than UTF-8 (or its subset US-ASCII).
        public static let unsupportedEncoding = Code("unsupportedEncoding")
        /// A document type declaration (`<!DOCTYPE`): refused whole, so no entity is ever
        /// defined or expanded (no "billion laughs", no external entities).
        public static let doctype = Code("doctype")
        /// A reference to an entity other than the five XML predefines (`&lt;` `&gt;`
        /// `&amp;` `&apos;` `&quot;`), or a numeric reference to a character XML forbids.
        public static let unknownEntity = Code("unknownEntity")
        /// An end tag that does not close the element open at that point.
        public static let mismatchedTag = Code("mismatchedTag")
        /// A prefix no `xmlns:` declaration binds, a declaration XML Namespaces forbids
        /// (`xmlns:p=""`, rebinding `xml` or `xmlns`), or the same attribute twice.
        public static let namespace = Code("namespace")
        /// The answer ended before its root element did (or before it began).
        public static let truncated = Code("truncated")

        /// Elements nested deeper than ``XMLLimits/maxDepth``.
        public static let tooDeep = Code("tooDeep")
        /// A name (element, attribute, prefix, processing instruction) longer than
        /// ``XMLLimits/maxNameLength`` bytes.
        public static let nameTooLong = Code("nameTooLong")
        /// More than ``XMLLimits/maxTextLength`` bytes of text in one run between tags.
        public static let textTooLong = Code("textTooLong")
        /// More than ``XMLLimits/maxAttributes`` attributes on one element.
        public static let tooManyAttributes = Code("tooManyAttributes")
        /// An attribute value longer than ``XMLLimits/maxAttributeLength`` bytes.
        public static let attributeTooLong = Code("attributeTooLong")
        /// An answer longer than ``XMLLimits/maxBytes``.
        public static let tooLarge = Code("tooLarge")
    }

    /// Which rule the answer broke.
    public let code: Code
    /// What was wrong, in words, naming what the parser read (a tag, a reference).
    public let message: String
    /// How many bytes of the answer had been read when the parser stopped.
    public let offset: UInt64

    public init(_ code: Code, _ message: String, offset: UInt64) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    /// Whether the answer broke one of ``XMLLimits`` rather than a rule of XML.
    public var isLimit: Bool {
        [.tooDeep, .nameTooLong, .textTooLong, .tooManyAttributes, .attributeTooLong, .tooLarge].contains(code)
    }

    public var description: String { "\(code) at byte \(offset): \(message)" }
}
