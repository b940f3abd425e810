import ConcordCore

extension WriteTransaction {
    // MARK: Files

    /// Sets one file field to content already in the blob directory (rule 6). The content
    /// must be local — a write references only files this replica holds, so a push never
    /// lacks one (on demand, fetch it first: `SyncEngine.localFile(_:)`).
    public func setFile(_ ref: RecordRef, _ field: String, _ file: FileRef) throws(ConcordError) {
        let lock = try FileCacheLock(store.blobs)
        defer { lock.release() }
        // Shared: an eviction that committed before this write cannot unlink it under us.
        try lock.acquire(exclusive: false)
        guard store.blobs.contains(file.hash) else {
            throw ConcordError(.missingBlob, "file \(file.hash.hex) is not in the store's blob directory; attach it first (or, on demand, fetch it)")
        }
        try run { try store.noteLocal(db, file.hash, size: file.size, onRemote: false) }
        try put(ref, [field: .file(file)])
    }

    /// Stores the file at `path` in the blob directory and sets the field to it.
    @discardableResult
    public func attachFile(_ ref: RecordRef, _ field: String, path: String, mediaType: String? = nil) throws(ConcordError) -> FileRef {
        let lock = try FileCacheLock(store.blobs)
        defer { lock.release() }
        try lock.acquire(exclusive: false)
        let file = try store.blobs.add(contentsOf: path, mediaType: mediaType)
        try setFile(ref, field, file)
        return file
    }

    /// Stores `bytes` in the blob directory and sets the field to them.
    @discardableResult
    public func attachFile(_ ref: RecordRef, _ field: String, bytes: [UInt8], mediaType: String? = nil) throws(ConcordError) -> FileRef {
        let lock = try FileCacheLock(store.blobs)
        defer { lock.release() }
        try lock.acquire(exclusive: false)
        let file = try store.blobs.add(bytes: bytes, mediaType: mediaType)
        try setFile(ref, field, file)
        return file
    }

    /// Streams a file's content from `read` (which fills the buffer and returns how many
    /// bytes it wrote, 0 at the end) into the blob directory, in constant memory, and sets
    /// the field to it.
    @discardableResult
    public func attachFile(
        _ ref: RecordRef, _ field: String, mediaType: String? = nil,
        read: (UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int
    ) throws(ConcordError) -> FileRef {
        let lock = try FileCacheLock(store.blobs)
        defer { lock.release() }
        try lock.acquire(exclusive: false)
        let file = try store.blobs.add(mediaType: mediaType, expected: nil, read: read)
        try setFile(ref, field, file)
        return file
    }

    /// Resolves a file fork by keeping the version with content `hash` (rule 6): a write
    /// that observed every version, so it supersedes them all.
    public func keepVersion(_ ref: RecordRef, _ field: String, hash: ContentHash) throws(ConcordError) {
        let entries = try run {
            try flushRegisters()
            return try SlotIO.entries(db, ref, .field(field))
        }
        guard case let .file(file)? = entries.last(where: {
            if case let .file(candidate) = $0.payload { candidate.hash == hash } else { false }
        })?.payload else {
            throw ConcordError(.notFound, "\(ref) has no version of \(field) with content \(hash.hex); `concord conflicts` lists the versions")
        }
        try setFile(ref, field, file)
    }
}
