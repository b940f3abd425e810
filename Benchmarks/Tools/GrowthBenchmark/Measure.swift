import Concord
import ConcordTesting
import Foundation
import GRDB
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Counts the bytes that cross a remote (FaultyRemote counts the requests).
final class ByteCountingRemote: Remote {
    struct Counts: Hashable, Sendable {
        var bytesUp: UInt64 = 0
        var bytesDown: UInt64 = 0
        var listedEntries = 0
    }

    let base: any Remote
    private let state = Mutex(Counts())

    init(wrapping base: any Remote) { self.base = base }

    var counts: Counts { state.withLock { $0 } }
    func reset() { state.withLock { $0 = Counts() } }

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try await base.put(path, bytes)
        state.withLock { $0.bytesUp += UInt64(bytes.count) }
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        let bytes = try await base.get(path)
        state.withLock { $0.bytesDown += UInt64(bytes?.count ?? 0) }
        return bytes
    }

    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        let listing = try await base.list(prefix: prefix)
        state.withLock { $0.listedEntries += listing.count }
        return listing
    }

    func delete(_ path: String) async throws(ConcordError) {
        try await base.delete(path)
    }

    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        var total: UInt64 = 0
        try await base.putStream(path) { () throws(ConcordError) -> [UInt8] in
            let chunk = try read()
            total += UInt64(chunk.count)
            return chunk
        }
        state.withLock { $0.bytesUp += total }
    }

    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        var total: UInt64 = 0
        let found = try await base.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
            total += UInt64(chunk.count)
            try write(chunk)
        }
        state.withLock { $0.bytesDown += total }
        return found
    }
}

// MARK: Files on disk

