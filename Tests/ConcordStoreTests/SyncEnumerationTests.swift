import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Crash and error enumeration of the sync workloads: a push, a pull whose batches are held
/// back until their files are fetched, a snapshot and a compaction, each run by the crash
/// child (`ConcordCrashChild workload`) through a folder remote from the same fixture, and
/// killed — or handed `ENOSPC`, then `EIO` — at each of its I/O calls in turn, counted across
/// its threads by the fault library (every one in `make crash-enum`; in `make test` every
/// third call is killed and every fifth write or sync fails). After each: the store passes
/// `integrity_check` and holds the state, outbox and sealed batches of before or after the
/// interrupted call (a pull: after some of its batches, with the applied seq that says so);
/// every file it refers to is whole, and so is every object on the remote under its final
/// name; every put the folder acknowledged is there; then the store syncs with the replica
/// that wrote the batches and with a new one, and all three converge, every file readable,
/// the remote healthy.
extension CrashTests {
    enum SyncWorkload: String, CaseIterable {
        case push, pull, snapshot, compaction
    }

    /// The I/O calls of a sync workload: the store's, and the folder remote's, which renames
    /// and deletes relative to an open folder.
    static let syncCalls = calls + ["renameat", "unlinkat"]

    @Test func aKillAtEveryIOCallOfASyncLosesNothingAndConverges() async throws {
        let every = Int(ProcessInfo.processInfo.environment["CONCORD_SYNC_ENUM_STRIDE"] ?? "") ?? 3
        let fixture = try await SyncFixture.make()
        var lines: [String] = []
        for workload in SyncWorkload.allCases {
            let (counts, after) = try await fixture.countCalls(workload)
            var visited = 0
            var recovered = 0
            for call in Self.syncCalls {
                for point in stride(from: 1, through: counts[call, default: 0], by: every) {
                    let copy = try fixture.copy()
                    let log = copy.file("log")
                    _ = try await Self.runChild(["workload", copy.file("a.db"), log, copy.file("remote"), workload.rawValue], fault: "\(call):\(point):kill")
                    visited += 1
                    let label = "\(workload) killed at \(call) #\(point)"
                    if try await fixture.check(copy, workload: workload, after: after, label: label) { recovered += 1 }
                }
            }
            let total = counts.values.reduce(0, +)
            #expect(visited > 0 && recovered == visited, "\(workload): \(recovered) of \(visited) kills recovered")
            lines.append("\(workload): \(total) I/O calls (\(counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))), \(visited) killed (every \(every)), \(recovered) recovered")
        }
        print("sync crash enumeration: " + lines.joined(separator: "; "))
    }

    @Test func aFullOrFailingDiskAtEveryWriteAndSyncOfASyncLosesNothing() async throws {
        let every = Int(ProcessInfo.processInfo.environment["CONCORD_SYNC_ERROR_STRIDE"] ?? "") ?? 5
        let fixture = try await SyncFixture.make()
        var lines: [String] = []
        var failedInAll = 0
        var codes: [String: Int] = [:]
        for workload in SyncWorkload.allCases {
            let (counts, after) = try await fixture.countCalls(workload)
            var visited = 0
            var failed = 0
            var recovered = 0
            for errno in ["ENOSPC", "EIO"] {
                for call in ["write", "pwrite64", "fsync", "fdatasync"] {
                    for point in stride(from: 1, through: counts[call, default: 0], by: every) {
                        let copy = try fixture.copy()
                        let log = copy.file("log")
                        let status = try await Self.runChild(["workload", copy.file("a.db"), log, copy.file("remote"), workload.rawValue], fault: "\(call):\(point):\(errno)")
                        visited += 1
                        let label = "\(workload) with \(errno) at \(call) #\(point)"
                        let lines = Child.lines(log)
                        if status != 0 {
                            failed += 1
                            // A typed error, on one line, naming what could not be done.
                            // A full disk is the store's `storage` error or, under the store
                            // folder, the remote's `remoteFull`; a failing one `storage`,
                            // `corrupt` or `remote`.
                            let code = Self.errorCode(lines) ?? ""
                            let expected = errno == "ENOSPC" ? ["storage", "remoteFull"] : ["storage", "corrupt", "remote"]
                            #expect(expected.contains(code), "\(label): \(lines.suffix(2))")
                            codes[code, default: 0] += 1
                        } else {
                            #expect(lines.last?.hasPrefix("finished") == true, "\(label): exit 0 without finishing: \(lines.suffix(2))")
                        }
                        // Nothing acknowledged is lost, and the next sync, the fault gone, succeeds.
                        if try await fixture.check(copy, workload: workload, after: after, label: label) { recovered += 1 }
                    }
                }
            }
            failedInAll += failed
            #expect(visited > 0 && recovered == visited, "\(workload): \(recovered) of \(visited) faults recovered")
            lines.append("\(workload): \(visited) faults, \(failed) failed it with a typed error, \(recovered) recovered")
        }
        #expect(failedInAll > 0, "no injected fault failed a workload")
        #expect(codes["remoteFull", default: 0] > 0 && codes["storage", default: 0] > 0, "\(codes)")
        print("sync error enumeration (ENOSPC and EIO, every \(every) of the writes and syncs): " + lines.joined(separator: "; ")
            + "; errors: " + codes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
    }
}

/// What every sync workload starts from: a folder remote; store `a.db`, which pushed one batch,
/// has four writes since (files among them, one superseding another) and has not pulled
/// three batches of store `b.db`, two of which reference files (one of two stream chunks).
struct SyncFixture {
    let directory: TemporaryDirectory
    let key: StoreKey
    let storeID: StoreID
    /// A's state after applying the first k of B's batches, k = 0, 1, 2, 3: a pull stops at one.
    let pullStates: [StoreState]
    /// A's outbox and sealed batches in the fixture.
    let before: Outbox

