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

    /// Makes a folder's entries (a rename, a new file or folder) durable. File systems
    /// that cannot sync a folder (`EINVAL`, `ENOTSUP`) are taken as having nothing to do.
    static func syncFolder(_ path: String) -> Errno? {
        switch open(path, O_RDONLY | O_DIRECTORY) {
        case let .failure(error): return error
        case let .success(descriptor):
            defer { close(descriptor) }
            if let error = sync(descriptor), error.code != EINVAL, error.code != ENOTSUP { return error }
            return nil
        }
    }

    /// `stat` of `path`, following symbolic links.
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

    /// The names in folder `path`, without `.` and `..`.
    static func entries(_ path: String) -> Result<[String], Errno> {
        guard let folder = opendir(path) else { return .failure(Errno(errno)) }
        defer { closedir(folder) }
        var names: [String] = []
        while true {
            errno = 0
            guard let entry = readdir(folder) else {
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

    static func rename(_ from: String, _ to: String) -> Errno? {
        systemRename(from, to) == 0 ? nil : Errno(errno)
    }

    static func unlink(_ path: String) -> Errno? {
        systemUnlink(path) == 0 ? nil : Errno(errno)
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

        var description: String {
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
private func systemOpen(_ path: String, _ flags: Int32, _ mode: mode_t) -> Int32 { open(path, flags, mode) }
private func systemRead(_ descriptor: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int { read(descriptor, buffer, count) }
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, buffer, count) }
private func systemRename(_ from: String, _ to: String) -> Int32 { rename(from, to) }
private func systemUnlink(_ path: String) -> Int32 { unlink(path) }
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
