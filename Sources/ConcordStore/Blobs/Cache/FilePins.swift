import ConcordCore
import Foundation
import GRDB

/// What an app wants kept on this device: every file of a collection, of one record, or
/// one field of one record. A pinned content is never evicted, and a sync fetches pinned
/// contents that are not local (README, "Large files and small devices").
public struct FilePin: Hashable, Sendable, Comparable {
    public let collection: String
    /// nil: every record of the collection.
    public let id: String?
    /// nil: every file field of the record (or collection).
    public let field: String?

    /// A pin of a collection, a record (`id`) or one of its fields (`id` and `field`).
    /// - Throws: `invalidOperation` for a field without a record.
    public init(_ collection: String, id: String? = nil, field: String? = nil) throws(ConcordError) {
        if field != nil, id == nil {
            throw ConcordError(.invalidOperation, "a pin of a field names its record too: collection, id, field")
        }
        self.collection = collection
        self.id = id
        self.field = field
    }

    var scope: Int64 { field != nil ? 2 : id != nil ? 1 : 0 }

    public static func < (a: FilePin, b: FilePin) -> Bool {
        (a.collection, a.id ?? "", a.field ?? "") < (b.collection, b.id ?? "", b.field ?? "")
    }
}

extension Store {
    /// Pins `pin`: the contents it covers are kept (and fetched by the next sync).
    public func pin(_ pin: FilePin) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "INSERT OR IGNORE INTO concord_file_pins (collection, scope, id, field) VALUES (?, ?, ?, ?)",
                           arguments: [pin.collection, pin.scope, pin.id ?? "", pin.field ?? ""])
        }
    }

    /// Removes `pin` (exactly as it was given); returns whether it was there. Its contents
    /// become evictable unless another pin covers them.
    @discardableResult
    public func unpin(_ pin: FilePin) throws(ConcordError) -> Bool {
        try writeDatabase { db in
            try db.execute(sql: "DELETE FROM concord_file_pins WHERE collection = ? AND scope = ? AND id = ? AND field = ?",
                           arguments: [pin.collection, pin.scope, pin.id ?? "", pin.field ?? ""])
            return db.changesCount > 0
        }
    }

    /// Every pin, sorted.
    public func pins() throws(ConcordError) -> [FilePin] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT collection, scope, id, field FROM concord_file_pins").map { row throws(ConcordError) in
                let scope: Int64 = row["scope"]
                return try FilePin(row["collection"], id: scope >= 1 ? row["id"] : nil, field: scope == 2 ? row["field"] : nil)
            }.sorted()
        }
    }

    /// The pinned file values (current and forked), with their sizes.
    static func pinnedFiles(_ db: Database) throws -> [ContentHash: UInt64] {
        var files: [ContentHash: UInt64] = [:]
        for table in ["concord_fields", "concord_field_versions"] {
            for row in try Row.fetchAll(db, sql: """
                SELECT f.value, f.file_size FROM \(table) f JOIN concord_file_pins p ON p.collection = f.collection
                    AND (p.scope = 0 OR (p.id = f.id AND (p.scope = 1 OR p.field = f.field)))
                WHERE f.kind = \(FieldKind.file.stored)
                """) {
                guard let data = row[0] as Data?, let hash = ContentHash(bytes: [UInt8](data)) else { continue }
                files[hash] = UInt64(max(0, row[1] as Int64? ?? 0))
            }
        }
        return files
    }

    /// The contents that must stay while local: pinned ones, those of eager fields while
    /// others are on demand (``FilePolicyScope``), those a fork or a retained
    /// history version references (this copy may be the only one), and — while this replica
    /// has anything not pushed — those it wrote itself (the remote may not hold them yet).
    static func keptFiles(_ db: Database, unpushed: Bool) throws -> Set<ContentHash> {
        var kept = Set(try pinnedFiles(db).keys).union(try eagerFiles(db))
        for data in try Data.fetchAll(db, sql: """
            SELECT value FROM concord_field_versions WHERE kind = \(FieldKind.file.stored)
            UNION SELECT f.value FROM concord_fields f WHERE f.kind = \(FieldKind.file.stored) AND f.versions > 1
            UNION SELECT hash FROM concord_history
            """) {
            if let hash = ContentHash(bytes: [UInt8](data)) { kept.insert(hash) }
        }
        if unpushed {
            for data in try Data.fetchAll(db, sql: "SELECT hash FROM concord_local_files WHERE on_remote = 0") {
                if let hash = ContentHash(bytes: [UInt8](data)) { kept.insert(hash) }
            }
        }
        return kept
    }
}
