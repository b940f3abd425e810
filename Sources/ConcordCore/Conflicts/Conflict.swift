/// A situation the merge resolved deterministically but an app may want to show a person
/// (docs/ARCHITECTURE.md §2, rules 4 and 6).
public struct Conflict: Hashable, Sendable, CustomStringConvertible {
    /// What kind of conflict this is. Extensible: later releases may add kinds.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Concurrent writes of different content to one file field; every version is kept.
        public static let fileFork = Kind("fileFork")
        /// A delete concurrent with an update: the record stayed visible with all its fields.
        public static let deleteUpdate = Kind("deleteUpdate")
    }

    /// One version of a forked file field.
    public struct FileVersion: Hashable, Sendable {
        public let file: FileRef
        public let stamp: Stamp
        public init(file: FileRef, stamp: Stamp) {
            self.file = file
            self.stamp = stamp
        }
    }

    public let kind: Kind
    public let ref: RecordRef
    /// The forked field, for ``Kind/fileFork``.
    public let field: String?
    /// The versions of a fork, one per distinct content (the greatest stamp of each),
    /// sorted by content hash.
    public let versions: [FileVersion]

    public init(kind: Kind, ref: RecordRef, field: String? = nil, versions: [FileVersion] = []) {
        self.kind = kind
        self.ref = ref
        self.field = field
        self.versions = versions
    }

    public var description: String {
        switch kind {
        case .fileFork: "fileFork \(ref) \(field ?? "") (\(versions.count) versions)"
        default: "\(kind) \(ref)"
        }
    }

    /// The canonical order: by record, then kind (`deleteUpdate` before `fileFork`), then field.
    public static func canonicalOrder(_ lhs: Conflict, _ rhs: Conflict) -> Bool {
        if lhs.ref != rhs.ref { return lhs.ref < rhs.ref }
        if lhs.kind != rhs.kind { return lhs.kind.name.utf8.lexicographicallyPrecedes(rhs.kind.name.utf8) }
        return (lhs.field ?? "").utf8.lexicographicallyPrecedes((rhs.field ?? "").utf8)
    }
}

extension Record {
    /// The open conflicts of this record.
    public func conflicts(ref: RecordRef) -> [Conflict] {
        guard isVisible else { return [] }
        var result: [Conflict] = []
        if hasDeleteUpdateConflict { result.append(Conflict(kind: .deleteUpdate, ref: ref)) }
        for (key, slot) in slots {
            guard case let .field(name) = key, slot.entries.count > 1,
                  let kind = slot.entries.last.flatMap({ FieldKind($0.payload) }), kind.keepsConcurrentVersions else { continue }
            var newest: [ContentHash: Conflict.FileVersion] = [:]
            for entry in slot.entries {
                guard case let .file(file) = entry.payload else { continue }
                newest[file.hash] = Conflict.FileVersion(file: file, stamp: entry.dot)
            }
            if newest.count > 1 {
                let versions = newest.values.sorted { $0.file.hash < $1.file.hash }
                result.append(Conflict(kind: .fileFork, ref: ref, field: name, versions: versions))
            }
        }
        return result.sorted(by: Conflict.canonicalOrder)
    }
}

extension StoreState {
    /// Every open conflict, in canonical order.
    public var conflicts: [Conflict] {
        sortedRecords.flatMap { $0.record.conflicts(ref: $0.ref) }
    }
}