/// Total size and count of the regular files under `path`.
func directorySize(_ path: String) -> (bytes: UInt64, files: Int) {
    var bytes: UInt64 = 0
    var files = 0
    guard let enumerator = FileManager.default.enumerator(atPath: path) else { return (0, 0) }
    while let name = enumerator.nextObject() as? String {
        var info = stat()
        if stat(path + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG {
            bytes += UInt64(info.st_size)
            files += 1
        }
    }
    return (bytes, files)
}

func fileSize(_ path: String) -> UInt64 {
    var info = stat()
    return stat(path, &info) == 0 ? UInt64(info.st_size) : 0
}

/// The remote folder's bytes by kind of object (docs/ARCHITECTURE.md §4).
struct RemoteSizes: Sendable {
    var kinds: [String: (bytes: UInt64, objects: Int)] = [:]
    var total: UInt64 { kinds.values.reduce(0) { $0 + $1.bytes } }
    var objects: Int { kinds.values.reduce(0) { $0 + $1.objects } }
    subscript(kind: String) -> UInt64 { kinds[kind]?.bytes ?? 0 }

    static let order = ["heads", "deltas", "snapshots", "blobs", "manifest", "other"]

    init(folder: String) {
        guard let enumerator = FileManager.default.enumerator(atPath: folder) else { return }
        while let name = enumerator.nextObject() as? String {
            var info = stat()
            guard stat(folder + "/" + name, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else { continue }
            let kind: String =
                if name == "concord.json" { "manifest" }
                else if name.hasPrefix("heads/") { "heads" }
                else if name.hasPrefix("replicas/"), name.contains("/deltas/") { "deltas" }
                else if name.hasPrefix("snapshots/") { "snapshots" }
                else if name.hasPrefix("blobs/") { "blobs" }
                else { "other" }
            kinds[kind, default: (0, 0)].bytes += UInt64(info.st_size)
            kinds[kind, default: (0, 0)].objects += 1
        }
    }
}

// MARK: A store's database

/// One store's SQLite file, measured after a `wal_checkpoint(TRUNCATE)`, with the bytes of
/// every table and index (SQLite's `dbstat`) and the rows that could grow with history.
struct DatabaseFigures: Sendable {
    var file: UInt64 = 0
    var wal: UInt64 = 0
    var freePages: UInt64 = 0
    var pageSize: UInt64 = 0
    /// Table or index → bytes of its pages.
    var objects: [(name: String, bytes: UInt64)] = []
    /// Row counts and payload of the parts that might grow.
    var rows: [(name: String, count: Int64)] = []
    var sealedBytes: Int64 = 0
    var blobs: (bytes: UInt64, files: Int) = (0, 0)
    var vacuumedFile: UInt64?

    var total: UInt64 { file + wal }
    var freeBytes: UInt64 { freePages * pageSize }
}

func pool(_ store: Store) -> DatabasePool {
    guard let pool = store.reader as? DatabasePool else { fatalError("the store's reader is not a GRDB DatabasePool") }
    return pool
}

func checkpoint(_ store: Store) throws {
    try pool(store).writeWithoutTransaction { db in
        _ = try Row.fetchOne(db, sql: "PRAGMA wal_checkpoint(TRUNCATE)")
    }
}

func measureDatabase(_ store: Store, details: Bool, vacuum: Bool = false) throws -> DatabaseFigures {
    try checkpoint(store)
    var figures = DatabaseFigures()
    figures.file = fileSize(store.path)
    figures.wal = fileSize(store.path + "-wal")
    figures.blobs = directorySize(store.blobs.directory)
    let db = pool(store)
    try db.read { db in
        figures.pageSize = UInt64(try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 0)
        figures.freePages = UInt64(try Int64.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0)
        guard details else { return }
        if let rows = try? Row.fetchAll(db, sql: "SELECT name, SUM(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC") {
            figures.objects = rows.map { (name: $0["name"] as String, bytes: UInt64($0["bytes"] as Int64)) }
        }
        let counts: [(String, String)] = [
            ("records", "SELECT count(*) FROM (SELECT DISTINCT collection, id FROM concord_dots UNION SELECT DISTINCT collection, id FROM concord_fields UNION SELECT DISTINCT collection, id FROM concord_elements)"),
            ("visible records", "SELECT count(*) FROM (SELECT DISTINCT collection, id FROM concord_dots WHERE kind = 0)"),
            ("tombstoned records", "SELECT count(*) FROM (SELECT DISTINCT collection, id FROM concord_dots WHERE kind = 1)"),
            ("field rows", "SELECT count(*) FROM concord_fields"),
            ("field rows of invisible records", "SELECT count(*) FROM concord_fields f WHERE NOT EXISTS (SELECT 1 FROM concord_dots d WHERE d.collection = f.collection AND d.id = f.id AND d.kind = 0)"),
            ("concurrent field versions", "SELECT count(*) FROM concord_field_versions"),
            ("set element rows", "SELECT count(*) FROM concord_elements"),
            ("dot rows", "SELECT count(*) FROM concord_dots"),
            ("outbox rows", "SELECT count(*) FROM concord_outbox"),
            ("sealed deltas", "SELECT count(*) FROM concord_sealed"),
            ("history rows", "SELECT count(*) FROM concord_history"),
            ("sync-state rows", "SELECT (SELECT count(*) FROM concord_sync_state) + (SELECT count(*) FROM concord_replica_state) + (SELECT count(*) FROM concord_uploaded_files) + (SELECT count(*) FROM concord_pending_reuploads) + (SELECT count(*) FROM concord_object_references) + (SELECT count(*) FROM concord_object_reference_names) + (SELECT count(*) FROM concord_snapshot_covers) + (SELECT count(*) FROM concord_snapshot_cover_seqs) + (SELECT count(*) FROM concord_unopened_heads) + (SELECT count(*) FROM concord_unreferenced_files) + (SELECT count(*) FROM concord_stable_since) + (SELECT count(*) FROM concord_sealed_to_forget)"),
            ("sync-state uploaded-file rows", "SELECT count(*) FROM concord_uploaded_files"),
        ]
        for (name, sql) in counts {
            figures.rows.append((name, try Int64.fetchOne(db, sql: sql) ?? 0))
        }
        figures.sealedBytes = try Int64.fetchOne(db, sql: "SELECT coalesce(sum(length(bytes)), 0) FROM concord_sealed") ?? 0
    }
    if vacuum {
        try db.writeWithoutTransaction { db in try db.execute(sql: "VACUUM") }
        try checkpoint(store)
        figures.vacuumedFile = fileSize(store.path) + fileSize(store.path + "-wal")
    }
    return figures
}

/// The file hashes the state's field entries reference (current values and open forks).
func referencedFiles(_ state: StoreState) -> Set<ContentHash> {
    var hashes: Set<ContentHash> = []
    for record in state.records.values {
        for slot in record.slots.values {
            for entry in slot.entries {
                if case let .file(file) = entry.payload { hashes.insert(file.hash) }
            }
        }
    }
    return hashes
}

/// The files a store's retained versions (history within its window) reference.
func retainedVersions(_ store: Store, since cutoff: UInt64) throws -> Set<ContentHash> {
    try pool(store).read { db in
        let hashes = try Data.fetchAll(db, sql: "SELECT DISTINCT hash FROM concord_history WHERE superseded_at >= ?",
                                       arguments: [Int64(bitPattern: cutoff)])
        return Set(hashes.compactMap { ContentHash(bytes: [UInt8]($0)) })
    }
}

func peakResidentBytes() -> UInt64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return UInt64(usage.ru_maxrss) * 1024  // kilobytes on Linux
}

// MARK: Formatting

func mib(_ bytes: UInt64) -> String { String(format: "%.2f MiB", Double(bytes) / 1_048_576) }
func mib(_ bytes: Int64) -> String { mib(UInt64(max(0, bytes))) }
func ratio(_ a: UInt64, _ b: UInt64) -> String { b == 0 ? "—" : String(format: "%.2f×", Double(a) / Double(b)) }
func ratioValue(_ a: UInt64, _ b: UInt64) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
func grouped(_ n: some BinaryInteger) -> String {
    let digits = String(n.magnitude)
    var out = ""
    for (index, character) in digits.enumerated() {
        if index > 0, (digits.count - index) % 3 == 0 { out.append(",") }
        out.append(character)
    }
    return (n < 0 ? "-" : "") + out
}

/// A plain text table: first column left-aligned, the others right-aligned.
func table(_ header: [String], _ rows: [[String]]) -> String {
    let all = [header] + rows
    let widths = (0..<header.count).map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
    func line(_ row: [String]) -> String {
        row.enumerated().map { column, cell in
            let pad = String(repeating: " ", count: widths[column] - cell.count)
            return column == 0 ? cell + pad : pad + cell
        }.joined(separator: "  ")
    }
    let rule = widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")
    return ([line(header), rule] + rows.map(line)).joined(separator: "\n")
}

func seconds(since start: ContinuousClock.Instant) -> Double {
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}
