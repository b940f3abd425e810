import ConcordCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FolderRemote {
    /// What a listing of the folder found: the objects, and the entries with a layout name
    /// that it skipped because they are not what the layout puts there.
    public struct Listing: Sendable, Equatable {
        /// The layout objects (regular files), sorted by path.
        public var objects: [RemoteObject]
        /// Entries bearing a layout object's or folder's name that are something else — a
        /// symbolic link (never followed), a FIFO, a device, a socket, a folder where an
        /// object belongs, a file where a folder belongs — sorted by path. Anyone who can
        /// write the store folder can plant them; `concord doctor` can show them to a person,
        /// who should remove them.
        public var skipped: [Skipped]

        /// One skipped entry: what ``Remote/anomalies(prefix:)`` reports.
        public typealias Skipped = RemoteAnomaly
    }

    /// The layout objects whose path starts with `prefix`, and the entries with layout names
    /// that are not regular files (objects) or real folders (layout folders), which are
    /// skipped: ``list(prefix:)`` returns only the objects.
    public func inspect(prefix: String) throws(ConcordError) -> Listing {
        try RemoteLayout.validatePrefix(prefix)
        return try listObjects(prefix: prefix)
    }

    /// The entries ``inspect(prefix:)`` skipped, as ``Remote/anomalies(prefix:)`` reports them.
    public func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] {
        try inspect(prefix: prefix).skipped
    }

    /// The layout objects below the root whose path starts with `prefix`, sorted by path.
    ///
    /// Starts at the deepest layout folder the prefix lies wholly inside (listing `heads/`
    /// reads one folder) and descends only into layout folders that can hold a match, each
    /// opened relative to its parent without following links. Entries that are not layout
    /// names are skipped without being examined; entries with layout names are examined with
    /// `fstatat(AT_SYMLINK_NOFOLLOW)`, and only regular files are listed.
    func listObjects(prefix: String) throws(ConcordError) -> Listing {
        var start = ""
        for component in prefix.split(separator: "/", omittingEmptySubsequences: false).dropLast() {
            let candidate = start.isEmpty ? String(component) : start + "/" + component
            guard RemoteLayout.isStoreFolder(candidate) else {
                try checkRoot()
                return Listing(objects: [], skipped: [])  // no layout name lies below a foreign folder
            }
            start = candidate
        }
        var objects: [RemoteObject] = []
        var skipped: [Listing.Skipped] = []
        var folders = [start]
        while let folder = folders.popLast() {
            let shown = folder.isEmpty ? "the store folder" : folder + "/"
            let descriptor: Int32
            switch try walk(to: folder, create: false, "list", shown) {
            case .missing:
                continue  // a layout folder not created yet holds nothing; a missing root threw
            case let .blocked(blocked, what, _):
                skipped.append(Listing.Skipped(path: blocked, kind: what))
                continue
            case let .opened(opened):
                descriptor = opened
            }
            defer { POSIX.close(descriptor) }
            let names: [String]
            switch POSIX.entries(of: descriptor) {
            case let .success(found):
                names = found
            case let .failure(error):
                throw ConcordError(.remote, "could not list \(shown) in \(root): \(error.description); \(Self.advice(error))")
            }
            for name in names {
                let child = folder.isEmpty ? name : folder + "/" + name
                let isObject = RemoteLayout.parse(child) != nil
                let isFolder = !isObject && RemoteLayout.isStoreFolder(child)
                guard isObject || isFolder else { continue }
                let asFolder = child + "/"
                if isObject ? !Self.startsWith(child, prefix) : !(Self.startsWith(prefix, asFolder) || Self.startsWith(asFolder, prefix)) {
                    continue
                }
                let info: stat
                switch POSIX.status(at: descriptor, name) {
                case let .success(found):
                    info = found
                case let .failure(error) where error.code == ENOENT:
                    continue  // deleted since the folder was read
                case let .failure(error):
                    throw failure("list", child, error)
                }
                if isObject && POSIX.isRegularFile(info) {
                    objects.append(RemoteObject(path: child, size: UInt64(max(0, info.st_size)), modified: POSIX.modifiedMilliseconds(info)))
                } else if isFolder && POSIX.isFolder(info) {
                    folders.append(child)
                } else {
                    skipped.append(Listing.Skipped(path: child, kind: POSIX.kind(info)))
                }
            }
        }
        return Listing(
            objects: objects.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) },
            skipped: skipped.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        )
    }

    /// Byte-wise prefix test (no Unicode normalization: layout names are ASCII).
    static func startsWith(_ text: String, _ prefix: String) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }
}
