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
/// storage (without the passphrase) can: links, FIFOs, folders, huge files and objects at
/// names outside the layout — and, on a server of our own, answers no honest server gives.
/// ``HostileRemoteCheck`` uses it. ``FolderHostileStorage`` plants in a folder with the file
/// system's own calls (a ``/ConcordRemote/FolderRemote``'s root, or the folder a WebDAV server
/// serves); ``HostileServerStorage`` makes a ``HostileHTTPServer`` answer as a hostile server
/// would; the HTTP tests plant in an S3 bucket with signed requests (ConcordTestServers'
/// `S3Keys`).
///
/// A storage that cannot hold something throws ``HostileStorageNotApplicable`` saying why
/// (an S3 bucket has no links): the check reports that part as not applicable, never as passed.
public protocol HostileStorage: Sendable {
    /// What the check may expect of a remote on this storage.
    var expectations: HostileRemoteCheck.Expectations { get }
    /// A folder outside the remote's root that planted links point into (a storage without
    /// links has none: empty). The check reads everything outside the root before and after,
    /// and reports any byte written or deleted there.
    var outside: String { get }
    /// Empties the area outside the root and fills it with `files` (paths relative to it,
    /// folders made as needed). The default implementation writes them below ``outside``.
    func fillOutside(_ files: [String: [UInt8]]) async throws
    /// Everything outside the root: each file with its bytes, each folder as `path/` with
    /// none. The default implementation reads below ``outside``.
    func outsideContents() async throws -> [String: [UInt8]]
    /// Plants a symbolic link at `path` (below the root, creating folders) to `target`.
    func plantLink(_ path: String, to target: String) async throws
    /// Plants a FIFO (named pipe) at `path`: a reader that opens it blocks.
    func plantFIFO(_ path: String) async throws
    /// Plants an empty folder at `path`.
    func plantFolder(_ path: String) async throws
    /// Plants a file of `size` bytes at `path`, as cheaply as the storage allows (a sparse
    /// file takes no disk space).
    func plantSparseFile(_ path: String, size: UInt64) async throws
    /// Plants an object holding `bytes` at `name` relative to the root, which is no name of
    /// the layout: a layout folder's name with its slash (`heads/`), the name of a layout
    /// folder (`replicas/<id>/deltas`), or one with a `..` segment or a leading slash. The
    /// default implementation throws ``HostileStorageNotApplicable``.
    func plantObject(_ name: String, _ bytes: [UInt8]) async throws
    /// Makes the server answer the requests for `path` (for a listing misbehaviour, the
    /// listings of `path` as a prefix) as `misbehaviour` says, until ``remove(_:)``. Only a
    /// server of our own can; the default implementation throws ``HostileStorageNotApplicable``.
    func play(_ misbehaviour: HostileRemoteCheck.Misbehaviour, at path: String) async throws
    /// Removes whatever is at `path` (a link itself, never its target; a folder with its
    /// content; a misbehaviour), and the layout folders it leaves empty.
    func remove(_ path: String) async throws
    /// The remote's own clean-up of stray temporary files or unfinished uploads, if it has
    /// one (it must delete nothing outside the root either).
    func sweep() async throws
}

/// What a storage cannot hold (an S3 bucket has no links), with why; the check reports the
/// part that needed it as not applicable.
public struct HostileStorageNotApplicable: Error, CustomStringConvertible {
    public let reason: String
    public init(_ reason: String) { self.reason = reason }
    public var description: String { reason }
}

extension HostileStorage {
    public func fillOutside(_ files: [String: [UInt8]]) async throws {
        let manager = FileManager.default
        for name in try manager.contentsOfDirectory(atPath: outside) {
            try manager.removeItem(atPath: outside + "/" + name)
        }
        for (name, bytes) in files {
            let full = outside + "/" + name
            try manager.createDirectory(atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: full))
            // Old enough for any sweep.
            try manager.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000)], ofItemAtPath: full)
        }
    }

    public func outsideContents() async throws -> [String: [UInt8]] {
        var contents: [String: [UInt8]] = [:]
        for path in FileManager.default.subpaths(atPath: outside) ?? [] {
            let full = outside + "/" + path
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: full, isDirectory: &isFolder), !isFolder.boolValue else {
                contents[path + "/"] = []
                continue
            }
            contents[path] = (try? Data(contentsOf: URL(fileURLWithPath: full))).map { [UInt8]($0) } ?? []
        }
        return contents
    }

    public func plantObject(_ name: String, _ bytes: [UInt8]) async throws {
        throw HostileStorageNotApplicable("this storage plants no objects at names outside the layout")
    }

    public func play(_ misbehaviour: HostileRemoteCheck.Misbehaviour, at path: String) async throws {
        throw HostileStorageNotApplicable("only a server of our own answers as told; a real one answers as its storage holds")
    }
}

/// ``HostileStorage`` for a folder: plants with the file system's own calls. For a
/// ``/ConcordRemote/FolderRemote`` the root is the remote's; for a WebDAV server, the folder it
/// serves as the remote's collection.
public final class FolderHostileStorage: HostileStorage {
    /// The remote's root.
    public let root: String
    public let outside: String
    public let expectations: HostileRemoteCheck.Expectations
    private let sweeper: @Sendable () async throws -> Void

    /// Plants below `root`; `outside` must not lie below it. `expectations`: ``HostileRemoteCheck/Expectations/folder``
    /// when the remote reads the folder itself. `sweep`: the remote's sweep of temporary files
    /// with an age that makes every one old.
    public init(
        root: String, outside: String, expectations: HostileRemoteCheck.Expectations = .folder, sweep: @escaping @Sendable () async throws -> Void
    ) {
        self.root = root
        self.outside = outside
        self.expectations = expectations
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

    /// A file at `name`; a name the file system would resolve to another (a trailing slash,
    /// a `..` or `.` segment, repeated or leading slashes) cannot be planted.
    public func plantObject(_ name: String, _ bytes: [UInt8]) throws {
        let segments = name.split(separator: "/", omittingEmptySubsequences: false)
        guard !segments.contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw HostileStorageNotApplicable("a file system resolves \"/\", \".\" and \"..\" in \(name): no file has that name")
        }
        try makeParent(name)
        try Data(bytes).write(to: URL(fileURLWithPath: full(name)))
    }

    public func remove(_ path: String) throws {
        var status = stat()
        if lstat(full(path), &status) == 0, status.st_mode & S_IFMT == S_IFIFO {
            // A reader blocked opening the FIFO (a server's thread) gets its end of file.
            let writer = open(full(path), O_WRONLY | O_NONBLOCK)
            if writer >= 0 { close(writer) }
        }
        try FileManager.default.removeItem(atPath: full(path))
        var folder = (path as NSString).deletingLastPathComponent
        while !folder.isEmpty, (try? FileManager.default.contentsOfDirectory(atPath: full(folder)))?.isEmpty == true {
            try FileManager.default.removeItem(atPath: full(folder))
            folder = (folder as NSString).deletingLastPathComponent
        }
    }

    public func sweep() async throws { try await sweeper() }

    private func full(_ path: String) -> String { root + "/" + path }

    private func makeParent(_ path: String) throws {
        let parent = (full(path) as NSString).deletingLastPathComponent
        try FileManager.default.createDirectory(atPath: parent, withIntermediateDirectories: true)
    }
}
