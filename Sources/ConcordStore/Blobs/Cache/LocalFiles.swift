import ConcordCore
import Foundation
import GRDB

/// Which file contents this replica holds, kept in `concord_local_files` beside the blob
/// directory (docs/ARCHITECTURE.md §3, files on demand).
///
/// The rule: a row means its file is in the blob directory. A file arrives first, then its
/// row (``installFile(_:onRemote:_:)``); a row goes first, then its file (eviction). A crash
/// in between leaves a file without a row — reported not local while it is, never the
/// reverse — and the next read of it, or ``reconcileLocalFiles()``, puts the row back.
/// Arrivals and evictions are kept apart across processes by an advisory lock on the blob
/// directory (``FileCacheLock``), so an eviction never unlinks a file whose arrival another
/// process is recording.
///
/// Each arrival and departure also sets the declared tables' `concord_local__<column>` of the
/// records that reference the content, in the same transaction as the row.
extension Store {
    /// Records that content `hash` is in the blob directory, after `add` put it there: `add`
    /// runs under the shared cache lock, and the row and the declared tables change in one
    /// transaction after it. `onRemote`: the content came from the remote (so the remote is
    /// known to hold it), not from a local write.
    package func installFile<T>(_ hash: ContentHash, onRemote: Bool, _ add: () throws(ConcordError) -> T) throws(ConcordError) -> T {
        let lock = try FileCacheLock(blobs)
        defer { lock.release() }
        try lock.acquire(exclusive: false)
        let value = try add()
        try writeDatabase { db in
            try noteLocal(db, hash, size: blobs.size(of: hash) ?? 0, onRemote: onRemote)
            try db.execute(sql: "DELETE FROM concord_unavailable_files WHERE hash = ?", arguments: [Data(hash.bytes)])
        }
        return value
    }

    /// Inserts (or refreshes) the row of local content `hash` and marks the declared rows
    /// that reference it local. Its last read is now for a new row.
    func noteLocal(_ db: Database, _ hash: ContentHash, size: UInt64, onRemote: Bool) throws {
        let now = Int64(clamping: configuration.clock.millisecondsSinceEpoch())
        try db.cachedStatement(sql: """
            INSERT INTO concord_local_files (hash, size, last_read, on_remote) VALUES (?, ?, ?, ?)
            ON CONFLICT (hash) DO UPDATE SET size = excluded.size, on_remote = max(on_remote, excluded.on_remote)
            """).execute(arguments: [Data(hash.bytes), Int64(clamping: size), now, onRemote ? 1 : 0])
        try Self.setDeclaredLocal(db, hash, true)
    }

    /// Sets `concord_local__<column>` of every declared row whose file column holds `hash`.
    static func setDeclaredLocal(_ db: Database, _ hash: ContentHash, _ local: Bool) throws {
        for declaration in try DeclaredTables.all(db).values {
            for field in declaration.fields {
                guard case .file = field.type else { continue }
                let column = CollectionDeclaration.column(field.name)
                try db.execute(
                    sql: "UPDATE \(Rows.quoted(declaration.tableName)) SET \(Rows.quoted(CollectionDeclaration.localColumn(column))) = ? WHERE \(Rows.quoted(column)) = ?",
                    arguments: [local ? 1 : 0, Data(hash.bytes)])
            }
        }
    }

