import ConcordCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A ``Remote`` over a plain folder: a Dropbox, iCloud Drive or Syncthing folder, an NFS
/// mount, a USB drive. The folder is the store's root; objects are files at their layout
/// paths (``RemoteLayout``) below it.
///
/// Guarantees, and why:
/// - **A put replaces the whole file or nothing.** Bytes go to a temporary file in the
///   destination folder (`.concord-tmp-<random>`, a name ``RemoteLayout/parse(_:)``
///   rejects), which is fsynced, renamed over the destination, and the folder fsynced.
///   A crash leaves the old object or the new one, never a mix, and at worst a stray
///   temporary file that listings ignore (``sweepTemporaryFiles(olderThan:now:)`` removes
///   it). A sync client copying the folder can still deliver a torn file to *another*
///   device; readers authenticate everything they read.
/// - **Listings show only layout names** and descend only into layout folders
///   (``RemoteLayout/isStoreFolder(_:)``): conflict copies, temporaries, `.DS_Store`,
///   `.stversions` and a user's own files are never listed or read.
/// - **A missing root is an error, never an empty store.** If the folder is gone — an
///   unmounted drive, a sync client that has not created it yet — every call throws
///   ``ConcordCore/ConcordError/Code/remote`` rather than answering "nothing there", so a replica never
///   mistakes an absent folder for an empty store and starts a new one. Operations create
///   the layout's folders below the root but never the root itself.
/// - **Nothing planted in the folder makes it leave the root, hang or read without bound.**
///   Anyone who can write the folder can plant links, FIFOs, devices and huge sparse files
///   at the store's names, so:
///   - it never follows a symbolic link below the root: each folder is opened relative to
///     its parent with `openat(…, O_DIRECTORY|O_NOFOLLOW)`, and files are created, renamed,
///     examined and deleted relative to their open folder (`openat`, `renameat`,
///     `unlinkat`, `fstatat(AT_SYMLINK_NOFOLLOW)`). A put or delete through a folder that is
///     a link throws ``ConcordCore/ConcordError/Code/remote``; nothing outside the root is written, read
///     or deleted, and ``sweepTemporaryFiles(olderThan:now:)`` removes only regular files
///     inside real layout folders. The root itself may be a link: a person chose it.
///   - it opens only regular files, never blocking (`lstat`, then
///     `O_RDONLY|O_NONBLOCK|O_NOFOLLOW`, then `fstat`): a folder, link, FIFO, device or
///     socket at an object's name, or a file this user may not read, is
///     ``ConcordCore/ConcordError/Code/unreadableObject``, naming it, so a caller skips that object
///     and syncs the rest;
///   - a put renames its temporary file over whatever stands at the name: a planted link,
///     FIFO, device or file is replaced, never followed or opened; a planted folder cannot
///     be, and the put throws ``ConcordCore/ConcordError/Code/unreadableObject`` naming it;
///   - ``get(_:limit:)`` checks the size first and reads at most `limit + 1` bytes, throwing
///     ``/ConcordCore/ConcordError/Code/limitExceeded`` above the limit; a put above its
///     kind's limit (``RemoteLayout/maxObjectSize(for:)``) is refused before writing;
///   - listings list only regular files and enter only real folders; the entries they skip
///     for that reason are reported by ``inspect(prefix:)``.
/// - **Streams use constant memory**: 64 KiB chunks (``chunkSize``).
/// - Every failure is a ``ConcordCore/ConcordError``: ``ConcordCore/ConcordError/Code/invalidRemotePath`` for a
///   path outside the layout (nothing touched), ``ConcordCore/ConcordError/Code/unreadableObject`` and
///   ``/ConcordCore/ConcordError/Code/limitExceeded`` for one bad object,
///   ``ConcordCore/ConcordError/Code/remote`` for the file system, with the object, the folder and what
///   to do in the message.
///
/// Calls do blocking file I/O on the calling task; they are short except for streams.
public struct FolderRemote: Remote {
    /// The store's root folder, absolute, without a trailing slash.
    public let root: String
    /// The clock that stamps each object's modification time when it is written; nil: the
    /// file system's own. The file sweep measures object age by these times, so tests that run
    /// on virtual time give the folder the same clock.
    public let clock: (any PhysicalClock)?

