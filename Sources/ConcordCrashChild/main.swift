// ConcordCrashChild: the child process the crash and disk tests start and kill
// (Tests/ConcordStoreTests/CrashTests.swift, FileSweepRaceTests.swift). Not a product: it
// runs a store until it is killed or the disk fails, logging progress with unbuffered
// writes so the parent knows which transaction was interrupted. Its modes are `usage`.
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

let usage = """
    usage: ConcordCrashChild MODE …
      crash STORE LOG SEED STEPS    run a CrashScript, logging "begin k"/"done k"
      full STORE LOG BYTES          write until a file-size limit of BYTES is hit
      tmpfs DIR LOG                 in a private mount namespace: fill a 1 MiB tmpfs,
                                    remount it read-only, then writable again
      attach STORE LOG COUNT        attach COUNT new files, one record each
      sweep STORE LOG COUNT         sweep the store's unreferenced files COUNT times
      sync STORE LOG REMOTE NAME FIRST
                                    write records NAME-FIRST, NAME-(FIRST+1), … (every
                                    third with a file), logging "wrote i" once each write
                                    returned, and sync after each (every fifth, compact
                                    too) through a folder remote unlocked with the
                                    passphrase "crash-child"
      workload STORE LOG REMOTE NAME
                                    run one sync workload through a folder remote
                                    unlocked with the passphrase "crash-child", logging
                                    "started", "put PATH" and "deleted PATH" once the
                                    folder acknowledged each, and "finished …": push (a
                                    push-only sync), pull (a pull-only sync), snapshot
                                    (writeSnapshot), compaction (compact, batch grace
                                    period 0)
      fuzzsync STORE LOG REMOTE KEYFILE STOREID NOW STORAGE SLACK INFLIGHT [IDSEED]
                                    one sync of the sync fuzz's replica: its store
                                    (history kept 2 days) and the folder remote at the
                                    fuzz's times NOW and STORAGE (ms), the engine set up
                                    as the fuzz's (snapshots every 3 batches with SLACK,
                                    retention 10 days, file grace 5 days, INFLIGHT
                                    requests), logging "started" and "finished"; the fuzz
                                    kills it at one of its writes
      export STORE LOG DESTINATION  add CrashScript.exportedFile(k) to the blob
                                    directory and export it to DESTINATION, k = 1, 2, 3,
                                    logging "exported k" once each returned; then add one
                                    more file

    """
let arguments = CommandLine.arguments
guard arguments.count >= 4 else {
    FileHandle.standardError.write(usage.data(using: .utf8)!)
    exit(2)
}
let log = open(arguments[3], O_WRONLY | O_CREAT | O_APPEND, 0o644)

/// Logs a line, unbuffered. Through `writev`, which the crash and error enumeration's fault
/// library (ConcordFaultInjection) neither counts nor fails: the log is the test's, not the store's.
func say(_ line: String) {
    var bytes = Array((line + "\n").utf8)
    bytes.withUnsafeMutableBytes { buffer in
        var vector = iovec(iov_base: buffer.baseAddress, iov_len: buffer.count)
        _ = writev(log, &vector, 1)
    }
}

/// A remote that logs each put and delete the remote acknowledged (returned from): what a
/// power cut must not take back from the remote (a put; a delete may come back).
struct AcknowledgingRemote: Remote {
    let base: FolderRemote

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try await base.put(path, bytes)
        say("put \(path)")
    }

    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try await base.putStream(path, read: read)
        say("put \(path)")
    }

    func delete(_ path: String) async throws(ConcordError) {
        try await base.delete(path)
        say("deleted \(path)")
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await base.get(path) }
    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? { try await base.get(path, limit: limit) }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { try await base.list(prefix: prefix) }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, write: write)
    }
    func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] { try await base.anomalies(prefix: prefix) }
}

extension AcknowledgingRemote: LeftoverSweeping {
    func sweepLeftovers(olderThan age: UInt64, now: UInt64) async throws(ConcordError) -> Int {
        try await base.sweepLeftovers(olderThan: age, now: now)
    }
}

/// A sync engine for `store` through the folder remote at `folder`, unlocked with the
/// passphrase the crash tests create it with; with `acknowledging`, logging the puts and
/// deletes the folder acknowledged.
func engine(_ store: Store, folder: String, acknowledging: Bool = false) async throws -> SyncEngine {
    let folderRemote = try FolderRemote(root: folder)
    let remote: any Remote = acknowledging ? AcknowledgingRemote(base: folderRemote) : folderRemote
    let (key, storeID) = try await SyncEngine.unlock(remote, passphrase: "crash-child")
    return SyncEngine(store: store, remote: remote, key: key, storeID: storeID)
}

