#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Thin wrappers over the POSIX calls ``FolderRemote`` needs: they retry `EINTR` and
/// return the `errno` of a failure instead of leaving it in a global.
enum POSIX {
    /// Opens `path` with `flags` (and `O_CLOEXEC`); the descriptor or the errno.
    static func open(_ path: String, _ flags: Int32, mode: mode_t = 0o644) -> Result<Int32, Errno> {
        while true {
            let descriptor = systemOpen(path, flags | O_CLOEXEC, mode)
            if descriptor >= 0 { return .success(descriptor) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// Reads up to `buffer.count` bytes; 0 at the end of the file.
    static func read(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Result<Int, Errno> {
        while true {
            let count = systemRead(descriptor, buffer.baseAddress, buffer.count)
            if count >= 0 { return .success(count) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// Writes all of `bytes`.
    static func writeAll(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Errno? {
        var offset = 0
        while offset < bytes.count {
            let written = systemWrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if written > 0 {
                offset += written
            } else if written < 0 && errno == EINTR {
                continue
            } else {
                return Errno(written < 0 ? errno : EIO)
            }
        }
        return nil
    }

    /// Makes a file's content durable. On Darwin `fsync` only reaches the drive's cache, so
    /// `F_FULLFSYNC` is asked first.
    static func sync(_ descriptor: Int32) -> Errno? {
        #if canImport(Darwin)
        if fcntl(descriptor, F_FULLFSYNC) == 0 { return nil }
        #endif
        while fsync(descriptor) != 0 {
            if errno != EINTR { return Errno(errno) }
        }
        return nil
    }

    /// `stat` of `path`, following symbolic links: only for the root, which a person chose.
    static func status(_ path: String) -> Result<stat, Errno> {
        var info = stat()
        if stat(path, &info) == 0 { return .success(info) }
        return .failure(Errno(errno))
    }

    /// `fstat` of an open descriptor.
    static func status(_ descriptor: Int32) -> Result<stat, Errno> {
        var info = stat()
        if fstat(descriptor, &info) == 0 { return .success(info) }
        return .failure(Errno(errno))
    }

    static func isRegularFile(_ info: stat) -> Bool { (info.st_mode & S_IFMT) == S_IFREG }
    static func isFolder(_ info: stat) -> Bool { (info.st_mode & S_IFMT) == S_IFDIR }

    /// The modification time in milliseconds since the epoch.
    static func modifiedMilliseconds(_ info: stat) -> UInt64 {
        #if canImport(Darwin)
        let time = info.st_mtimespec
        #else
        let time = info.st_mtim
        #endif
        guard time.tv_sec >= 0 else { return 0 }
        return UInt64(time.tv_sec) * 1000 + UInt64(time.tv_nsec / 1_000_000)
    }

    /// Sets the file's access and modification times to `milliseconds` since the epoch.
    static func setModified(_ descriptor: Int32, milliseconds: UInt64) -> Errno? {
        let time = timespec(tv_sec: Int(milliseconds / 1000), tv_nsec: Int(milliseconds % 1000) * 1_000_000)
        let times = [time, time]
        return times.withUnsafeBufferPointer { futimens(descriptor, $0.baseAddress) } == 0 ? nil : Errno(errno)
    }

    // MARK: Relative to an open folder, never following a link

    /// Opens the folder `name` inside the open folder `parent` without following a link:
    /// `openat(parent, name, O_DIRECTORY|O_NOFOLLOW)`. A link, a file or anything else that
    /// is not a folder fails (`ELOOP` or `ENOTDIR`; see ``kind(at:_:)`` to tell them apart).
    static func openFolder(at parent: Int32, _ name: String) -> Result<Int32, Errno> {
        while true {
            let descriptor = systemOpenAt(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0)
            if descriptor >= 0 { return .success(descriptor) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// Opens the regular file `name` inside the open folder `parent` for reading, without
    /// following a link and without blocking: `lstat` first (a FIFO, a device, a socket, a
    /// folder or a link is never opened — opening a device can have effects), then
    /// `O_RDONLY|O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC`, then `fstat` again in case the entry was
    /// swapped in between. Anything that is not a regular file fails with ``Errno/notRegular``.
    static func openRegularFile(at parent: Int32, _ name: String) -> Result<(descriptor: Int32, info: stat), Errno> {
        switch status(at: parent, name) {
        case let .failure(error): return .failure(error)
        case let .success(info) where !isRegularFile(info): return .failure(.notRegular)
        case .success: break
        }
        var descriptor: Int32
        while true {
            descriptor = systemOpenAt(parent, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC, 0)
            if descriptor >= 0 { break }
            if errno != EINTR { return .failure(Errno(errno == ELOOP ? Errno.notRegular.code : errno)) }
        }
        switch status(descriptor) {
        case let .success(info) where isRegularFile(info):
            return .success((descriptor, info))
        case .success:
            close(descriptor)
            return .failure(.notRegular)
        case let .failure(error):
            close(descriptor)
            return .failure(error)
        }
    }

    /// Creates the file `name` inside the open folder `parent` for writing; fails if any
    /// entry has that name (`O_CREAT|O_EXCL|O_NOFOLLOW`), so it never writes through a link.
    static func createFile(at parent: Int32, _ name: String, mode: mode_t = 0o644) -> Result<Int32, Errno> {
        while true {
            let descriptor = systemOpenAt(parent, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode)
            if descriptor >= 0 { return .success(descriptor) }
            if errno != EINTR { return .failure(Errno(errno)) }
        }
    }

    /// `fstatat(parent, name, AT_SYMLINK_NOFOLLOW)`: a link is described, not followed.
    static func status(at parent: Int32, _ name: String) -> Result<stat, Errno> {
        var info = stat()
        if fstatat(parent, name, &info, AT_SYMLINK_NOFOLLOW) == 0 { return .success(info) }
        return .failure(Errno(errno))
    }

    /// Creates the folder `name` inside the open folder `parent`: true if it was created,
    /// false if a folder (not a link to one) was already there; ``Errno/notFolder`` if
    /// something else is.
    static func makeFolder(at parent: Int32, _ name: String) -> Result<Bool, Errno> {
        if mkdirat(parent, name, 0o755) == 0 { return .success(true) }
        let code = errno
        guard code == EEXIST else { return .failure(Errno(code)) }
        switch status(at: parent, name) {
        case let .success(info) where isFolder(info): return .success(false)
        case .success: return .failure(.notFolder)
        case let .failure(error): return .failure(error)
        }
    }

    /// The names in the open folder `folder`, without `.` and `..`; `folder` stays open.
    static func entries(of folder: Int32) -> Result<[String], Errno> {
        let copy = dup(folder)
        guard copy >= 0 else { return .failure(Errno(errno)) }
        guard let stream = fdopendir(copy) else {
            let error = Errno(errno)
            _ = systemClose(copy)
            return .failure(error)
        }
        defer { closedir(stream) }
        rewinddir(stream)
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(stream) else {
                if errno != 0 { return .failure(Errno(errno)) }
                return .success(names)
            }
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: MemoryLayout.size(ofValue: entry.pointee.d_name)) {
                    String(cString: $0)
                }
            }
            if name != "." && name != ".." { names.append(name) }
        }
    }

    /// Removes the entry `name` (a file or a link itself, never a link's target) from the
    /// open folder `parent`.
    static func unlink(at parent: Int32, _ name: String) -> Errno? {
        unlinkat(parent, name, 0) == 0 ? nil : Errno(errno)
    }

    /// Renames `from` to `to`, both inside the open folder `folder`; an entry at `to` (a
    /// file, or a link itself) is replaced, never followed.
    static func rename(in folder: Int32, _ from: String, _ to: String) -> Errno? {
        renameat(folder, from, folder, to) == 0 ? nil : Errno(errno)
    }

    /// Makes an open folder's entries (a rename, a new file or folder) durable. File systems
    /// that cannot sync a folder (`EINVAL`, `ENOTSUP`) are taken as having nothing to do.
    static func syncFolder(descriptor: Int32) -> Errno? {
        if let error = sync(descriptor), error.code != EINVAL, error.code != ENOTSUP { return error }
        return nil
    }

    /// What the entry is, in words, for messages: "a symbolic link", "a FIFO", …
    static func kind(_ info: stat) -> String {
        switch info.st_mode & S_IFMT {
        case S_IFREG: "a file"
        case S_IFDIR: "a folder"
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO (named pipe)"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFSOCK: "a socket"
        default: "a special file"
        }
    }

    /// Creates folder `path`: true if it was created, false if it already existed.
    static func makeFolder(_ path: String) -> Result<Bool, Errno> {
        if mkdir(path, 0o755) == 0 { return .success(true) }
        let code = errno
        if code == EEXIST {
            if case let .success(info) = status(path), isFolder(info) { return .success(false) }
            return .failure(Errno(ENOTDIR))
        }
        return .failure(Errno(code))
    }

    static func close(_ descriptor: Int32) {
        _ = systemClose(descriptor)
    }

    /// The current working folder, for making a relative root absolute.
    static func currentFolder() -> String? {
        guard let pointer = getcwd(nil, 0) else { return nil }
        defer { free(pointer) }
        return String(cString: pointer)
    }

    /// An `errno` value with its name and its text.
    struct Errno: Error, Equatable {
        let code: Int32
        init(_ code: Int32) { self.code = code }

        /// The entry is not a regular file (a folder, a link, a FIFO, a device, a socket).
        static let notRegular = Errno(-1)
        /// The entry is not a folder, or is a link to one.
        static let notFolder = Errno(ENOTDIR)

        var description: String {
            if self == .notRegular { return "not a regular file" }
            let names: [Int32: String] = [
                ENOENT: "ENOENT", EACCES: "EACCES", EPERM: "EPERM", ENOSPC: "ENOSPC", EDQUOT: "EDQUOT",
                EROFS: "EROFS", EIO: "EIO", ENOTDIR: "ENOTDIR", EISDIR: "EISDIR", ENAMETOOLONG: "ENAMETOOLONG",
                EEXIST: "EEXIST", EMFILE: "EMFILE", ENFILE: "ENFILE", EBUSY: "EBUSY", ELOOP: "ELOOP",
            ]
            let text = String(cString: strerror(code))
            return names[code].map { "\(text) (\($0))" } ?? "\(text) (errno \(code))"
        }
    }
}

// The C functions under names that the wrappers above do not shadow.
private func systemOpenAt(_ parent: Int32, _ name: String, _ flags: Int32, _ mode: mode_t) -> Int32 { openat(parent, name, flags, mode) }
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(descriptor, buffer, count) }
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, buffer, count) }
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
