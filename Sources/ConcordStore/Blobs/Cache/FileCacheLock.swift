import ConcordCore
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The advisory lock (`flock`) that keeps file arrivals and evictions apart, across the
/// processes that open one store: `<blob directory>/cache.lock`. An arrival (a download's
/// rename and its row) holds it shared; an eviction holds it exclusive from the
/// transaction that drops the rows until the files are unlinked. An eviction takes it only
/// inside its write transaction and never waits for it (an arrival may hold it while it waits
/// for the database), so the two never wait for each other in a cycle. The kernel releases
/// it when its process dies.
final class FileCacheLock: Sendable {
    private let descriptor: Int32

    init(_ blobs: BlobStore) throws(ConcordError) {
        descriptor = open(blobs.directory + "/cache.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw BlobStore.ioError("open \(blobs.directory)/cache.lock") }
    }

    /// Waits for the lock.
    func acquire(exclusive: Bool) throws(ConcordError) {
        while flock(descriptor, exclusive ? LOCK_EX : LOCK_SH) != 0 {
            guard errno == EINTR else { throw BlobStore.ioError("lock the blob directory") }
        }
    }

    /// Takes the exclusive lock if no one holds it; returns whether it did.
    func tryExclusive() -> Bool {
        flock(descriptor, LOCK_EX | LOCK_NB) == 0
    }

    func release() {
        close(descriptor)
    }
}
