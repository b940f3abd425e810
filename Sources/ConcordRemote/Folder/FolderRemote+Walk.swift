import ConcordCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FolderRemote {
    /// Where a walk from the root to a layout folder ended.
    enum Walk {
        /// The folder, open (the caller closes the descriptor).
        case opened(Int32)
        /// A component does not exist (and was not to be created): nothing lies below.
        case missing
        /// A component is not a folder Concord can enter: a symbolic link (never followed),
        /// a file, a FIFO, … `folder` is its path below the root, `what` says what it is;
        /// `link`: it is a symbolic link (so something may lie "below" it, outside the root),
        /// otherwise nothing can lie below it.
        case blocked(folder: String, what: String, link: Bool)
    }

    /// Opens the layout folder `folder` ("" is the root) one component at a time, each with
    /// `openat(parent, name, O_DIRECTORY|O_NOFOLLOW)` relative to the one before, so no link
    /// below the root is ever followed and nothing outside the root is ever reached. The
    /// root itself is opened by its path (a person chose it; it may be a link).
    ///
    /// `create`: make missing components (fsyncing each new folder's parent). Throws
    /// ``ConcordCore/ConcordError/Code/remote`` if the root is missing or the file system fails; `action`
    /// and `object` go into that message.
    func walk(to folder: String, create: Bool, _ action: String, _ object: String) throws(ConcordError) -> Walk {
        var descriptor: Int32
        switch POSIX.open(root, O_RDONLY | O_DIRECTORY) {
        case let .success(opened):
            descriptor = opened
        case let .failure(error):
            try checkRoot()
            throw failure(action, object, error)
        }
        var reached = ""
        for component in folder.split(separator: "/") {
            let name = String(component)
            reached = reached.isEmpty ? name : reached + "/" + name
            if create {
                switch POSIX.makeFolder(at: descriptor, name) {
                case .success(false):
                    break
                case .success(true):
                    // The new folder's entry must survive a crash too.
                    if let error = POSIX.syncFolder(descriptor: descriptor) {
                        POSIX.close(descriptor)
                        throw failure(action, object, error)
                    }
                case .failure(.notFolder):
                    let blocked = Self.blocked(at: descriptor, name, reached)
                    POSIX.close(descriptor)
                    return blocked
                case let .failure(error):
                    POSIX.close(descriptor)
                    if error.code == ENOENT { try checkRoot() }
                    throw failure(action, object, error)
                }
            }
            switch POSIX.openFolder(at: descriptor, name) {
            case let .success(next):
                POSIX.close(descriptor)
                descriptor = next
            case let .failure(error) where error.code == ENOENT:
                POSIX.close(descriptor)
                return .missing
            case let .failure(error) where error.code == ELOOP || error.code == ENOTDIR:
                let blocked = Self.blocked(at: descriptor, name, reached)
                POSIX.close(descriptor)
                return blocked
            case let .failure(error):
                POSIX.close(descriptor)
                throw failure(action, object, error)
            }
        }
        return .opened(descriptor)
    }

    /// The ``Walk/blocked(folder:what:link:)`` of the entry `name` in `parent`, at `path`.
    static func blocked(at parent: Int32, _ name: String, _ path: String) -> Walk {
        switch POSIX.status(at: parent, name) {
        case let .success(info): .blocked(folder: path, what: POSIX.kind(info), link: info.st_mode & S_IFMT == S_IFLNK)
        case let .failure(error): .blocked(folder: path, what: "unreadable (\(error.description))", link: false)
        }
    }

    /// What the entry `name` in the open folder `parent` is, in words ("a symbolic link").
    static func describe(at parent: Int32, _ name: String) -> String {
        switch POSIX.status(at: parent, name) {
        case let .success(info): POSIX.kind(info)
        case let .failure(error): "unreadable (\(error.description))"
        }
    }

    /// `path` split into its folder ("" for the root) and its last component.
    static func split(_ path: String) -> (folder: String, name: String) {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return ("", path) }
        return (String(path[..<slash]), String(path[path.index(after: slash)...]))
    }

    /// The error of a write or delete that found `folder` (on the way to `path`) blocked.
    func blockedFolder(_ action: String, _ path: String, folder: String, what: String) -> ConcordError {
        ConcordError(
            .remote,
            "could not \(action) remote object \(path) in the store folder \(root): \(folder) is \(what), not a folder Concord wrote; "
                + "Concord never follows links or writes outside the store folder — move \(folder) out of the store folder, then sync again"
        )
    }

    /// The ``ConcordCore/ConcordError/Code/unreadableObject`` error of a read of `path`.
    func unreadable(_ path: String, _ why: String) -> ConcordError {
        let advice = path == RemoteLayout.manifestPath
            ? "Concord did not write it and cannot open the store without its concord.json — remove it from the store folder and put "
                + "the store's concord.json back (another device's copy of the folder has it)"
            : "Concord did not write it; this object is unusable, nothing else is affected — remove it from the store folder (or run `concord doctor`)"
        return ConcordError(.unreadableObject, "remote object \(path) in the store folder \(root) cannot be read: \(why); \(advice)")
    }
}
