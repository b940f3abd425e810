// Bootstrap at scale (see README.md, "Scale"): a new replica joins a snapshot of RECORDS
// records × 10 fields through a folder remote, against raw SQLite inserting the same rows in
// one transaction. Each step is its own process, so each peak resident size is its own:
//
//   BootstrapBenchmark prepare DIR RECORDS   a store writes the records (1,000 per write {}),
//                                            pushes them and writes a snapshot to DIR/remote
//   BootstrapBenchmark snapshot DIR          the writer changes one field, pushes it and writes
//                                            a new snapshot (the writer's side, on its own)
//   BootstrapBenchmark join DIR              a fresh store in DIR joins it (a pull-only sync)
//   BootstrapBenchmark raw DIR RECORDS       raw SQLite inserts the same rows, one transaction
//   BootstrapBenchmark read DIR              the snapshot fetched, opened and every record
//                                            read and checked, nothing stored (the join's
//                                            share that is not SQLite's)
//
// `snapshot`, `join`, `raw` and `read` print one line: `snapshot|join|raw|read ms=… peak_rss_mib=… …`. WAL and
// synchronous = FULL on both sides, as the store. `make bench-scale` runs them on tmpfs and
// on disk.
import Concord
import ConcordTesting
import Foundation
import RawSQLiteBaseline
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let fields = 10
let names = (0..<fields).map { "field\($0)" }
let arguments = CommandLine.arguments
func usage() -> Never {
    FileHandle.standardError.write(Data("usage: BootstrapBenchmark prepare DIR RECORDS | snapshot DIR | join DIR | raw DIR RECORDS | read DIR\n".utf8))
    exit(2)
}
guard arguments.count >= 3 else { usage() }
let directory = arguments[2]
let passphrase = "bench"

/// This process's peak resident set, in MiB.
func peakResidentMiB() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss / 1_024
}

func milliseconds(since start: ContinuousClock.Instant) -> Int {
    let elapsed = ContinuousClock.now - start
    return Int(elapsed.components.seconds * 1_000) + Int(elapsed.components.attoseconds / 1_000_000_000_000_000)
}

func remove(_ path: String) {
    for suffix in ["", "-wal", "-shm", ".blobs"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}

switch arguments[1] {
case "prepare":
    guard arguments.count == 4, let records = Int(arguments[3]) else { usage() }
    try? FileManager.default.removeItem(atPath: directory)
    try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
    let folder = try FolderRemote(root: directory + "/remote", createIfMissing: true)
    let (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: passphrase, limits: .minimum)
    let writer = try Store(path: directory + "/writer.db")
    let start = ContinuousClock.now
    for batch in stride(from: 0, to: records, by: 1_000) {
        try writer.write { tx throws(ConcordError) in
            for record in batch..<min(records, batch + 1_000) {
                let ref = RecordRef(collection: "items", id: "item\(record)")
                for field in 0..<fields { try tx.set(ref, names[field], Workload.value(record: record, field: field, round: 0)) }
            }
        }
    }
    print("prepare: wrote \(records * fields) fields in \(milliseconds(since: start)) ms")
    let engine = SyncEngine(store: writer, remote: folder, key: key, storeID: storeID, snapshotEvery: nil)
    let snapshot = try await engine.writeSnapshot()
    let size = try await folder.list(prefix: "snapshots/").reduce(UInt64(0)) { $0 + ($1.size ?? 0) }
    print("prepare: \(snapshot), \(size) bytes, in \(milliseconds(since: start)) ms; peak_rss_mib=\(peakResidentMiB())")
case "snapshot":
    let folder = try FolderRemote(root: directory + "/remote")
    let (key, storeID) = try await SyncEngine.unlock(folder, passphrase: passphrase)
    let writer = try Store(path: directory + "/writer.db")
    let engine = SyncEngine(store: writer, remote: folder, key: key, storeID: storeID, snapshotEvery: nil)
    try writer.set(RecordRef(collection: "items", id: "item0"), "field0", .int(Int64(Date().timeIntervalSince1970)))
    let start = ContinuousClock.now
    let snapshot = try await engine.writeSnapshot()
    let elapsed = milliseconds(since: start)
    let size = try await folder.get(snapshot)?.count ?? 0
    print("snapshot ms=\(elapsed) peak_rss_mib=\(peakResidentMiB()) bytes=\(size)")
case "join":
    let folder = try FolderRemote(root: directory + "/remote")
    let (key, storeID) = try await SyncEngine.unlock(folder, passphrase: passphrase)
    let path = directory + "/joiner.db"
    remove(path)
    defer { remove(path) }
    let store = try Store(path: path)
    let engine = SyncEngine(store: store, remote: folder, key: key, storeID: storeID, snapshotEvery: nil)
    let start = ContinuousClock.now
    let report = try await engine.sync(mode: .pullOnly)
    let elapsed = milliseconds(since: start)
    guard report.bootstrapped != nil else {
        FileHandle.standardError.write(Data("join: no snapshot joined (\(report.rejected))\n".utf8))
        exit(1)
    }
    let peak = peakResidentMiB()  // the join's, before the check below reads every record
    let rows = try store.records(in: "items").count
    print("join ms=\(elapsed) peak_rss_mib=\(peak) rows=\(rows * fields)")
case "read":
    let folder = try FolderRemote(root: directory + "/remote")
    let (key, _) = try await SyncEngine.unlock(folder, passphrase: passphrase)
    let start = ContinuousClock.now
    guard let path = try await folder.list(prefix: "snapshots/").first?.path, let sealed = try await folder.get(path) else {
        FileHandle.standardError.write(Data("read: no snapshot in \(directory)/remote\n".utf8))
        exit(1)
    }
    let plaintext = try EncryptedObject.open(consuming: sealed, path: path, key: key.subkey(for: .snapshots))
    var records = try SnapshotObjectReader(plaintext, path: path).records
    var rows = 0
    while let (_, record) = try records.next() { rows += record.slots.count }
    print("read ms=\(milliseconds(since: start)) peak_rss_mib=\(peakResidentMiB()) rows=\(rows)")
case "raw":
    guard arguments.count == 4, let records = Int(arguments[3]) else { usage() }
    let path = directory + "/raw.db"
    remove(path)
    defer { remove(path) }
    let start = ContinuousClock.now
    let rows = rawInsert(path: path, records: records, fields: fields, recordsPerTransaction: records)
    print("raw ms=\(milliseconds(since: start)) peak_rss_mib=\(peakResidentMiB()) rows=\(rows)")
default:
    usage()
}