    /// The size of the chunks ``getStream(_:write:)`` delivers: 64 KiB.
    public static let chunkSize = 64 * 1024

    /// The prefix of every temporary file a put writes; ``RemoteLayout/parse(_:)`` rejects
    /// such names, so a put interrupted by a crash is never listed.
    public static let temporaryPrefix = ".concord-tmp-"

    /// A remote over the folder at `root` (absolute, or relative to the current folder).
    ///
    /// Throws ``ConcordCore/ConcordError/Code/remote`` if `root` is not an existing folder — unless
    /// `createIfMissing` is true, in which case it and its parents are created. Create the
    /// root only when a person has just chosen it (setting up a new store); on later launches
    /// a missing root means an unmounted drive or an unsynced folder, and must be reported.
    /// `clock`: see ``clock``.
    public init(root: String, createIfMissing: Bool = false, clock: (any PhysicalClock)? = nil) throws(ConcordError) {
        self.clock = clock
        guard !root.isEmpty, !root.utf8.contains(0) else {
            throw ConcordError(.invalidRemotePath, "the store folder path is empty or contains a NUL byte; choose a folder")
        }
        var absolute = root
        if !absolute.hasPrefix("/") {
            guard let current = POSIX.currentFolder() else {
                throw ConcordError(.remote, "could not resolve the relative store folder \(root): the current folder is unknown; pass an absolute path")
            }
            absolute = current + "/" + absolute
        }
        while absolute.count > 1 && absolute.hasSuffix("/") { absolute.removeLast() }
        self.root = absolute
        if createIfMissing { try createRoot() }
        try checkRoot()
    }

    // MARK: Remote

