import ConcordCore
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

extension BlobStore {
    /// How long a temporary file in `tmp/` must have gone unwritten before a sweep deletes
    /// it: an hour. A download or an attach in progress writes its file at least once a
    /// minute (an HTTP read stalls 60 s at most), so only an interrupted one is that old.
    public static let temporaryFileAge: UInt64 = 3_600_000

    /// Deletes the temporary files in `tmp/` — encrypted downloads and incoming files that a
    /// crash, a kill or a failed check cut off — last modified more than `age` ms before
    /// `now` (ms since the epoch), and returns how many it deleted. Run when the store opens
    /// and by `concord compact`: without it, each interrupted download of a large file
    /// would keep its bytes on disk for ever.
    @discardableResult
    public func sweepTemporaryFiles(olderThan age: UInt64 = temporaryFileAge, now: UInt64 = UInt64(Date().timeIntervalSince1970 * 1000)) -> Int {
        let folder = directory + "/tmp"
        guard let listing = opendir(folder) else { return 0 }
        defer { closedir(listing) }
        var deleted = 0
        while let entry = readdir(listing) {
            let name = Self.name(entry)
            guard name != ".", name != ".." else { continue }
            let path = folder + "/" + name
            var info = stat()
            guard lstat(path, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            #if canImport(Darwin)
            let time = info.st_mtimespec
            #else
            let time = info.st_mtim
            #endif
            let modified = UInt64(max(0, time.tv_sec)) * 1000 + UInt64(max(0, time.tv_nsec)) / 1_000_000
            guard modified + age <= now, unlink(path) == 0 else { continue }
            deleted += 1
        }
        return deleted
    }
}
