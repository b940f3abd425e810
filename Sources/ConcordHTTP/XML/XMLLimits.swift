/// The bounds ``XMLStreamParser`` holds an answer to. Each one broken stops the parse with
/// its own ``XMLStreamError/Code``, so a hostile or broken server costs at most these
/// bounds in memory, whatever it sends: the parser keeps one run of text, one tag's
/// attributes and, for each open element, its name and the namespaces it declares —
/// about `maxDepth × (maxNameLength + maxAttributes × maxAttributeLength) + maxTextLength`
/// bytes at worst (1.1 MiB with the defaults), never the answer itself.
public struct XMLLimits: Hashable, Sendable {
    /// The most bytes one answer may have (32 MiB by default: a listing page's limit,
    /// `RemoteLayout.maxListingPageSize`).
    public var maxBytes: UInt64
    /// The deepest elements may nest (64): PROPFIND and S3 answers nest 6 deep at most.
    public var maxDepth: Int
    /// The longest name, in UTF-8 bytes, prefix included (256).
    public var maxNameLength: Int
    /// The most text, in UTF-8 bytes, between two tags (64 KiB; an S3 key is at most
    /// 1 KiB, an href a few hundred bytes).
    public var maxTextLength: Int
    /// The most attributes on one element, namespace declarations included (16).
    public var maxAttributes: Int
    /// The longest attribute value (a namespace name), in UTF-8 bytes (1 KiB).
    public var maxAttributeLength: Int

    /// The defaults above, or others (tests use small ones).
    public init(
        maxBytes: UInt64 = 32 << 20, maxDepth: Int = 64, maxNameLength: Int = 256,
        maxTextLength: Int = 64 << 10, maxAttributes: Int = 16, maxAttributeLength: Int = 1 << 10
    ) {
        self.maxBytes = maxBytes
        self.maxDepth = maxDepth
        self.maxNameLength = maxNameLength
        self.maxTextLength = maxTextLength
        self.maxAttributes = maxAttributes
        self.maxAttributeLength = maxAttributeLength
    }
}
