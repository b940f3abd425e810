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
    ///
    /// The destination's folder is opened once, from the root, one component at a time and
    /// never through a link (``FolderRemote/walk(to:create:_:_:)``); the temporary file is
    /// created, renamed and removed relative to that open folder. So a folder replaced by a
    /// link to somewhere else is refused, and nothing is ever written outside the root.
    final class ObjectWriter {
        let remote: FolderRemote
        let path: String
        let name: String
        let temporary: String
        /// The destination's folder, open.
        private let folder: Int32
        private var descriptor: Int32?

        /// Creates the layout's folders below the root as needed, then the temporary file.
        init(remote: FolderRemote, path: String) throws(ConcordError) {
            self.remote = remote
            self.path = path
            let (folderPath, name) = FolderRemote.split(path)
            self.name = name
            switch try remote.walk(to: folderPath, create: true, "write", path) {
            case let .opened(opened):
                folder = opened
            case .missing:
                throw remote.failure("write", path, POSIX.Errno(ENOENT))  // not reached: the walk creates
            case let .blocked(blocked, what, _):
                throw remote.blockedFolder("write", path, folder: blocked, what: what)
            }
            var attempt = 0
            while true {
                let candidate = FolderRemote.temporaryPrefix + RemoteLayout.hex(UInt64.random(in: 0...UInt64.max))
                switch POSIX.createFile(at: folder, candidate) {
                case let .success(opened):
                    temporary = candidate
                    descriptor = opened
                    return
                case let .failure(error) where error.code == EEXIST && attempt < 8:
                    attempt += 1
                case let .failure(error):
                    POSIX.close(folder)
                    throw remote.failure("write", path, error)
                }
            }
        }

        deinit {
            discard()
            POSIX.close(folder)
        }

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
            if let error = POSIX.rename(in: folder, temporary, name) {
                _ = POSIX.unlink(at: folder, temporary)
                // A folder planted at the object's name: that one object cannot be put.
                if error.code == EISDIR || error.code == ENOTEMPTY || error.code == EEXIST {
                    throw ConcordError(
                        .unreadableObject,
                        "could not put remote object \(path) in the store folder \(remote.root): a folder stands at its name; Concord did not make it "
                            + "— remove it from the store folder, and the next sync (or `concord doctor --repair`) puts the object there")
                }
                throw remote.failure("write", path, error)
            }
            if let error = POSIX.syncFolder(descriptor: folder) { throw remote.failure("write", path, error) }
        }

        /// Removes the temporary file, if it is still there.
        func discard() {
            guard let descriptor else { return }
            POSIX.close(descriptor)
            self.descriptor = nil
            _ = POSIX.unlink(at: folder, temporary)
        }
    }
}
