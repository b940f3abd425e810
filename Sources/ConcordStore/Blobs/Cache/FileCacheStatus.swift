import ConcordCore
import Foundation
import GRDB

/// Where a file's content is, on this device (README, "Large files and small devices").
public enum FileState: Hashable, Sendable {
    /// In the blob directory: reading it needs no network.
    case local
    /// Not here; reading it fetches it from the remote.
    case notLocal
    /// Being fetched: this many bytes of the encrypted stream so far (`SyncEngine` knows).
    case downloading(bytes: UInt64)
    /// The remote did not have it when it was last looked for; the reason.
    case unavailable(String)

    /// `local`, `notLocal`, `downloading` or `unavailable`.
    public var name: String {
        switch self {
        case .local: "local"
        case .notLocal: "notLocal"
        case .downloading: "downloading"
        case .unavailable: "unavailable"
        }
    }
}

/// A store's file contents, counted.
public struct FileCacheStatus: Hashable, Sendable {
    public var policy: FilePolicy
    /// The collections and fields whose policy differs from the store's.
    public var scopes: [FilePolicyScope] = []
    /// What the prefetch fetches besides pinned contents.
    public var prefetch = FilePrefetch()
    /// Bytes of local contents (every file in the blob directory).
    public var bytesCached: UInt64
    /// How many contents are local.
    public var filesCached: Int
    /// Bytes of local contents that are pinned.
    public var bytesPinned: UInt64
    /// Bytes of the files this replica wrote whose changes are not on the remote yet.
    public var bytesPendingUpload: UInt64
    /// Files the records reference (current values and fork versions), and how many and
    /// how many bytes of them are not local.
    public var filesReferenced: Int
    public var filesNotLocal: Int
    public var bytesNotLocal: UInt64
    /// Contents the remote was found not to hold.
    public var filesUnavailable: Int
    public var pins: [FilePin]
}

extension Store {
    /// The state of content `hash` as the store knows it (``FileState/downloading(bytes:)``
    /// is the sync engine's to report).
    public func fileState(_ hash: ContentHash) throws(ConcordError) -> FileState {
        if blobs.contains(hash) { return .local }
        let reason = try read { db in
            try String.fetchOne(db, sql: "SELECT reason FROM concord_unavailable_files WHERE hash = ?", arguments: [Data(hash.bytes)])
        }
        return reason.map(FileState.unavailable) ?? .notLocal
    }

    /// Remembers that the remote does not hold content `hash` (cleared when it arrives).
    package func markUnavailable(_ hash: ContentHash, reason: String) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "INSERT OR REPLACE INTO concord_unavailable_files (hash, reason) VALUES (?, ?)", arguments: [Data(hash.bytes), reason])
        }
    }

    /// The file values (current and forked) the records reference, with their sizes.
    package func referencedFileSizes() throws(ConcordError) -> [ContentHash: UInt64] {
        try read { db in
            var files: [ContentHash: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: """
                SELECT value, file_size FROM concord_fields WHERE kind = \(FieldKind.file.stored)
                UNION ALL SELECT value, file_size FROM concord_field_versions WHERE kind = \(FieldKind.file.stored)
                """) {
                guard let data = row[0] as Data?, let hash = ContentHash(bytes: [UInt8](data)) else { continue }
                files[hash] = UInt64(max(0, row[1] as Int64? ?? 0))
            }
            return files
        }
    }

    /// The pinned file values not local, with their sizes: what a sync fetches.
    package func pinnedFilesNotLocal() throws(ConcordError) -> [ContentHash: UInt64] {
        try read { db in try Self.pinnedFiles(db) }.filter { !blobs.contains($0.key) }
    }

    /// Counts the local contents, pins and what waits for upload.
    public func fileCacheStatus() throws(ConcordError) -> FileCacheStatus {
        try reconcileLocalFiles()
        let referenced = try referencedFileSizes()
        let scopes = try filePolicyScopes()
        let prefetch = try filePrefetch()
        var status = try read { db in
            var cached: UInt64 = 0
            var count = 0
            var own: [ContentHash: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT hash, size, on_remote FROM concord_local_files") {
                guard let hash = ContentHash(bytes: [UInt8](row[0] as Data)) else { continue }
                let size = UInt64(max(0, row[1] as Int64))
                cached += size
                count += 1
                if (row[2] as Int64) == 0 { own[hash] = size }
            }
            let pinned = try Self.pinnedFiles(db).filter { own[$0.key] != nil || blobs.contains($0.key) }
            let unpushed = try Self.hasUnpushed(db)
            // An own content waits for upload while it is referenced and something is unpushed.
            let pending = unpushed ? own.filter { referenced[$0.key] != nil }.values.reduce(0, +) : 0
            let missing = referenced.filter { !blobs.contains($0.key) }
            let unavailable = try Int.fetchOne(db, sql: "SELECT count(*) FROM concord_unavailable_files") ?? 0
            let pins = try Row.fetchAll(db, sql: "SELECT collection, scope, id, field FROM concord_file_pins").compactMap { row -> FilePin? in
                let scope: Int64 = row["scope"]
                return try? FilePin(row["collection"], id: scope >= 1 ? row["id"] : nil, field: scope == 2 ? row["field"] : nil)
            }.sorted()
            return FileCacheStatus(
                policy: try Self.filePolicy(db), bytesCached: cached, filesCached: count, bytesPinned: pinned.values.reduce(0, +),
                bytesPendingUpload: pending, filesReferenced: referenced.count, filesNotLocal: missing.count,
                bytesNotLocal: missing.values.reduce(0, +), filesUnavailable: unavailable, pins: pins)
        }
        status.scopes = scopes
        status.prefetch = prefetch
        return status
    }
}

extension ConcordError.Code {
    /// A file's content is not local and cannot be fetched: the remote does not hold it (it
    /// was never uploaded, or swept), or what it holds is damaged. Nothing wrong was kept.
    public static let fileUnavailable = ConcordError.Code("fileUnavailable")
}
