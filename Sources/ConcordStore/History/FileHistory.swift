import ConcordCore
import Foundation
import GRDB

/// A superseded version of a file field, kept for the retention window (docs/ARCHITECTURE.md §3).
public struct FileVersionRecord: Hashable, Sendable {
    public let file: FileRef
    /// The stamp of the write that set it.
    public let stamp: Stamp
    /// When this replica saw it superseded, in milliseconds since the epoch.
    public let supersededAt: UInt64
}

enum FileHistory {
    /// Keeps every file version that `old` has and `new` lacks.
    static func record(_ db: Database, _ ref: RecordRef, _ field: String, superseded old: [Entry], by new: [Entry], at now: UInt64) throws {
        let kept = Set(new.map(\.dot))
        let insert = try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO concord_history (collection, id, field, hash, file_size, media_type, hlc, replica, superseded_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for entry in old where !kept.contains(entry.dot) {
            guard case let .file(file) = entry.payload else { continue }
            try insert.execute(arguments: [
                ref.collection, ref.id, field, Data(file.hash.bytes), Int64(bitPattern: file.size), file.mediaType,
                Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica), Rows.millis(now),
            ])
        }
    }
}

extension Store {
    /// The superseded versions of a file field still in the retention window, newest first.
    public func versions(_ ref: RecordRef, _ field: String) throws(ConcordError) -> [FileVersionRecord] {
        let cutoff = configuration.clock.millisecondsSinceEpoch().subtractingReportingOverflow(configuration.historyRetention)
        return try read { db in
            try Row.fetchAll(db, sql: """
                SELECT hash, file_size, media_type, hlc, replica, superseded_at FROM concord_history
                WHERE collection = ? AND id = ? AND field = ? AND superseded_at >= ?
                ORDER BY hlc DESC, replica DESC
                """, arguments: [ref.collection, ref.id, field, cutoff.overflow ? 0 : Rows.millis(cutoff.partialValue)]).map { row in
                guard let hash = ContentHash(bytes: [UInt8](row["hash"] as Data)) else {
                    throw ConcordError(.corrupt, "a history row holds a hash that is not 32 bytes")
                }
                return FileVersionRecord(
                    file: FileRef(hash: hash, size: UInt64(bitPattern: row["file_size"]), mediaType: row["media_type"]),
                    stamp: try Rows.stamp(row), supersededAt: UInt64(bitPattern: row["superseded_at"]))
            }
        }
    }

    /// Restores a superseded file version: an ordinary write of that content.
    public func restore(_ ref: RecordRef, _ field: String, hash: ContentHash) throws(ConcordError) {
        guard let version = try versions(ref, field).first(where: { $0.file.hash == hash }) else {
            throw ConcordError(.notFound, "\(ref) \(field) has no retained version \(hash.hex); `concord versions` lists them")
        }
        try write { tx throws(ConcordError) in try tx.setFile(ref, field, version.file) }
    }

    /// Forgets history older than the retention window, then deletes blobs that no field
    /// entry and no retained version references. Returns the blobs deleted.
    @discardableResult
    public func sweepFiles() throws(ConcordError) -> [ContentHash] {
        try sweepFiles(afterScan: {})
    }

    /// ``sweepFiles()``, running `afterScan` between reading the references and deleting
    /// (a seam for the test that races it against `attachFile` in another process).
    ///
    /// The references are read, and the files deleted, inside one write transaction: a
    /// write — `attachFile` adds its file inside its own write transaction — cannot slip in
    /// between, in this process or another, so a file attached meanwhile is never taken
    /// for garbage.
    package func sweepFiles(afterScan: () -> Void) throws(ConcordError) -> [ContentHash] {
        let cutoff = historyCutoff()
        return try writeDatabase { db in
            try db.execute(sql: "DELETE FROM concord_history WHERE superseded_at < ?", arguments: [Rows.millis(cutoff)])
            let referenced = try Self.referencedFiles(db, since: cutoff)
            afterScan()
            var deleted: [ContentHash] = []
            for hash in try blobs.all() where !referenced.contains(hash) {
                try blobs.delete(hash)
                deleted.append(hash)
            }
            try Self.forgetLocal(db, deleted)
            return deleted
        }
    }

    /// The files the state (every field entry, fork versions included) and the versions
    /// retained within the history window reference.
    package func referencedFiles() throws(ConcordError) -> Set<ContentHash> {
        let cutoff = historyCutoff()
        return try read { db in try Self.referencedFiles(db, since: cutoff) }
    }

    private func historyCutoff() -> UInt64 {
        let now = configuration.clock.millisecondsSinceEpoch()
        return now > configuration.historyRetention ? now - configuration.historyRetention : 0
    }

    private static func referencedFiles(_ db: Database, since cutoff: UInt64) throws -> Set<ContentHash> {
        let hashes = try Data.fetchAll(db, sql: """
            SELECT value FROM concord_fields WHERE kind = \(FieldKind.file.stored)
            UNION SELECT value FROM concord_field_versions WHERE kind = \(FieldKind.file.stored)
            UNION SELECT hash FROM concord_history WHERE superseded_at >= ?
            """, arguments: [Rows.millis(cutoff)])
        return Set(hashes.compactMap { ContentHash(bytes: [UInt8]($0)) })
    }
}