    /// Writes `bytes` to a temporary file beside `path`, fsyncs it, renames it over `path`
    /// and fsyncs the folder, creating the layout's folders as needed.
    public func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let limit = RemoteLayout.maxObjectSize(forPath: path)
        guard UInt64(bytes.count) <= limit else {
            throw ConcordError(
                .limitExceeded,
                "could not put remote object \(path): it is \(bytes.count) bytes, over the limit of \(limit) bytes for its kind that every reader "
                    + "applies (RemoteLayout.maxObjectSize); nothing was written — this is a bug in the writer, which must keep objects within the limit"
            )
        }
        let writer = try ObjectWriter(remote: self, path: path)
        do throws(ConcordError) {
            try writer.append(bytes)
            try writer.commit()
        } catch {
            writer.discard()
            throw error
        }
    }

    /// The file's bytes, or nil if there is no file at `path` (and the root exists): within
    /// the limit of its kind (``RemoteLayout/maxObjectSize(forPath:)``), as the HTTP remotes
    /// read it — a larger file throws ``/ConcordCore/ConcordError/Code/limitExceeded``
    /// without being read.
    public func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        try await get(path, limit: RemoteLayout.maxObjectSize(forPath: path))
    }

    /// The file's bytes, or nil if there is no file at `path`; throws
    /// ``/ConcordCore/ConcordError/Code/limitExceeded`` without reading if the file is larger
    /// than `limit` bytes, and after reading at most `limit + 1` bytes if it grew meanwhile.
    public func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        try RemoteLayout.validateObjectPath(path)
        var out: [UInt8] = []
        let found = try read(path, limit: limit) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in out.append(contentsOf: chunk) }
        return found ? out : nil
    }

    /// The layout objects whose path starts with `prefix`, sorted by path, with their sizes
    /// and modification times; everything else in the folder is skipped.
    public func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        try RemoteLayout.validatePrefix(prefix)
        return try listObjects(prefix: prefix).objects
    }

    /// Removes the file; a missing file is fine, a missing root is not. The folder is not
    /// fsynced: a delete undone by a crash only leaves an object the store deletes again.
    ///
    /// Removes the entry itself, relative to its folder opened without following links: a
    /// link at `path` is removed, its target never touched; a folder on the way that is a
    /// link is refused (``ConcordCore/ConcordError/Code/remote``), nothing deleted.
    public func delete(_ path: String) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let (folder, name) = Self.split(path)
        let descriptor: Int32
        switch try walk(to: folder, create: false, "delete", path) {
        case .missing, .blocked(_, _, link: false): return  // nothing lies there; a missing store folder threw
        case let .blocked(folder, what, link: true): throw blockedFolder("delete", path, folder: folder, what: what)
        case let .opened(opened): descriptor = opened
        }
        defer { POSIX.close(descriptor) }
        guard let error = POSIX.unlink(at: descriptor, name) else { return }
        if error.code == ENOENT { return }
        throw failure("delete", path, error)
    }

    /// Like ``put(_:_:)``, writing each chunk as `read` yields it; if `read` throws, the
    /// temporary file is removed, the previous object stays, and the error is rethrown.
    public func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let writer = try ObjectWriter(remote: self, path: path)
        do throws(ConcordError) {
            while true {
                let chunk = try read()
                if chunk.isEmpty { break }
                try writer.append(chunk)
            }
            try writer.commit()
        } catch {
            writer.discard()
            throw error
        }
    }

    /// Reads the file in ``chunkSize`` chunks; false if there is no file at `path`.
    public func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try RemoteLayout.validateObjectPath(path)
        return try read(path, limit: nil) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in try write(Array(chunk)) }
    }

    /// ``getStream(_:write:)`` of a file of at most `limit` bytes: a larger one throws
    /// ``/ConcordCore/ConcordError/Code/limitExceeded`` before anything is read.
    public func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try RemoteLayout.validateObjectPath(path)
        return try read(path, limit: limit) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in try write(Array(chunk)) }
    }

    // MARK: Maintenance

    /// Deletes temporary files (``temporaryPrefix``) in the layout's folders last modified
    /// before `now - age` (milliseconds since the epoch), and returns how many it deleted.
    ///
    /// Such files are left by puts interrupted by a crash or a full disk; sync clients copy
    /// them to every device. Choose an `age` far longer than any upload (an hour or more):
    /// a younger temporary file may be another device's upload in progress. Time is a
    /// parameter, so callers and tests decide what "now" is.
    ///
    /// It walks only the layout's folders, each opened without following links, and
    /// deletes only regular files, each by name relative to its folder: a link named like a
    /// temporary file is not deleted and its target never touched.
    @discardableResult
    public func sweepTemporaryFiles(olderThan age: UInt64, now: UInt64) throws(ConcordError) -> Int {
        var deleted = 0
        var folders = [""]
        while let folder = folders.popLast() {
            // Each folder is opened from the root when its turn comes (one descriptor open at
            // a time, however many folders wait), so one swapped for a link since it was
            // listed is refused then.
            guard case let .opened(descriptor) = try walk(to: folder, create: false, "sweep", "temporary files") else { continue }
            defer { POSIX.close(descriptor) }
            guard case let .success(names) = POSIX.entries(of: descriptor) else { continue }
            for name in names {
                let child = folder.isEmpty ? name : folder + "/" + name
                if name.hasPrefix(Self.temporaryPrefix) {
                    guard case let .success(info) = POSIX.status(at: descriptor, name), POSIX.isRegularFile(info) else { continue }
                    if now > age, POSIX.modifiedMilliseconds(info) < now - age, POSIX.unlink(at: descriptor, name) == nil { deleted += 1 }
                } else if RemoteLayout.isStoreFolder(child) {
                    folders.append(child)
                }
            }
        }
        return deleted
    }

    // MARK: Internals

    /// Throws unless the root is an existing folder.
    func checkRoot() throws(ConcordError) {
        switch POSIX.status(root) {
        case let .success(info) where POSIX.isFolder(info):
            return
        case .success:
            throw ConcordError(.remote, "the store folder \(root) is a file, not a folder; choose the store's folder")
        case let .failure(error) where error.code == ENOENT || error.code == ENOTDIR:
            throw ConcordError(
                .remote,
                "the store folder \(root) does not exist: check that its drive is mounted and its sync client is running; "
                    + "Concord does not re-create a missing store folder, so that it never starts a new store in an unmounted place"
            )
        case let .failure(error):
            throw ConcordError(.remote, "could not open the store folder \(root): \(error.description); \(Self.advice(error))")
        }
    }

    private func createRoot() throws(ConcordError) {
        var path = ""
        for component in root.split(separator: "/") {
            path += "/" + component
            if case let .failure(error) = POSIX.makeFolder(path) {
                throw ConcordError(.remote, "could not create the store folder \(path): \(error.description); \(Self.advice(error))")
            }
        }
    }

    /// Streams the file at `path` to `chunk` in ``chunkSize`` pieces; false if it is missing.
    ///
    /// Opens each folder below the root without following links, then the file itself only
    /// if it is a regular file (``POSIX/openRegularFile(at:_:)``: never a link, FIFO, device
    /// or folder, never blocking); anything else, or a file this user may not read, is
    /// ``ConcordCore/ConcordError/Code/unreadableObject``. With a `limit`, a file larger than it throws
    /// ``/ConcordCore/ConcordError/Code/limitExceeded`` before anything is read, and no more
    /// than `limit + 1` bytes are ever read (a file may grow while it is read).
    private func read(_ path: String, limit: UInt64?, chunk: (UnsafeRawBufferPointer) throws(ConcordError) -> Void) throws(ConcordError) -> Bool {
        let (folderPath, name) = Self.split(path)
        let folder: Int32
        switch try walk(to: folderPath, create: false, "read", path) {
        case .missing, .blocked(_, _, link: false): return false  // nothing lies below a missing folder, or a file
        case let .blocked(blocked, what, link: true): throw unreadable(path, "\(blocked) is \(what), not a folder, and Concord never follows links")
        case let .opened(opened): folder = opened
        }
        defer { POSIX.close(folder) }
        let descriptor: Int32
        let size: UInt64
        switch POSIX.openRegularFile(at: folder, name) {
        case let .success((opened, info)):
            descriptor = opened
            size = UInt64(max(0, info.st_size))
        case let .failure(error) where error.code == ENOENT:
            return false
        case .failure(.notRegular):
            throw unreadable(path, "it is \(Self.describe(at: folder, name)), not a file")
        case let .failure(error) where error.code == EACCES || error.code == EPERM:
            throw unreadable(path, "this user may not read it (\(error.description))")
        case let .failure(error):
            throw failure("read", path, error)
        }
        defer { POSIX.close(descriptor) }
        if let limit, size > limit { throw ConcordError.objectTooLarge(path, size: size, limit: limit) }
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Self.chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: UInt64 = 0
        while true {
            // With a limit, ask for no more than limit + 1 bytes in all.
            var wanted = Self.chunkSize
            if let limit {
                let remaining = limit - min(limit, total)
                if remaining < UInt64(wanted) { wanted = Int(remaining) + 1 }
            }
            switch POSIX.read(descriptor, into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<wanted])) {
            case let .failure(error):
                throw failure("read", path, error)
            case .success(0):
                return true
            case let .success(count):
                total += UInt64(count)
                if let limit, total > limit { throw ConcordError.objectTooLarge(path, size: limit, atLeast: true, limit: limit) }
                try chunk(UnsafeRawBufferPointer(rebasing: buffer[0..<count]))
            }
        }
    }

    /// A file-system failure on object `path`, with what to do about it.
    func failure(_ action: String, _ path: String, _ error: POSIX.Errno) -> ConcordError {
        // A full disk or quota is the folder's `remoteFull`, as a full server's is.
        ConcordError(error.code == ENOSPC || error.code == EDQUOT ? .remoteFull : .remote, "could not \(action) remote object \(path) in the store folder \(root): \(error.description); \(Self.advice(error))")
    }

    static func advice(_ error: POSIX.Errno) -> String {
        switch error.code {
        case ENOSPC, EDQUOT: "the disk or quota is full: free space, then sync again"
        case EACCES, EPERM: "permission denied: let this user read and write the store folder, then sync again"
        case EROFS: "the store folder is on a read-only disk: make it writable or choose another folder"
        case ENOTDIR, EISDIR: "a file or folder that Concord did not write is in the way: move it out of the store folder, then sync again"
        case ENOENT: "the folder vanished while Concord used it: check that its drive is mounted, then sync again"
        case EIO: "the disk reported an I/O error: check the disk, then sync again"
        case EMFILE, ENFILE: "too many files are open: close other programs, then sync again"
        default: "check the store folder, then sync again"
        }
    }
}
