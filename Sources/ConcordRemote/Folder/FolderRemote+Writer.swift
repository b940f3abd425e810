import ConcordCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension FolderRemote {
    /// One put in progress: a temporary file in the destination's folder that becomes the
    /// object on ``commit()`` (fsync, rename, fsync the folder) or vanishes on ``discard()``
    /// — or, as a backstop, when the writer is released uncommitted.
    final class ObjectWriter {
        let remote: FolderRemote
        let path: String
        let temporary: String
        private var descriptor: Int32?

        /// Creates the layout's folders below the root as needed, then the temporary file.
        init(remote: FolderRemote, path: String) throws(ConcordError) {
            self.remote = remote
            self.path = path
            let components = path.split(separator: "/")
            var folder = ""
            for component in components.dropLast() {
                let parent = folder
                folder = folder.isEmpty ? String(component) : folder + "/" + component
                switch POSIX.makeFolder(remote.location(folder)) {
                case .success(false):
                    break
                case .success(true):
                    // The new folder's entry must survive a crash too.
                    if let error = POSIX.syncFolder(remote.location(parent)) { throw remote.failure("write", path, error) }
                case let .failure(error):
                    if error.code == ENOENT { try remote.checkRoot() }
                    throw remote.failure("write", path, error)
                }
            }
            var attempt = 0
            while true {
                let name = FolderRemote.temporaryPrefix + RemoteLayout.hex(UInt64.random(in: 0...UInt64.max))
                let candidate = folder.isEmpty ? name : folder + "/" + name
                switch POSIX.open(remote.location(candidate), O_WRONLY | O_CREAT | O_EXCL) {
                case let .success(opened):
                    temporary = remote.location(candidate)
                    descriptor = opened
                    return
                case let .failure(error) where error.code == EEXIST && attempt < 8:
                    attempt += 1
                case let .failure(error):
                    if error.code == ENOENT { try remote.checkRoot() }
                    throw remote.failure("write", path, error)
                }
            }
        }

        deinit { discard() }

        func append(_ bytes: [UInt8]) throws(ConcordError) {
            guard let descriptor, !bytes.isEmpty else { return }
            if let error = bytes.withUnsafeBytes({ POSIX.writeAll(descriptor, $0) }) { throw remote.failure("write", path, error) }
        }

        /// Makes the written bytes the object at `path`, durably.
        func commit() throws(ConcordError) {
            guard let descriptor else { return }
            if let clock = remote.clock, let error = POSIX.setModified(descriptor, milliseconds: clock.millisecondsSinceEpoch()) {
                throw remote.failure("write", path, error)
            }
            if let error = POSIX.sync(descriptor) { throw remote.failure("write", path, error) }
            POSIX.close(descriptor)
            self.descriptor = nil
            if let error = POSIX.rename(temporary, remote.location(path)) {
                _ = POSIX.unlink(temporary)
                throw remote.failure("write", path, error)
            }
            let folder = path.split(separator: "/").dropLast().joined(separator: "/")
            if let error = POSIX.syncFolder(remote.location(folder)) { throw remote.failure("write", path, error) }
        }

        /// Removes the temporary file, if it is still there.
        func discard() {
            guard let descriptor else { return }
            POSIX.close(descriptor)
            self.descriptor = nil
            _ = POSIX.unlink(temporary)
        }
    }
}
