import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import Foundation
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The child process the crash and disk tests drive (the `ConcordCrashChild` target).
enum Child {
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ConcordCrashChild").path
    }

    /// Starts the child with `arguments`.
    static func start(_ arguments: [String]) throws -> Subprocess {
        try Subprocess.start(executable, arguments)
    }

    /// Runs `executable` with `arguments` to its end without holding a thread of the
    /// concurrency pool while it runs (tests that run hundreds of children must not starve
    /// it); returns its exit status, or the number of the signal that ended it.
    static func finish(_ executable: String, _ arguments: [String], environment: [String: String]? = nil) async throws -> Int32 {
        try await Subprocess.start(executable, arguments, environment: environment).finish().status
    }

    static func lines(_ log: String) -> [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

@Suite(.serialized) struct CrashTests {
    /// Kills, at random moments, a child process that writes, attaches files, seals and
    /// applies deltas — at least 100 times, a fifth of them at least inside a step. After
    /// each kill the file passes `PRAGMA integrity_check`, reopens, and holds the state
    /// before or after the interrupted transaction, with exactly the outbox, sealed bytes,
    /// applied seqs, clock and file history that state implies; every file the state or
    /// its history refers to is in the blob directory, and every blob there is whole.
    @Test func sigkillAtRandomMomentsLosesNothing() throws {
        let kills = Int(ProcessInfo.processInfo.environment["CONCORD_KILLS"] ?? "") ?? 100
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["CONCORD_SEED"] ?? "") ?? 7)
        var interruptedMidTransaction = 0
        var filesChecked = 0
        var versionsChecked = 0
        for iteration in 0..<kills {
            let directory = TemporaryDirectory("crash")
            let seed = UInt64(iteration + 1)
            let path = directory.file("store.db")
            let log = directory.file("log")
            let child = try Child.start(["crash", path, log, String(seed), "3000"])
            // Wait until the child is running its script, then kill it a little later. Every
            // tenth kill waits for step 300 first, so that however slow the machine, some
            // kills land where files were attached and superseded (a history to check).
            let firstStep = iteration % 10 == 9 ? 300 : 1
            var waited = 0
            while !Child.lines(log).contains(where: { $0.hasPrefix("begin ") && Int($0.dropFirst(6)) ?? 0 >= firstStep }) && waited < 5_000 {
                usleep(1_000)
                waited += 1
            }
            usleep(UInt32(random.int(0...30_000)))
            child.kill()
            child.wait()
            #expect(!Child.lines(log).contains("finished"), "iteration \(iteration): the child finished before the kill")
            guard let outcome = try Self.checkAfterKill(path: path, log: log, seed: seed, count: 3000, label: "iteration \(iteration)") else {
                Issue.record("iteration \(iteration): the child never opened its store: \(Child.lines(log))")
                continue
            }
            if outcome.interrupted { interruptedMidTransaction += 1 }
            filesChecked += outcome.files
            versionsChecked += outcome.versions
        }
        // A real share of the kills landed inside a step's transaction, not only between.
        #expect(interruptedMidTransaction * 5 >= kills, "only \(interruptedMidTransaction) of \(kills) kills interrupted a step")
        #expect(filesChecked > 0 && versionsChecked > 0, "no kill left a file (\(filesChecked)) or a file version (\(versionsChecked)) to check")
        print("crash test: \(interruptedMidTransaction) of \(kills) kills interrupted a step; \(filesChecked) file references and \(versionsChecked) file versions checked")
    }

    /// What a check after a kill found: whether the kill interrupted a step, and how many
    /// file references and file versions it checked.
    struct KillOutcome {
        /// Whether the store held exactly the state of the step before or after the kill.
        let matched: Bool
        let interrupted: Bool
        let files: Int
        let versions: Int
    }

    /// Checks the store the crash child left at `path` after it was killed running the crash
    /// script of `seed` and `count` steps: `PRAGMA integrity_check` is ok, the store reopens
    /// with its replica id, and its state, outbox (no entry lost or doubled), sealed bytes,
    /// applied seqs, clock and file history are exactly those of the step before or after
    /// the interrupted one; every file referenced is whole in the blob directory and no blob
    /// there is half-written under its final name. Records an issue naming `label` for each
    /// failure; nil when the child never opened its store.
    /// ``checkAfterKill(path:log:seed:count:label:)`` for the enumerations: a child stopped
    /// while the store was being created leaves whatever is there openable, which counts as
    /// recovered (and not interrupted within a step).
    static func recovery(path: String, log: String, seed: UInt64, count: Int, label: String) throws -> KillOutcome {
        if let outcome = try checkAfterKill(path: path, log: log, seed: seed, count: count, label: label) { return outcome }
        _ = try Store(path: path)
        return KillOutcome(matched: true, interrupted: false, files: 0, versions: 0)
    }

    static func checkAfterKill(path: String, log: String, seed: UInt64, count: Int, label: String) throws -> KillOutcome? {
        let lines = Child.lines(log)
        guard let replicaLine = lines.first(where: { $0.hasPrefix("replica ") }),
              let replicaID = ReplicaID(hex: replicaLine.dropFirst(8)) else {
            return nil
        }
        let done = lines.compactMap { $0.hasPrefix("done ") ? Int($0.dropFirst(5)) : nil }.last ?? 0
        let begun = lines.compactMap { $0.hasPrefix("begin ") ? Int($0.dropFirst(6)) : nil }.last ?? 0

        let integrity = try DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"], "\(label): \(integrity)")

        let store = try Store(path: path, configuration: .init(clock: ManualClock()))
        #expect(store.replicaID == replicaID)
        let script = CrashScript(seed: seed, count: count)
        var matched = false
        for candidate in Set([done, begun]).sorted() {
            var replica = Replica(id: replicaID)
            var sealed: [Delta] = []
            var applied: [ReplicaID: UInt64] = [:]
            var superseded: [CrashScript.Superseded] = []
            try script.replay(&replica, through: candidate, fileRef: Self.fileRef, sealed: &sealed, applied: &applied, superseded: &superseded)
            // The state, the outbox (no entry lost or duplicated), every sealed delta's
            // bytes, the applied seqs, the clock and the file history must all be those
            // of one step: before or after the interrupted one.
            let storeSealed = try (0..<Int(store.sealedSeq())).map { try store.sealedBatch(seq: UInt64($0 + 1))?.bytes }
            if try store.state() == replica.state, try store.pendingSlots() == replica.outbox,
               storeSealed == sealed.map({ Optional(DeltaCodec.encode($0)) }),
               try store.appliedSeqs() == applied, try store.clockValue() == replica.clock.observed,
               try Self.history(of: store) == Set(superseded) {
                matched = true
            }
        }
        #expect(matched, "\(label) (seed \(seed)): state, outbox, seals or history after the kill are those of neither step \(done) nor \(begun)")
        // The declared table (declared before the first step) equals the pivot of the state
        // that survived.
        if begun >= 1 { #expect(try store.declaration(of: CrashScript.collection) != nil, "\(label): the declaration did not survive") }
        try DeclaredTableTests.check(store, label)
        // Every file the state or its history refers to is in the blob directory, whole;
        // no blob there is half-written under its final name.
        let referenced = Set(try store.state().fileReferences.map(\.file.hash)).union(try Self.history(of: store).map(\.file.hash))
        for hash in referenced {
            #expect(store.blobs.contains(hash), "\(label): file \(hash.hex) is referenced but missing")
        }
        for (hash, bytes) in try Self.blobs(in: store) {
            #expect(ContentHasher.hash(bytes) == hash, "\(label): blob \(hash.hex) holds other bytes")
        }
        return KillOutcome(matched: matched, interrupted: begun > done, files: referenced.count, versions: try Self.history(of: store).count)
    }

    /// The file a crash script's bytes become in a store.
    static func fileRef(_ bytes: [UInt8]) -> FileRef {
        FileRef(hash: ContentHasher.hash(bytes), size: UInt64(bytes.count))
    }

    /// Every file version the store's history holds for the crash script's records.
    static func history(of store: Store) throws -> Set<CrashScript.Superseded> {
        var versions: Set<CrashScript.Superseded> = []
        for ref in (0..<6).map({ RecordRef(collection: "t", id: "r\($0)") }) {
            for version in try store.versions(ref, "f") {
                versions.insert(CrashScript.Superseded(ref: ref, field: "f", file: version.file, stamp: version.stamp, at: version.supersededAt))
            }
        }
        return versions
    }

    /// The blobs in the store's blob directory, by the hash their name says, with their bytes.
    static func blobs(in store: Store) throws -> [(ContentHash, [UInt8])] {
        var found: [(ContentHash, [UInt8])] = []
        let root = store.blobs.directory
        for folder in try FileManager.default.contentsOfDirectory(atPath: root) where folder != "tmp" {
            for name in (try? FileManager.default.contentsOfDirectory(atPath: root + "/" + folder)) ?? [] {
                guard let hash = ContentHash(hex: name), name.hasPrefix(folder) else { continue }
                found.append((hash, Array(FileManager.default.contents(atPath: root + "/" + folder + "/" + name) ?? Data())))
            }
        }
        return found
    }

    /// Two child processes, each with its own store, write (every third write with a
    /// file), sync after each write and compact every fifth, at once through one folder;
    /// both are killed at random moments — 50 times, each new child continuing the store
    /// the last one left. Then both stores reopen, pass `integrity_check`, and sync with a
    /// new replica: all three hold every acknowledged write with its value and file, their
    /// dumps are identical, and `doctor` finds no problem. Most kills land inside a sync.
    @Test func sigkillDuringConcurrentSyncsLosesNothingAndConverges() async throws {
        let rounds = Int(ProcessInfo.processInfo.environment["CONCORD_SYNC_KILLS"] ?? "") ?? 50
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["CONCORD_SEED"] ?? "") ?? 11)
        let directory = TemporaryDirectory("sync-crash")
        let root = directory.file("remote")
        let folder = try FolderRemote(root: root, createIfMissing: true)
        _ = try await SyncEngine.createRemote(folder, passphrase: "crash-child", limits: .minimum)
        let names = ["a", "b"]
        var acknowledged: [String: Set<Int>] = ["a": [], "b": []]
        var kills = 0
        var killedInSync = 0
        for round in 0..<rounds {
            var children: [(name: String, log: String, process: Subprocess)] = []
            for name in names {
                let log = directory.file("\(name)\(round).log")
                let next = (acknowledged[name]!.max() ?? -1) + 1
                children.append((name, log, try Child.start(["sync", directory.file("\(name).db"), log, root, name, String(next)])))
            }
            var waited = 0
            while children.contains(where: { !Child.lines($0.log).contains("started") }) && waited < 10_000 {
                usleep(1_000)
                waited += 1
            }
            for child in children.shuffled(using: &random) {
                usleep(UInt32(random.int(0...40_000)))
                child.process.kill()
                child.process.wait()
                kills += 1
                let lines = Child.lines(child.log)
                #expect(!lines.contains { $0.hasPrefix("error") }, "round \(round) \(child.name): \(lines.suffix(3))")
                for line in lines where line.hasPrefix("wrote ") { acknowledged[child.name]!.insert(Int(line.dropFirst(6))!) }
                if lines.last?.hasPrefix("wrote ") == true { killedInSync += 1 }
            }
        }
        let total = acknowledged.values.map(\.count).reduce(0, +)
        #expect(acknowledged.values.allSatisfy { $0.count > rounds / 2 }, "acknowledged: \(acknowledged.mapValues(\.count))")
        #expect(killedInSync * 2 >= kills, "only \(killedInSync) of \(kills) kills landed inside a sync")
        print("sync crash test: \(total) acknowledged writes, \(killedInSync) of \(kills) kills inside a sync")

        for name in names {
            let queue = try DatabaseQueue(path: directory.file("\(name).db"))
            let integrity = try await queue.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            #expect(integrity == ["ok"], "\(name): \(integrity)")
        }
        let (key, storeID) = try await SyncEngine.unlock(folder, passphrase: "crash-child")
        let stores = try (names + ["newcomer"]).map { try Store(path: directory.file("\($0).db")) }
        let engines = stores.map { SyncEngine(store: $0, remote: folder, key: key, storeID: storeID) }
        for _ in 0..<3 { for engine in engines { try await engine.sync() } }
        for store in stores {
            for (name, indices) in acknowledged {
                for index in indices.sorted() {
                    let fields = try store.record(RecordRef(collection: "notes", id: "\(name)-\(index)"))
                    #expect(fields?.first { $0.name == "v" }?.value == .scalar(.int(Int64(index))), "\(name)-\(index) lost")
                    guard index % 3 == 0 else { continue }
                    guard case let .file(file)? = fields?.first(where: { $0.name == "f" })?.value else {
                        Issue.record("\(name)-\(index) lost its file")
                        continue
                    }
                    #expect(try store.blobs.bytes(file.hash) == Array("file \(name)-\(index)".utf8))
                }
            }
        }
        #expect(Set(try stores.map { try $0.canonicalDump() }).count == 1)
        let doctor = try await engines[2].doctor()
        #expect(doctor.isHealthy, "\(doctor.problems)")
    }

    /// A disk that fills (a file-size limit on the child process): the failing write gets a
    /// typed storage error, leaves nothing half-done, and every acknowledged write survives.
    @Test func fullDiskFailsTheWriteAndKeepsEverythingAcknowledged() throws {
        let directory = TemporaryDirectory("full")
        let path = directory.file("store.db")
        let log = directory.file("log")
        _ = try Store(path: path)  // created before the limit applies
        try Child.start(["full", path, log, String(600_000)]).wait()
        let lines = Child.lines(log)
        let failure = try #require(lines.first { $0.hasPrefix("failed ") }, "\(lines)")
        #expect(failure.hasPrefix("failed storage "), "\(failure)")
        #expect(failure.contains("full") || failure.contains("I/O"), "\(failure)")
        let blob = try #require(lines.first { $0.hasPrefix("blob ") })
        #expect(blob.hasPrefix("blob storage "), "\(blob)")
        let acknowledged = try #require(Int(failure.split(separator: " ")[2]))
        #expect(acknowledged > 10)

        let integrity = try DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == ["ok"])
        let store = try Store(path: path)
        #expect(try store.records(in: "big").count == acknowledged)
        #expect(try store.blobs.all().isEmpty)
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: store.blobs.directory + "/tmp")
        #expect(leftovers.isEmpty, "partial blob left behind: \(leftovers)")
    }

    /// A real small disk (a 1 MiB tmpfs in a private mount namespace): filling it fails the
    /// write with a typed storage error naming the full disk; remounted read-only, the store
    /// still reads but refuses writes (or, without its journal files, refuses to open) with
    /// an error naming the read-only disk; writable again, it holds
    /// exactly what was acknowledged. Needs permission to create mount namespaces, which
    /// CI's root user has.
    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func smallDiskFullThenReadOnly() throws {
        let directory = TemporaryDirectory("tmpfs")
        let mountPoint = directory.file("mnt")
        try FileManager.default.createDirectory(atPath: mountPoint, withIntermediateDirectories: true)
        let log = directory.file("log")
        try Subprocess.run("/usr/bin/unshare", ["--mount", "--propagation", "private", Child.executable, "tmpfs", mountPoint, log])
        let lines = Child.lines(log)
        #expect(!lines.contains { $0.hasPrefix("error") }, "\(lines)")
        let full = try #require(lines.first { $0.hasPrefix("full ") }, "\(lines)")
        #expect(full.hasPrefix("full storage ") && full.contains("disk is full"), "\(full)")
        let acknowledged = try #require(Int(full.split(separator: " ")[2]))
        #expect(acknowledged > 10)
        let dumps = lines.filter { $0.hasPrefix("dump ") }
        #expect(dumps.count >= 2 && Set(dumps).count == 1, "\(lines)")
        #expect(dumps.first?.hasSuffix(" \(acknowledged)") == true, "\(dumps)")
        let readOnly = try #require(lines.first { $0.hasPrefix("readonly ") })
        #expect(readOnly.hasPrefix("readonly storage ") && readOnly.contains("read-only"), "\(readOnly)")
        #expect(lines.contains("blobs 1"))
    }
}