    /// Whether content `hash` is local, as the declared tables' pivot reads it: the blob
    /// directory itself, through `concord_blob_local`.
    static func isLocal(_ db: Database, _ hash: ContentHash) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT concord_blob_local(?)"), arguments: [Data(hash.bytes)]) ?? false
    }

    /// Notes that content `hash` was just read (least recently read contents are evicted
    /// first); a file found in the blob directory without its row gets one.
    package func noteRead(_ hash: ContentHash) throws(ConcordError) {
        let now = Int64(clamping: configuration.clock.millisecondsSinceEpoch())
        try writeDatabase { db in
            try db.execute(sql: "UPDATE concord_local_files SET last_read = ? WHERE hash = ?", arguments: [now, Data(hash.bytes)])
            if db.changesCount == 0, let size = blobs.size(of: hash) {
                try noteLocal(db, hash, size: size, onRemote: try Self.writtenElsewhere(db, hash))
            }
        }
    }

    /// Whether a replica other than this one wrote an entry referencing `hash` (its writer
    /// uploaded it, so the remote holds it).
    static func writtenElsewhere(_ db: Database, _ hash: ContentHash, own: ReplicaID? = nil) throws -> Bool {
        let own = try own ?? Rows.replica(Data.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'replica'") ?? Data())
        return try Bool.fetchOne(db, sql: """
            SELECT EXISTS (SELECT 1 FROM concord_fields WHERE kind = \(FieldKind.file.stored) AND value = ?1 AND replica != ?2)
                OR EXISTS (SELECT 1 FROM concord_field_versions WHERE kind = \(FieldKind.file.stored) AND value = ?1 AND replica != ?2)
                OR EXISTS (SELECT 1 FROM concord_history WHERE hash = ?1 AND replica != ?2)
            """, arguments: [Data(hash.bytes), Rows.replicaBlob(own)]) ?? false
    }

    /// Makes `concord_local_files` match the blob directory: a row for each file there (its
    /// last read unknown: the oldest), none for a file gone. Run when the store opens after
    /// the migration that made the table, and by ``fileCacheStatus()`` and eviction.
    package func reconcileLocalFiles() throws(ConcordError) {
        let lock = try FileCacheLock(blobs)
        defer { lock.release() }
        try lock.acquire(exclusive: false)
        let held = try blobs.all()
        try writeDatabase { db in
            let own = replicaID
            var rows: Set<ContentHash> = []
            for data in try Data.fetchAll(db, sql: "SELECT hash FROM concord_local_files") {
                guard let hash = ContentHash(bytes: [UInt8](data)) else { continue }
                rows.insert(hash)
            }
            let present = Set(held)
            for hash in rows.subtracting(present) {
                try db.execute(sql: "DELETE FROM concord_local_files WHERE hash = ?", arguments: [Data(hash.bytes)])
                try Self.setDeclaredLocal(db, hash, false)
            }
            for hash in present.subtracting(rows) {
                try db.execute(sql: "INSERT INTO concord_local_files (hash, size, last_read, on_remote) VALUES (?, ?, 0, ?)",
                               arguments: [Data(hash.bytes), Int64(clamping: blobs.size(of: hash) ?? 0), try Self.writtenElsewhere(db, hash, own: own) ? 1 : 0])
                try Self.setDeclaredLocal(db, hash, true)
            }
            try db.execute(sql: "DELETE FROM concord_local_files_pending")
        }
    }

    /// Reconciles once after the migration that made `concord_local_files` (an older store's
    /// blob directory is listed once).
    func reconcileLocalFilesIfPending() throws(ConcordError) {
        let pending = try read { db in try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM concord_local_files_pending)") ?? false }
        if pending { try reconcileLocalFiles() }
    }

    /// Forgets the rows of contents deleted from the blob directory (the local file sweep).
    static func forgetLocal(_ db: Database, _ hashes: [ContentHash]) throws {
        for hash in hashes {
            try db.execute(sql: "DELETE FROM concord_local_files WHERE hash = ?", arguments: [Data(hash.bytes)])
        }
    }
}

extension CollectionDeclaration {
    /// The column saying whether a file field's content is on this device: 1 local, 0 not.
    static func localColumn(_ column: String) -> String { "concord_local__" + column }
}

extension BlobStore {
    /// The SQL function `concord_blob_local(hash)`: 1 when the content with that 32-byte
    /// hash is in `directory`, else 0 (NULL for anything but a hash).
    static func localFunction(directory: String) -> DatabaseFunction {
        let blobs = BlobStore(directory: directory)
        return DatabaseFunction("concord_blob_local", argumentCount: 1, pure: false) { values in
            guard let data = Data.fromDatabaseValue(values[0]), let hash = ContentHash(bytes: [UInt8](data)) else { return nil }
            return blobs.contains(hash) ? 1 : 0
        }
    }

    /// The size of stored content `hash`, nil when it is not here.
    func size(of hash: ContentHash) -> UInt64? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path(for: hash)),
              let size = attributes[.size] as? NSNumber else { return nil }
        return size.uint64Value
    }
}

extension Store {
    /// A declared row's `concord_local__<column>`: 1 when the field's content is local, 0
    /// when not, NULL when the field holds no file.
    static func declaredLocal(_ db: Database, _ value: FieldValue?) throws -> DeclaredValue {
        guard case let .file(file)? = value else { return .null }
        return .int(try isLocal(db, file.hash) ? 1 : 0)
    }
}

extension Schema {
    /// Part of "v10-files-on-demand": the declared tables of older stores gain each file
    /// field's `concord_local__<column>` (set by the reconcile that follows the migration).
    static func addDeclaredLocalColumns(_ db: Database) throws {
        for declaration in try DeclaredTables.all(db).values {
            for field in declaration.fields {
                guard case .file = field.type else { continue }
                let column = CollectionDeclaration.localColumn(CollectionDeclaration.column(field.name))
                try db.execute(sql: "ALTER TABLE \(Rows.quoted(declaration.tableName)) ADD COLUMN \(Rows.quoted(column)) INTEGER")
                try db.execute(sql: "UPDATE \(Rows.quoted(declaration.tableName)) SET \(Rows.quoted(column)) = 0 WHERE \(Rows.quoted(CollectionDeclaration.column(field.name))) IS NOT NULL")
            }
        }
    }
}
