import ConcordCore

/// Blob streams of key generations other than 0 (format version 2): their header, its
/// length, and the sizes a stream may have.
extension BlobStream {
    /// The blob-stream format version sealed under any key generation but 0.
    public static let generationFormatVersion: UInt8 = 2
    /// How many leading bytes tell the length of a stream's header
    /// (``headerByteCount(startingWith:)``).
    public static let leadByteCount = 5
    /// The longest header there is: format 2 naming ``KeyGeneration/maxCount`` generations.
    public static let maxHeaderByteCount = 5 + KeyGeneration.maxCount * KeyGenerationID.byteCount + 24

    /// The bytes before the secretstream header of a stream sealed under `generation` (and in
    /// every chunk's associated data): ``prefix`` for generation 0; magic, version 2, the id
    /// count and the ids for any other.
    public static func prefix(for generation: KeyGeneration) -> [UInt8] {
        guard !generation.isZero else { return prefix }
        return Array(prefix.prefix(3)) + [generationFormatVersion, UInt8(generation.ids.count)] + generation.ids.flatMap(\.bytes)
    }

    /// Bytes before the first frame of a stream sealed under `generation`.
    public static func headerByteCount(for generation: KeyGeneration) -> Int {
        prefix(for: generation).count + 24
    }

    /// The length of the header of a stream that starts with `lead` (its first
    /// ``leadByteCount`` bytes, or all of a shorter stream), as far as they tell:
    /// ``headerByteCount`` unless they start a format-2 header with a valid id count.
    /// ``BlobDecryptor`` checks the header itself.
    public static func headerByteCount(startingWith lead: some Collection<UInt8>) -> Int {
        let lead = Array(lead.prefix(leadByteCount))
        guard lead.count == leadByteCount, lead[0..<3].elementsEqual(prefix[0..<3]), lead[3] == generationFormatVersion,
              (1...KeyGeneration.maxCount).contains(Int(lead[4])) else { return headerByteCount }
        return 5 + Int(lead[4]) * KeyGenerationID.byteCount + 24
    }

    /// The key generation a stream's `header` names: generation 0 for format 1.
    ///
    /// - Throws: `authenticationFailed` naming `name` for a header that is not a Concord
    ///   blob's (too short, wrong magic, a format-2 header naming no valid generation);
    ///   `unsupportedVersion` for an unknown format version.
    public static func generation(ofHeader header: some Collection<UInt8>, name: String) throws(ConcordError) -> KeyGeneration {
        let header = Array(header)
        guard header.count >= 4, header[0..<3].elementsEqual(prefix[0..<3]) else {
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it does not start with a Concord blob header; it was modified, truncated or is not a Concord blob; run `concord doctor`")
        }
        switch header[3] {
        case formatVersion:
            guard header.count == headerByteCount else {
                throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: its header is \(header.count) bytes, not \(headerByteCount); it was truncated or is not a Concord blob; run `concord doctor`")
            }
            return .zero
        case generationFormatVersion:
            let count = header.count >= 5 ? Int(header[4]) : 0
            let length = 5 + count * KeyGenerationID.byteCount
            let ids = header.count == length + 24
                ? stride(from: 5, to: length, by: KeyGenerationID.byteCount).compactMap { KeyGenerationID(bytes: header[$0..<($0 + KeyGenerationID.byteCount)]) }
                : []
            guard let generation = KeyGeneration(ids), generation.ids == ids, !generation.isZero else {
                throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: its header names no valid key generation; it was modified or truncated; run `concord doctor`")
            }
            return generation
        default:
            throw ConcordError(.unsupportedVersion, "remote blob \(name) uses blob-stream format version \(header[3]), which this release cannot read (it reads versions \(formatVersion) and \(generationFormatVersion)): upgrade Concord; if no newer client writes to this store, the blob was damaged; run `concord doctor`")
        }
    }

    /// The most bytes the stream of a blob of `plaintextByteCount` bytes may take, under any
    /// key generation: what a download of it is bounded by.
    public static func maxSealedByteCount(plaintextByteCount: UInt64) -> UInt64 {
        sealedByteCount(plaintextByteCount: plaintextByteCount) + UInt64(maxHeaderByteCount - headerByteCount)
    }

    /// Whether a stream of `size` bytes could be a blob of `plaintextByteCount` bytes sealed
    /// under some key generation (format 1, or format 2 naming 1 to 16 generations): how a
    /// listing's size tells a torn upload from a whole one without knowing which key sealed it.
    public static func isSealedSize(_ size: UInt64, ofPlaintext plaintextByteCount: UInt64) -> Bool {
        let base = sealedByteCount(plaintextByteCount: plaintextByteCount)
        guard size >= base else { return false }
        let extra = size - base
        if extra == 0 { return true }
        let idBytes = UInt64(KeyGenerationID.byteCount)
        return extra > 1 && (extra - 1) % idBytes == 0 && (extra - 1) / idBytes <= UInt64(KeyGeneration.maxCount)
    }
}
