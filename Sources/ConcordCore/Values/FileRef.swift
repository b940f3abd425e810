/// A reference to a file's content held in a file field (docs/ARCHITECTURE.md §2): its hash, its size
/// in bytes and, optionally, its media type.
public struct FileRef: Hashable, Sendable, CustomStringConvertible {
    public let hash: ContentHash
    public let size: UInt64
    public let mediaType: String?

    public init(hash: ContentHash, size: UInt64, mediaType: String? = nil) {
        self.hash = hash
        self.size = size
        self.mediaType = mediaType
    }

    public var description: String {
        "file(\(hash.hex.prefix(12))…, \(size) B\(mediaType.map { ", \($0)" } ?? ""))"
    }
}