    /// A store's outbox: its unsealed slots and the bytes of each sealed batch it keeps.
    struct Outbox: Equatable {
        var pending: Set<SlotRef>
        var sealedSeq: UInt64
        var sealed: [UInt64: [UInt8]]

        init(_ store: Store) throws {
            pending = try store.pendingSlots()
            sealedSeq = try store.sealedSeq()
            sealed = [:]
            for seq in 0..<sealedSeq { sealed[seq + 1] = try store.sealedBatch(seq: seq + 1)?.bytes }
        }
    }

    static let passphrase = "crash-child"
    static let collection = "notes"
    static func ref(_ id: String) -> RecordRef { RecordRef(collection: collection, id: id) }
    static func bytes(_ name: String, _ count: Int) -> [UInt8] {
        Array("file \(name) ".utf8) + (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ name.utf8.count) }
    }

    static func make() async throws -> SyncFixture {
        let directory = TemporaryDirectory("sync-enum", base: FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory())
        let folder = try FolderRemote(root: directory.file("remote"), createIfMissing: true)
        _ = try await SyncEngine.createRemote(folder, passphrase: passphrase, limits: .minimum)
        let (key, storeID) = try await SyncEngine.unlock(folder, passphrase: passphrase)
        var batches: [Delta] = []
        var bBlobs: [[UInt8]] = []
        do {
            let a = try Store(path: directory.file("a.db"))
            let b = try Store(path: directory.file("b.db"))
            let engineA = SyncEngine(store: a, remote: folder, key: key, storeID: storeID)
            let engineB = SyncEngine(store: b, remote: folder, key: key, storeID: storeID)
            try a.set(ref("a1"), "v", .int(1))
            try a.attachFile(ref("a1"), "f", bytes: bytes("a1", 3_000))
            try await engineA.sync()
            // B's three batches; the first two reference files A must fetch before applying them.
            try b.write { tx throws(ConcordError) in
                try tx.set(ref("b1"), "v", .int(1))
                _ = try tx.attachFile(ref("b1"), "f", bytes: bytes("b1", 1_500))
            }
            try await engineB.sync()
            try b.attachFile(ref("b2"), "f", bytes: bytes("b2", 100_000))
            try await engineB.sync()
            try b.set(ref("b1"), "v", .int(2))
            try b.add(ref("b2"), "tags", .string("x"))
            try await engineB.sync()
            for seq in 1...(try b.sealedSeq()) { batches.append(try #require(try b.sealedBatch(seq: seq)).delta) }
            bBlobs = try CrashTests.blobs(in: b).map(\.1)
            // A's writes since its push: sealed and pushed by the push, snapshot and compaction.
            try a.put(ref("a2"), ["v": .scalar(.int(2)), "w": .scalar(.string("two"))])
            try a.attachFile(ref("a3"), "f", bytes: bytes("a3", 70_000))
            try a.attachFile(ref("a1"), "f", bytes: bytes("a1 again", 500))
            try a.add(ref("a2"), "tags", .string("y"))
        }
        #expect(batches.count == 3 && batches.filter { !$0.fileReferences.isEmpty }.count == 2)
        // The states a pull may leave A in, from applying B's batches one by one to copies.
        var pullStates: [StoreState] = []
        let before: Outbox
        do {
            let scratch = TemporaryDirectory("sync-enum-states")
            for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) where name.hasPrefix("a.db") {
                try FileManager.default.copyItem(atPath: directory.file(name), toPath: scratch.file(name))
            }
            let a = try Store(path: scratch.file("a.db"))
            before = try Outbox(a)
            pullStates.append(try a.state())
            for blob in bBlobs { _ = try a.blobs.add(bytes: blob) }
            for batch in batches {
                #expect(try a.apply(batch) == .applied)
                pullStates.append(try a.state())
            }
        }
        return SyncFixture(directory: directory, key: key, storeID: storeID, pullStates: pullStates, before: before)
    }

    /// A copy of the fixture's folder, for one run of a workload.
    func copy() throws -> TemporaryDirectory {
        let copy = TemporaryDirectory("sync-enum-run", base: (directory.path as NSString).deletingLastPathComponent)
        for name in try FileManager.default.contentsOfDirectory(atPath: directory.path) {
            try FileManager.default.copyItem(atPath: directory.file(name), toPath: copy.file(name))
        }
        // Each run plays the fixture's device itself, not a copy of it: its file is recorded
        // as the store's own (else its first sync would continue under a new id).
        try Store(path: copy.file("a.db")).recordFileIdentity()
        return copy
    }

    /// Counts the I/O calls of one uninterrupted run of `workload`, and returns them with the
    /// outbox that run leaves: the "after" of every interrupted one.
    func countCalls(_ workload: CrashTests.SyncWorkload) async throws -> ([String: Int], Outbox) {
        let copy = try copy()
        let log = copy.file("log")
        let (status, counts) = try await CrashTests.countingChild(["workload", copy.file("a.db"), log, copy.file("remote"), workload.rawValue])
        let finished = Child.lines(log).last ?? ""
        #expect(status == 0 && finished.hasPrefix("finished"), "\(workload): \(Child.lines(log).suffix(2))")
        // Each workload did its work.
        let store = try Store(path: copy.file("a.db"))
        switch workload {
        case .push:
            #expect(finished == "finished pushed 1")
        case .pull:
            #expect(finished == "finished applied 3")
            #expect(try store.state() == pullStates[3])
        case .snapshot:
            #expect(finished.hasPrefix("finished snapshots/"))
        case .compaction:
            #expect(finished.hasPrefix("finished deleted ") && finished != "finished deleted 0", "\(finished)")
        }
        // Each reaches the calls its work needs: the store's writes and syncs; a file fetched
        // into the blob directory (a pull); objects put on the remote (the others: a
        // temporary file renamed into place) and batches deleted from it (a compaction).
        let needed = ["write", "fsync", "fdatasync"] + (workload == .pull ? ["rename"] : ["renameat"]) + (workload == .compaction ? ["unlinkat"] : [])
        #expect(needed.allSatisfy { counts[$0, default: 0] > 0 }, "\(workload): \(counts)")
        return (counts, try Outbox(store))
    }

    /// Checks the copy a workload was interrupted in (killed, or failed by its disk); records
    /// an issue naming `label` for each failure; returns whether everything held.
    func check(_ copy: TemporaryDirectory, workload: CrashTests.SyncWorkload, after: Outbox, label: String) async throws -> Bool {
        var held = true
        func expect(_ condition: Bool, _ message: @autoclosure () -> String, sourceLocation: SourceLocation = #_sourceLocation) {
            if !condition {
                held = false
                Issue.record("\(label): \(message())", sourceLocation: sourceLocation)
            }
        }
        let path = copy.file("a.db")
        let integrity = try await DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        expect(integrity == ["ok"], "integrity_check: \(integrity)")
        do {
            let a = try Store(path: path)
            // The records: as before, or (a pull) after some of B's batches, as the applied seq says.
            let state = try a.state()
            let k = pullStates.firstIndex(of: state)
            expect(k != nil, "A's records are those of no state before or after a step")
            if let k {
                expect(workload == .pull || k == 0, "A's records changed in a \(workload): after \(k) of B's batches")
                let applied = try a.appliedSeqs().filter { $0.key != a.replicaID }.values.max() ?? 0
                expect(applied == UInt64(k), "A's records are those after \(k) of B's batches, its applied seq says \(applied)")
            }
            // The outbox: nothing lost or doubled — the one before the seal, or the one after.
            let outbox = try Outbox(a)
            let sameSeal = outbox.sealedSeq == before.sealedSeq ? before : after
            expect([before.sealedSeq, after.sealedSeq].contains(outbox.sealedSeq) && outbox.pending == sameSeal.pending,
                   "outbox: \(outbox.pending.count) pending, sealed up to \(outbox.sealedSeq); before \(before.pending.count), \(before.sealedSeq); after \(after.pending.count), \(after.sealedSeq)")
            for seq in 0..<outbox.sealedSeq {
                let bytes = outbox.sealed[seq + 1]
                // A compaction forgets the bytes of the batches it deleted.
                let forgotten = bytes == nil && workload == .compaction
                expect(forgotten || bytes == before.sealed[seq + 1] ?? after.sealed[seq + 1], "sealed batch \(seq + 1) holds other bytes, or none")
            }
            // Every file A refers to is whole; no blob is half-written under its final name.
            for reference in state.fileReferences {
                expect(a.blobs.contains(reference.file.hash), "file \(reference.file.hash.hex) is referenced but missing")
            }
            for (hash, bytes) in try CrashTests.blobs(in: a) {
                expect(ContentHasher.hash(bytes) == hash, "blob \(hash.hex) holds other bytes")
            }
        }
        let folder = try FolderRemote(root: copy.file("remote"))
        // No object on the remote is torn or half-written under its final name (a new
        // replica's doctor opens every one, every file included).
        do {
            let newcomer = try Store(path: copy.file("doctor.db"))
            let doctor = try await SyncEngine(store: newcomer, remote: folder, key: key, storeID: storeID).doctor()
            let forbidden: Set<DoctorFinding.Kind> = [.damaged, .malformed, .unreadable, .newerFormat, .missingBatch, .missingFile, .remoteEmptied]
            let bad = doctor.findings.filter { forbidden.contains($0.kind) }
            expect(bad.isEmpty, "the remote holds damaged objects: \(bad.map { "\($0.kind) \($0.path)" })")
        }
        // Every put the folder acknowledged (the child logged it once the put returned) is
        // still there; a delete may come back (the folder does not sync it).
        var lastPut: [String: Bool] = [:]
        for line in Child.lines(copy.file("log")) {
            if line.hasPrefix("put ") { lastPut[String(line.dropFirst(4))] = true }
            if line.hasPrefix("deleted ") { lastPut[String(line.dropFirst(8))] = false }
        }
        for (path, put) in lastPut.sorted(by: { $0.key < $1.key }) where put {
            expect(try await folder.get(path) != nil, "\(path) is gone, though the folder acknowledged its put")
        }
        // The next syncs, the fault gone, succeed; A, B and a new replica converge.
        let stores = try ["a.db", "b.db", "c.db"].map { try Store(path: copy.file($0)) }
        let engines = stores.map { SyncEngine(store: $0, remote: folder, key: key, storeID: storeID) }
        for _ in 0..<2 { for engine in engines { try await engine.sync() } }
        let dumps = try stores.map { try $0.canonicalDump() }
        expect(Set(dumps).count == 1, "A, B and a new replica did not converge")
        let final = try stores[2].state()
        expect(final.records.count == 5, "the new replica holds \(final.records.count) records, not 5")
        for reference in final.fileReferences {
            let bytes = try stores[2].blobs.bytes(reference.file.hash)
            expect(ContentHasher.hash(bytes) == reference.file.hash, "file \(reference.file.hash.hex) is not whole on the new replica")
        }
        let doctor = try await engines[2].doctor()
        expect(doctor.isHealthy, "doctor after the syncs: \(doctor.problems.map { "\($0.kind) \($0.path)" })")
        return held
    }
}
