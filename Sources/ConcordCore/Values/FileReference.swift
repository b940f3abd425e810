/// A file an entry refers to, with the stamp of the write that attached it.
public struct FileReference: Hashable, Sendable {
    public let stamp: Stamp
    public let file: FileRef

    public init(stamp: Stamp, file: FileRef) {
        self.stamp = stamp
        self.file = file
    }

    /// The replica whose write attached the file.
    public var writer: ReplicaID { stamp.replica }
}

extension Sequence<Entry> {
    /// The files these entries refer to, one per file entry, in order.
    public var fileReferences: [FileReference] {
        compactMap { entry in
            if case let .file(file) = entry.payload { FileReference(stamp: entry.dot, file: file) } else { nil }
        }
    }
}

extension Delta {
    /// The files the delta's entries refer to, one per file entry, in the delta's order.
    public var fileReferences: [FileReference] {
        records.lazy.flatMap { $0.slots.lazy.flatMap(\.entries) }.fileReferences
    }
}

extension StoreState {
    /// The files the state's entries refer to, one per file entry (records in no set order).
    public var fileReferences: [FileReference] {
        records.values.lazy.flatMap { $0.slots.values.lazy.flatMap(\.entries) }.fileReferences
    }
}
