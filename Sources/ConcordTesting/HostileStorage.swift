import ConcordRemote
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A way to plant things in a remote's storage behind its back, as anyone who can write the
/// storage (without the passphrase) can: links, FIFOs, folders and huge sparse files at
/// layout paths. ``HostileRemoteCheck`` uses it; ``FolderHostileStorage`` is the one for a
/// ``ConcordRemote/FolderRemote``.
public protocol HostileStorage: Sendable {
    /// A folder outside the remote's root that planted links point into. The check reads
    /// everything below it before and after, and reports any byte written or deleted.
    var outside: String { get }
    /// Plants a symbolic link at `path` (below the root, creating folders) to `target`.
    func plantLink(_ path: String, to target: String) throws
    /// Plants a FIFO (named pipe) at `path`: a reader that opens it blocks.
    func plantFIFO(_ path: String) throws
    /// Plants an empty folder at `path`.
    func plantFolder(_ path: String) throws
    /// Plants a file of `size` bytes that takes no disk space (a sparse file) at `path`.
    func plantSparseFile(_ path: String, size: UInt64) throws
    /// Removes whatever is at `path` (a link itself, never its target; a folder with its
    /// content), and the layout folders it leaves empty.
    func remove(_ path: String) throws
    /// The remote's own clean-up of stray temporary files, if it has one (it must delete
    /// nothing outside the root either).
    func sweep() throws
}

/// ``HostileStorage`` for a folder remote: plants with the file system's own calls.
public final class FolderHostileStorage: HostileStorage {
    /// The remote's root.
    public let root: String
    public let outside: String
    private let sweeper: @Sendable () throws -> Void

    /// Plants below `root`; `outside` must not lie below it. `sweep`: the remote's sweep of
    /// temporary files with an age that makes every one old.
    public init(root: String, outside: String, sweep: @escaping @Sendable () throws -> Void) {
        self.root = root
        self.outside = outside
        self.sweeper = sweep
    }

    public func plantLink(_ path: String, to target: String) throws {
        try makeParent(path)
        try FileManager.default.createSymbolicLink(atPath: full(path), withDestinationPath: target)
    }

    public func plantFIFO(_ path: String) throws {
        try makeParent(path)
        guard mkfifo(full(path), 0o644) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    public func plantFolder(_ path: String) throws {
        try FileManager.default.createDirectory(atPath: full(path), withIntermediateDirectories: true)
    }

    public func plantSparseFile(_ path: String, size: UInt64) throws {
        try makeParent(path)
        let descriptor = open(full(path), O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        guard ftruncate(descriptor, off_t(size)) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }

    public func remove(_ path: String) throws {
        try FileManager.default.removeItem(atPath: full(path))
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty, (try? FileManager.default.contentsOfDirectory(atPath: full(folder)))?.isEmpty == true {
            try FileManager.default.removeItem(atPath: full(folder))
            folder = (folder as NSString).deletingLastPathComponent
        }
    }

    public func sweep() throws { try sweeper() }

    private func full(_ path: String) -> String { root + "/" + path }

    private func makeParent(_ path: String) throws {
        let parent = (full(path) as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
    }
}