func fail(_ message: String) -> Never {
    say("error \(message)")
    exit(1)
}

do {
    switch arguments[1] {
    case "crash":
        let seed = UInt64(arguments[4])!
        let script = CrashScript(seed: seed, count: Int(arguments[5])!)
        let clock = ManualClock(millis: CrashScript.baseMillis)
        let store = try Store(path: arguments[2], configuration: .init(clock: clock))
        say("replica \(store.replicaID)")
        // The script's collection declared, so a kill may land in the upkeep of its table
        // (a string written to `a`, an integer to `b`: columns that must read NULL).
        try store.declare(CollectionDeclaration(CrashScript.collection, fields: [
            .init("a", .int, indexed: true), .init("b", .string, searchable: true), .init("s", .set(.int)), .init("f", .file),
        ]))
        for (index, step) in script.steps.enumerated() {
            let k = index + 1
            clock.set(CrashScript.now(step: k))
            say("begin \(k)")
            switch step {
            case let .set(ref, field, value): try store.set(ref, field, value)
            case let .put(ref, fields): try store.put(ref, fields)
            case let .add(ref, field, value): try store.add(ref, field, value)
            case let .remove(ref, field, value): try store.remove(ref, field, value)
            case let .delete(ref): try store.delete(ref)
            case let .attach(ref, field, bytes): try store.attachFile(ref, field, bytes: bytes)
            case .seal: _ = try store.seal()
            case let .apply(delta): try store.apply(delta)
            }
            say("done \(k)")
        }
        say("finished")
    case "full":
        var limit = rlimit(rlim_cur: rlim_t(arguments[4])!, rlim_max: rlim_t.max)
        signal(SIGXFSZ, SIG_IGN)
        let store = try Store(path: arguments[2])
        guard setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit) == 0 else { fail("setrlimit failed") }
        var written = 0
        let payload = String(repeating: "x", count: 2_000)
        do {
            while written < 1_000_000 {
                try store.set(RecordRef(collection: "big", id: "r\(written)"), "payload", .string(payload))
                written += 1
            }
            fail("the size limit was never hit")
        } catch {
            say("failed \(error.code) \(written) \(error.message)")
        }
        // A file too large for the limit fails the same way, and leaves no partial blob.
        do {
            _ = try store.blobs.add(bytes: [UInt8](repeating: 7, count: 4 << 20))
            fail("the blob write never hit the limit")
        } catch {
            say("blob \(error.code) \(error.message)")
        }
        limit.rlim_cur = rlim_t.max
        _ = setrlimit(Int32(RLIMIT_FSIZE.rawValue), &limit)
        say("acknowledged \(written)")
    case "tmpfs":
        // A real small disk: fill it, then make it read-only, then writable again.
        let directory = arguments[2]
        guard mount("tmpfs", directory, "tmpfs", 0, "size=1m") == 0 else { fail("mount: \(String(cString: strerror(errno)))") }
        let path = directory + "/store.db"
        var written = 0
        do {
            let store = try Store(path: path)
            _ = try store.blobs.add(bytes: Array("kept file".utf8))
            let payload = String(repeating: "y", count: 4_000)
            do {
                while written < 100_000 {
                    try store.set(RecordRef(collection: "c", id: "r\(written)"), "v", .string(payload))
                    written += 1
                }
                fail("the disk never filled")
            } catch {
                say("full \(error.code) \(written) \(error.message)")
            }
            say("dump \(try store.canonicalDump().utf8.count) \(try store.records(in: "c").count)")
        }
        guard mount("tmpfs", directory, "tmpfs", UInt(MS_REMOUNT | MS_RDONLY), "size=1m") == 0 else {
            fail("remount: \(String(cString: strerror(errno)))")
        }
        do {
            // SQLite may open an existing store for reading; writing must then fail.
            let store = try Store(path: path)
            do {
                try store.set(RecordRef(collection: "c", id: "lost"), "v", .int(1))
                fail("a write to a read-only disk succeeded")
            } catch {
                say("readonly \(error.code) \(error.message)")
            }
            say("dump \(try store.canonicalDump().utf8.count) \(try store.records(in: "c").count)")
        } catch {
            say("readonly \(error.code) \(error.message)")
        }
        guard mount("tmpfs", directory, "tmpfs", UInt(MS_REMOUNT), "size=2m") == 0 else {
            fail("remount rw: \(String(cString: strerror(errno)))")
        }
        let store = try Store(path: path)
        say("dump \(try store.canonicalDump().utf8.count) \(try store.records(in: "c").count)")
        say("blobs \(try store.blobs.all().count)")
    case "attach":
        // Races `sweep` in another process on the same store file.
        let store = try Store(path: arguments[2])
        for index in 0..<Int(arguments[4])! {
            try store.attachFile(RecordRef(collection: "files", id: "f\(index)"), "content", bytes: Array("attached file \(index) of \(getpid())".utf8))
        }
        say("attached")
    case "sweep":
        let store = try Store(path: arguments[2])
        var deleted = 0
        // A pause between reading the references and deleting, where a write from the
        // other process would slip in if the sweep did not hold the write lock.
        for _ in 0..<Int(arguments[4])! { deleted += try store.sweepFiles(afterScan: { usleep(30_000) }).count }
        say("swept \(deleted)")
    case "sync":
        let store = try Store(path: arguments[2])
        let engine = try await engine(store, folder: arguments[4])
        say("started")
        let name = arguments[5]
        var index = Int(arguments[6])!
        while true {
            let ref = RecordRef(collection: "notes", id: "\(name)-\(index)")
            if index % 3 == 0 {
                try store.write { tx throws(ConcordError) in
                    try tx.set(ref, "v", .int(Int64(index)))
                    _ = try tx.attachFile(ref, "f", bytes: Array("file \(name)-\(index)".utf8))
                }
            } else {
                try store.set(ref, "v", .int(Int64(index)))
            }
            say("wrote \(index)")
            try await engine.sync()
            if index % 5 == 0 { try await engine.compact() }
            say("synced \(index)")
            index += 1
        }
    case "workload":
        // The crash and error enumeration of the sync workloads kill it, or fail its disk,
        // at each of its I/O calls (Tests/ConcordStoreTests/SyncEnumerationTests.swift).
        let store = try Store(path: arguments[2])
        let engine = try await engine(store, folder: arguments[4], acknowledging: true)
        say("started")
        switch arguments[5] {
        case "push":
            let report = try await engine.sync(mode: .pushOnly)
            say("finished pushed \(report.pushed)")
        case "pull":
            let report = try await engine.sync(mode: .pullOnly)
            say("finished applied \(report.applied)")
        case "snapshot":
            say("finished \(try await engine.writeSnapshot())")
        case "compaction":
            let report = try await engine.compact(batchGracePeriod: 0)
            say("finished deleted \(report.deletedBatches.count)")
        default:
            fail("unknown workload \(arguments[5])")
        }
    case "fuzzsync":
        // Tests/ConcordSyncTests/SyncFuzzTests.swift: a share of its crashes are real kills.
        let day: UInt64 = 86_400_000
        let clock = ManualClock(millis: UInt64(arguments[7])!)
        // The ids it may take (a restored copy continuing under a new one) come from the
        // schedule's seed, so the schedule replays.
        let ids = SeededReplicaIDs(seed: arguments.count > 11 ? UInt64(arguments[11]) ?? 0 : 0)
        let store = try Store(path: arguments[2], configuration: .init(clock: clock, historyRetention: 2 * day, newReplicaID: { ids.next() }))
        let folder = try FolderRemote(root: arguments[4], clock: ManualClock(millis: UInt64(arguments[8])!))
        guard let storeID = StoreID(hex: arguments[6]) else { fail("not a store id: \(arguments[6])") }
        let engine = SyncEngine(
            store: store, remote: folder, key: try StoreKey(contentsOfKeyFile: arguments[5]), storeID: storeID, clock: clock,
            snapshotEvery: 3, snapshotSlack: UInt64(arguments[9])!, retention: 10 * day, blobGracePeriod: 5 * day,
            requestsInFlight: Int(arguments[10])!)
        say("started")
        let report = try await engine.sync()
        say("finished applied \(report.applied), pushed \(report.pushed)")
    case "export":
        // The power-cut test of exports cuts it at each of its syncs and renames
        // (Tests/ConcordStoreTests/PowerCutTests.swift).
        let store = try Store(path: arguments[2])
        say("started")
        for index in 1...3 {
            let file = try store.blobs.add(bytes: CrashScript.exportedFile(index))
            try store.blobs.export(file.hash, to: arguments[4])
            say("exported \(index)")
        }
        _ = try store.blobs.add(bytes: CrashScript.exportedFile(4))
        say("finished")
    default:
        FileHandle.standardError.write(usage.data(using: .utf8)!)
        fail("unknown mode \(arguments[1])")
    }
} catch {
    fail("\(error)")
}
