import ConcordCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FolderRemote {
    /// The layout objects below the root whose path starts with `prefix`, sorted by path.
    ///
    /// Starts at the deepest layout folder the prefix lies wholly inside (listing `heads/`
    /// reads one folder) and descends only into layout folders that can hold a match.
    /// Entries that are not layout names are skipped without being examined.
    func listObjects(prefix: String) throws(ConcordError) -> [RemoteObject] {
        var start = ""
        for component in prefix.split(separator: "/", omittingEmptySubsequences: false).dropLast() {
            let candidate = start.isEmpty ? String(component) : start + "/" + component
            guard RemoteLayout.isStoreFolder(candidate) else {
                try checkRoot()
                return []  // no layout name lies below a foreign folder
            }
            start = candidate
        }
        var objects: [RemoteObject] = []
        var folders = [start]
        while let folder = folders.popLast() {
            let names: [String]
            switch POSIX.entries(location(folder)) {
            case let .success(found):
                names = found
            case let .failure(error) where error.code == ENOENT || error.code == ENOTDIR:
                try checkRoot()  // a layout folder not created yet holds nothing; a missing root is an error
                continue
            case let .failure(error):
                throw ConcordError(.remote, "could not list \(folder.isEmpty ? "the store folder" : folder + "/") in \(root): \(error.description); \(Self.advice(error))")
            }
            for name in names {
                let child = folder.isEmpty ? name : folder + "/" + name
                if RemoteLayout.parse(child) != nil {
                    guard Self.startsWith(child, prefix) else { continue }
                    switch POSIX.status(location(child)) {
                    case let .success(info) where POSIX.isRegularFile(info):
                        objects.append(RemoteObject(path: child, size: UInt64(info.st_size), modified: POSIX.modifiedMilliseconds(info)))
                    case .success:
                        continue  // a folder with an object's name is not an object
                    case let .failure(error) where error.code == ENOENT:
                        continue  // deleted since the folder was read
                    case let .failure(error):
                        throw failure("list", child, error)
                    }
                } else if RemoteLayout.isStoreFolder(child) {
                    let asFolder = child + "/"
                    if Self.startsWith(prefix, asFolder) || Self.startsWith(asFolder, prefix) { folders.append(child) }
                }
            }
        }
        return objects.sorted { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
    }

    /// Byte-wise prefix test (no Unicode normalization: layout names are ASCII).
    static func startsWith(_ text: String, _ prefix: String) -> Bool {
        text.utf8.starts(with: prefix.utf8)
    }
}
