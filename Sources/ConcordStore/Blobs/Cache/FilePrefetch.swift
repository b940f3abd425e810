import ConcordCore
import Foundation
import GRDB

/// What a replica fetches ahead of reading, on demand (README, "Large files and small
/// devices"): the pinned contents, always, and — with a threshold — every content smaller
/// than it. Stored with the file policy; a sync runs it after each pull, and `concord files
/// prefetch` on request.
public struct FilePrefetch: Hashable, Sendable {
    /// Contents of fewer bytes than this are fetched; nil: none by size (only pinned ones).
    public var below: UInt64?

    public init(below: UInt64? = nil) {
        self.below = below
    }
}

/// A content a prefetch wants: not local, pinned or small enough.
package struct PrefetchCandidate: Hashable, Sendable {
    package let hash: ContentHash
    package let size: UInt64
    package let pinned: Bool
}

extension Store {
    /// This replica's prefetch policy (default: pinned contents only).
    public func filePrefetch() throws(ConcordError) -> FilePrefetch {
        try read { db in
            let below = try Int64.fetchOne(db, sql: "SELECT prefetch_below FROM concord_file_policy WHERE singleton = 1")
            return FilePrefetch(below: below.map { UInt64($0) })
        }
    }

    /// Sets the prefetch policy; the file policy and its budget stay as they are.
    ///
    /// - Throws: `invalidOperation` for a threshold past 2^63 − 1 bytes.
    public func setFilePrefetch(_ prefetch: FilePrefetch) throws(ConcordError) {
        if let below = prefetch.below, below > UInt64(Int64.max) {
            throw ConcordError(.invalidOperation, "a prefetch threshold of \(below) bytes is past the largest the store records (2^63 − 1)")
        }
        try writeDatabase { db in
            try db.execute(sql: """
                INSERT INTO concord_file_policy (singleton, on_demand, prefetch_below) VALUES (1, 0, ?)
                ON CONFLICT (singleton) DO UPDATE SET prefetch_below = excluded.prefetch_below
                """, arguments: [prefetch.below.map { Int64($0) }])
        }
    }

    /// What a prefetch fetches now: the pinned contents not local, then the contents of
    /// on-demand fields smaller than `below` (default: the stored threshold) not local,
    /// smallest first — so a run that stops at the budget has fetched the most files it
    /// could. Contents the remote was found to lack are tried again (they may have been
    /// uploaded since).
    package func prefetchCandidates(below: UInt64? = nil) throws(ConcordError) -> [PrefetchCandidate] {
        let stored = try filePrefetch().below
        let threshold = below ?? stored
        let pinned = try pinnedFilesNotLocal()
        var small: [ContentHash: UInt64] = [:]
        if let threshold, threshold > 0 {
            small = try referencedFileSizes(onDemand: true).filter { $0.value < threshold && pinned[$0.key] == nil && !blobs.contains($0.key) }
        }
        let first = pinned.map { PrefetchCandidate(hash: $0.key, size: $0.value, pinned: true) }
        let then = small.map { PrefetchCandidate(hash: $0.key, size: $0.value, pinned: false) }
        return (first + then).sorted { ($0.pinned ? 0 : 1, $0.size, $0.hash) < ($1.pinned ? 0 : 1, $1.size, $1.hash) }
    }

    /// The bytes of local contents (what counts against the budget).
    package func bytesCached() throws(ConcordError) -> UInt64 {
        try reconcileLocalFilesIfPending()
        return try read { db in UInt64(max(0, try Int64.fetchOne(db, sql: "SELECT coalesce(sum(size), 0) FROM concord_local_files") ?? 0)) }
    }
}

extension Schema {
    /// Migration "v12-file-prefetch-and-scopes": the prefetch threshold beside the file
    /// policy, and the policies of declared collections and fields that differ from the
    /// store's (`field` empty: the whole collection).
    static func migrateToFilePrefetchAndScopes(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE concord_file_policy ADD COLUMN prefetch_below INTEGER;
            CREATE TABLE concord_file_policy_scopes (
                collection TEXT NOT NULL, field TEXT NOT NULL, on_demand INTEGER NOT NULL,
                PRIMARY KEY (collection, field)
            ) STRICT, WITHOUT ROWID;
            """)
    }
}
