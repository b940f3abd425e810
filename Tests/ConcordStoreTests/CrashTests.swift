import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// The child process the crash and disk tests drive (the `ConcordTorture` target).
enum Child {
    static var executable: String {
        URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ConcordTorture").path
    }

    /// Starts the child with `arguments`; returns the process.
    static func start(_ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func lines(_ log: String) -> [String] {
        ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
    }
}

@Suite(.serialized) struct CrashTests {
    /// Kills, at random moments, a child process that writes, seals and applies deltas — at
    /// least 100 times, a fifth of them at least inside a step. After each kill the file
    /// passes `PRAGMA integrity_check`, reopens, and holds the state before or after the
    /// interrupted transaction, with exactly the outbox, sealed bytes, applied seqs and
    /// clock that state implies.
    @Test func sigkillAtRandomMomentsLosesNothing() throws {
        let kills = Int(ProcessInfo.processInfo.environment["CONCORD_KILLS"] ?? "") ?? 100
        var random = SeededGenerator(seed: UInt64(ProcessInfo.processInfo.environment["CONCORD_SEED"] ?? "") ?? 7)
        var interruptedMidTransaction = 0
        for iteration in 0..<kills {
            let directory = TemporaryDirectory("crash")
            let seed = UInt64(iteration + 1)
            let path = directory.file("store.db")
            let log = directory.file("log")
            let child = try Child.start(["crash", path, log, String(seed), "3000"])
            // Wait until the child is running its script, then kill it a little later.
            var waited = 0
            while !Child.lines(log).contains(where: { $0.hasPrefix("begin") }) && waited < 5_000 {
                usleep(1_000)
                waited += 1
            }
            usleep(UInt32(random.int(0...30_000)))
            kill(child.processIdentifier, SIGKILL)
            child.waitUntilExit()
            let lines = Child.lines(log)
            guard let replicaLine = lines.first(where: { $0.hasPrefix("replica ") }),
                  let replicaID = ReplicaID(hex: replicaLine.dropFirst(8)) else {
                Issue.record("iteration \(iteration): the child never opened its store: \(lines)")
                continue
            }
            #expect(!lines.contains("finished"), "iteration \(iteration): the child finished before the kill")
            let done = lines.compactMap { $0.hasPrefix("done ") ? Int($0.dropFirst(5)) : nil }.last ?? 0
            let begun = lines.compactMap { $0.hasPrefix("begin ") ? Int($0.dropFirst(6)) : nil }.last ?? 0
            if begun > done { interruptedMidTransaction += 1 }

            let integrity = try DatabaseQueue(path: path).read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check") }
            #expect(integrity == ["ok"], "iteration \(iteration): \(integrity)")

            let store = try Store(path: path, configuration: .init(clock: ManualClock()))
            #expect(store.replicaID == replicaID)
            let script = TortureScript(seed: seed, count: 3000)
            var matched = false
            for candidate in Set([done, begun]).sorted() {
                var replica = Replica(id: replicaID)
                var sealed: [Delta] = []
                var applied: [ReplicaID: UInt64] = [:]
                try script.replay(&replica, through: candidate, sealed: &sealed, applied: &applied)
                // The state, the outbox (no entry lost or duplicated), every sealed delta's
                // bytes, the applied seqs and the clock must all be those of one step:
                // before or after the interrupted one.
                let storeSealed = try (0..<Int(store.sealedSeq())).map { try store.sealedDelta(seq: UInt64($0 + 1)) }
                if try store.state() == replica.state, try store.pendingSlots() == replica.outbox,
                   storeSealed == sealed.map { Optional(DeltaCodec.encode($0)) },
                   try store.appliedSeqs() == applied, try store.clockValue() == replica.clock.latest {
                    matched = true
                }
            }
            #expect(matched, "iteration \(iteration) (seed \(seed)): state, outbox and seals after the kill are those of neither step \(done) nor \(begun)")
        }
        // A real share of the kills landed inside a step's transaction, not only between.
        #expect(interruptedMidTransaction * 5 >= kills, "only \(interruptedMidTransaction) of \(kills) kills interrupted a step")
        print("crash test: \(interruptedMidTransaction) of \(kills) kills interrupted a step")
    }

    /// A disk that fills (a file-size limit on the child process): the failing write gets a
    /// typed storage error, leaves nothing half-done, and every acknowledged write survives.
    @Test func fullDiskFailsTheWriteAndKeepsEverythingAcknowledged() throws {
        let directory = TemporaryDirectory("full")
        let path = directory.file("store.db")
        let log = directory.file("log")
        _ = try Store(path: path)  // created before the limit applies
        let child = try Child.start(["full", path, log, String(600_000)])
        child.waitUntilExit()
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
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/unshare")
        process.arguments = ["--mount", "--propagation", "private", Child.executable, "tmpfs", mountPoint, log]
        try process.run()
        process.waitUntilExit()
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
