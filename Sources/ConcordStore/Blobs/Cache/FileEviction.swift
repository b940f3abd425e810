import ConcordCore
import Foundation
import GRDB
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// What an eviction did.
public struct FileEviction: Hashable, Sendable {
    /// The contents removed from the blob directory, least recently read first.
    public var evicted: [ContentHash] = []
    public var bytesFreed: UInt64 = 0
    /// The bytes of local contents left.
    public var bytesLeft: UInt64 = 0
}

extension Store {
    /// Evicts the least recently read evictable contents until the local contents take at
    /// most `budget` bytes (or nothing evictable is left). Never evicted: a pinned content,
    /// one a fork or a retained history version references, one this replica wrote while it
    /// has anything not pushed, and those in `keeping` (contents being read).
    ///
    /// An eviction drops the contents' rows (and sets their declared rows not local) in one
    /// transaction, then unlinks the files, holding the cache lock exclusive throughout: a
    /// reader that opened a file keeps reading it whole (an unlinked file lives while open);
    /// one that comes after finds it not local and fetches it again. Nothing is ever torn.
    @discardableResult
    public func evictFiles(toFit budget: UInt64, keeping: Set<ContentHash> = []) throws(ConcordError) -> FileEviction {
        try reconcileLocalFilesIfPending()
        // An arrival holding the lock shared is short (one rename and one row): wait for it.
        for attempt in 0..<200 {
            if let result = try evictOnce(toFit: budget, keeping: keeping) { return result }
            usleep(useconds_t(min(50, 1 + attempt) * 1000))
        }
        throw ConcordError(.storage, "could not evict files: another process kept \(blobs.directory)/cache.lock for seconds; retry")
    }

    /// Evicts down to the budget of the file policy, if it has one.
    @discardableResult
    public func evictToBudget(keeping: Set<ContentHash> = []) throws(ConcordError) -> FileEviction? {
        let policy = try filePolicy()
        guard let budget = policy.budget, try read({ db in try FileModes(db).anyOnDemand }) else { return nil }
        return try evictFiles(toFit: budget, keeping: keeping)
    }

    /// One try; nil when the lock was held by an arrival.
    private func evictOnce(toFit budget: UInt64, keeping: Set<ContentHash>) throws(ConcordError) -> FileEviction? {
        let lock = try FileCacheLock(blobs)
        defer { lock.release() }
        var result = FileEviction()
        let chosen: [ContentHash]? = try writeDatabase { db in
            guard lock.tryExclusive() else { return nil }
            var total: UInt64 = 0
            var candidates: [(hash: ContentHash, size: UInt64)] = []
            let kept = try Self.keptFiles(db, unpushed: try Self.hasUnpushed(db))
            for row in try Row.fetchAll(db, sql: "SELECT hash, size FROM concord_local_files ORDER BY last_read, hash") {
                guard let hash = ContentHash(bytes: [UInt8](row[0] as Data)) else { continue }
                let size = UInt64(max(0, row[1] as Int64))
                total += size
                if !kept.contains(hash), !keeping.contains(hash) { candidates.append((hash, size)) }
            }
            var chosen: [ContentHash] = []
            for candidate in candidates where total > budget {
                try db.execute(sql: "DELETE FROM concord_local_files WHERE hash = ?", arguments: [Data(candidate.hash.bytes)])
                try Self.setDeclaredLocal(db, candidate.hash, false)
                total -= candidate.size
                result.bytesFreed += candidate.size
                chosen.append(candidate.hash)
            }
            result.bytesLeft = total
            return chosen
        }
        guard let chosen else { return nil }
        // Rows first (committed), then the files: a crash between leaves files without rows.
        for hash in chosen { try blobs.delete(hash) }
        // A record pivoted between the commit and the unlink saw the file still there.
        if !chosen.isEmpty {
            try writeDatabase { db in for hash in chosen { try Self.setDeclaredLocal(db, hash, false) } }
        }
        result.evicted = chosen
        return result
    }

    /// Whether this replica has changes not yet on the remote: in the outbox, or sealed and
    /// not pushed.
    static func hasUnpushed(_ db: Database) throws -> Bool {
        if try !SlotIO.outboxIsEmpty(db) { return true }
        let sealed = UInt64(bitPattern: try Int64.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'sealed_seq'") ?? 0)
        let pushed = UInt64(bitPattern: try Int64.fetchOne(db, sql: "SELECT pushed_seq FROM concord_sync_state") ?? 0)
        return sealed > pushed
    }
}
