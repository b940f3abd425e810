import ConcordCore
import ConcordRemote
import ConcordTesting
import Testing

@Suite struct FaultyRemoteTests {
    let base = MemoryRemote()

    func faulty(_ plan: FaultyRemote.Plan, seed: UInt64 = 1) -> FaultyRemote {
        FaultyRemote(wrapping: base, seed: seed, plan: plan)
    }

    func head(_ seq: UInt64) -> String { RemoteLayout.head(Sample.a, seq: seq) }

    /// A stream source of `chunks` chunks of 10 000 bytes.
    static func source(_ chunks: Int) -> ([UInt8], () throws(ConcordError) -> [UInt8]) {
        let whole = Sample.bytes(chunks * 10_000, salt: 5)
        var next = 0
        return (whole, { () throws(ConcordError) -> [UInt8] in
            defer { next += 1 }
            return next < chunks ? Array(whole[next * 10_000..<(next + 1) * 10_000]) : []
        })
    }

    @Test func withFaultsOffItConformsAndOnlyCounts() async throws {
        let folder = TemporaryFolder()
        let remote = FaultyRemote(wrapping: try FolderRemote(root: folder.path), seed: 9, plan: .uniform(1))
        remote.faultsOff()
        #expect(await RemoteConformance.check(remote) == [])
        #expect(remote.log.isEmpty)
        let counts = remote.counts
        #expect(counts.requests > 50)
        #expect(counts.failed + counts.slow + counts.lostPuts + counts.tornPuts + counts.staleListings == 0)
    }

    @Test func countsEveryRequestByKind() async throws {
        let remote = faulty(.none)
        try await remote.put(head(1), [1])
        _ = try await remote.get(head(1))
        _ = try await remote.get(head(2))
        _ = try await remote.list(prefix: "heads/")
        try await remote.delete(head(1))
        try await remote.putStream(head(3)) { () throws(ConcordError) -> [UInt8] in [] }
        _ = try await remote.getStream(head(3)) { (_: [UInt8]) throws(ConcordError) in }
        await #expect(throws: ConcordError.self) { try await remote.get("../x") }
        var expected = FaultyRemote.Counts()
        (expected.puts, expected.gets, expected.lists, expected.deletes, expected.putStreams, expected.getStreams) = (1, 3, 1, 1, 1, 1)
        #expect(remote.counts == expected)
        #expect(remote.counts.requests == 8)
        #expect(remote.counts.mutations == 3)
        remote.resetCounts()
        #expect(remote.counts == FaultyRemote.Counts())
    }

    /// A bounded get goes to the wrapped remote with its limit (so a folder's bound on
    /// memory holds through the wrapper), and its faults still apply.
    @Test func aBoundedGetForwardsItsLimitAndStillFails() async throws {
        let folder = TemporaryFolder()
        let inner = try FolderRemote(root: folder.path)
        try await inner.put(head(1), Sample.bytes(50))
        let remote = FaultyRemote(wrapping: inner, seed: 3, plan: .none)
        #expect(try await remote.get(head(1), limit: 50) == Sample.bytes(50))
        let over = try await #require(throws: ConcordError.self) { try await remote.get(head(1), limit: 49) }
        #expect(over.code == .limitExceeded)
        #expect(remote.counts.gets == 2)
        let failing = FaultyRemote(wrapping: inner, seed: 3, plan: FaultyRemote.Plan(failure: 1))
        let failed = try await #require(throws: ConcordError.self) { try await failing.get(head(1), limit: 50) }
        #expect(failed.code == .remote)
        #expect(failing.counts.failed == 1)
    }

    @Test func failedCallsThrowAndDoNothing() async throws {
        try await base.put(head(1), [1])
        let remote = faulty(FaultyRemote.Plan(failure: 1))
        let error = try await #require(throws: ConcordError.self) { try await remote.put(head(2), [2]) }
        #expect(error.code == .remote)
        await #expect(throws: ConcordError.self) { try await remote.delete(head(1)) }
        await #expect(throws: ConcordError.self) { try await remote.get(head(1)) }
        await #expect(throws: ConcordError.self) { try await remote.list(prefix: "") }
        var pulled = false
        await #expect(throws: ConcordError.self) {
            try await remote.putStream(head(3)) { () throws(ConcordError) -> [UInt8] in pulled = true; return [] }
        }
        #expect(!pulled)
        #expect(base.contents == [head(1): [1]])
        #expect(remote.counts.failed == 5)
        #expect(remote.log.count == 5)
    }

    @Test func slowCallsAreCountedAndStillDone() async throws {
        let remote = faulty(FaultyRemote.Plan(slow: 1, slowDelay: .milliseconds(2)))
        try await remote.put(head(1), [1])
        #expect(try await remote.get(head(1)) == [1])
        #expect(remote.counts.slow == 2)
    }

    @Test func lostPutsReportSuccessAndWriteNothing() async throws {
        let remote = faulty(FaultyRemote.Plan(lostPut: 1))
        try await remote.put(head(1), [1, 2])
        let (_, read) = Self.source(3)
        try await remote.putStream(head(2), read: read)
        #expect(base.contents.isEmpty)
        #expect(remote.counts.lostPuts == 2)
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func tornPutsWriteAStrictPrefixThenThrow(seed: UInt64) async throws {
        let remote = faulty(FaultyRemote.Plan(tornPut: 1), seed: seed)
        let bytes = Sample.bytes(100)
        let error = try await #require(throws: ConcordError.self) { try await remote.put(head(1), bytes) }
        #expect(error.code == .remote)
        let stored = try #require(base.contents[head(1)])
        #expect(stored.count < bytes.count && Array(bytes.prefix(stored.count)) == stored, "seed \(seed)")

        let (whole, read) = Self.source(5)
        await #expect(throws: ConcordError.self) { try await remote.putStream(head(2), read: read) }
        let streamed = try #require(base.contents[head(2)])
        #expect(streamed.count < whole.count && Array(whole.prefix(streamed.count)) == streamed, "seed \(seed)")

        // An empty object cannot be torn: it is written whole.
        try await remote.put(head(3), [])
        #expect(base.contents[head(3)] == [])
        #expect(remote.counts.tornPuts == 2)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func tornPutsCanReportSuccess(seed: UInt64) async throws {
        let remote = faulty(FaultyRemote.Plan(tornPut: 1, tornPutReportsSuccess: true), seed: seed)
        let bytes = Sample.bytes(100)
        try await remote.put(head(1), bytes)
        let stored = try #require(base.contents[head(1)])
        #expect(stored.count < bytes.count && Array(bytes.prefix(stored.count)) == stored)
        let (whole, read) = Self.source(4)
        try await remote.putStream(head(2), read: read)
        let streamed = try #require(base.contents[head(2)])
        #expect(streamed.count < whole.count && Array(whole.prefix(streamed.count)) == streamed)
    }

    @Test func lostAcknowledgementsThrowAfterDoingIt() async throws {
        let remote = faulty(FaultyRemote.Plan(lostAcknowledgement: 1))
        await #expect(throws: ConcordError.self) { try await remote.put(head(1), [1]) }
        #expect(base.contents[head(1)] == [1])
        await #expect(throws: ConcordError.self) { try await remote.delete(head(1)) }
        #expect(base.contents.isEmpty)
        #expect(remote.counts.lostAcknowledgements == 2)
    }

    @Test func lostDeletesKeepTheObject() async throws {
        try await base.put(head(1), [1])
        let remote = faulty(FaultyRemote.Plan(lostDelete: 1))
        try await remote.delete(head(1))
        #expect(base.contents[head(1)] == [1])
        #expect(remote.counts.lostDeletes == 1)
    }

    @Test func staleListingsReturnAnEarlierListingOfThePrefix() async throws {
        let remote = faulty(.none)
        try await remote.put(head(1), [1])
        #expect(try await remote.list(prefix: "heads/").map(\.path) == [head(1)])
        try await remote.put(head(2), [2])
        try await remote.put(RemoteLayout.batch(Sample.a, seq: 1), [3])
        remote.plan = FaultyRemote.Plan(staleListing: 1)
        // Only one earlier listing of "heads/" is remembered; a prefix never listed has none.
        #expect(try await remote.list(prefix: "heads/").map(\.path) == [head(1)])
        #expect(try await remote.list(prefix: "replicas/").map(\.path) == [RemoteLayout.batch(Sample.a, seq: 1)])
        #expect(remote.counts.staleListings == 1)
        remote.faultsOff()
        #expect(try await remote.list(prefix: "heads/").map(\.path) == [head(1), head(2)])
    }

    func fill(_ count: Int) async throws -> Set<String> {
        for seq in 1...UInt64(count) { try await base.put(head(seq), [UInt8(seq)]) }
        return Set((1...UInt64(count)).map(head))
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func incompleteListingsDropSomeEntries(seed: UInt64) async throws {
        let all = try await fill(10)
        let remote = faulty(FaultyRemote.Plan(incompleteListing: 1), seed: seed)
        let listing = try await remote.list(prefix: "heads/").map(\.path)
        #expect(listing.count < 10)
        #expect(Set(listing).isSubset(of: all))
        #expect(Set(listing).count == listing.count)
        #expect(try await remote.list(prefix: "snapshots/").isEmpty)
    }

    @Test(arguments: [UInt64(1), 2, 3])
    func duplicatedListingsRepeatEntries(seed: UInt64) async throws {
        let all = try await fill(10)
        let remote = faulty(FaultyRemote.Plan(duplicatedListing: 1), seed: seed)
        let listing = try await remote.list(prefix: "heads/").map(\.path)
        #expect(listing.count > 10)
        #expect(Set(listing) == all)
    }

    @Test func reorderedListingsShuffleEntries() async throws {
        let all = try await fill(10)
        let remote = faulty(FaultyRemote.Plan(reorderedListing: 1))
        var orders: Set<[String]> = []
        for _ in 0..<5 {
            let listing = try await remote.list(prefix: "heads/").map(\.path)
            #expect(listing.count == 10)
            #expect(Set(listing) == all)
            orders.insert(listing)
        }
        #expect(orders.count > 1 || orders.first != all.sorted())
        #expect(remote.counts.reorderedListings == 5)
    }

    @Test(arguments: [FaultyRemote.CrashEffect.dropped, .applied, .torn])
    func crashPointThenRestart(effect: FaultyRemote.CrashEffect) async throws {
        let remote = faulty(.none)
        remote.crash(afterMutations: 2, effect: effect)
        try await remote.put(head(1), [1])
        _ = try await remote.list(prefix: "")  // reads do not count toward the crash point
        try await remote.delete(head(9))
        let bytes = Sample.bytes(50)
        let crash = try await #require(throws: ConcordError.self) { try await remote.put(head(2), bytes) }
        #expect(crash.code == .simulatedCrash)
        #expect(remote.isCrashed)
        for call in 0..<3 {
            let error = try await #require(throws: ConcordError.self) {
                switch call {
                case 0: _ = try await remote.get(head(1))
                case 1: _ = try await remote.list(prefix: "")
                default: try await remote.put(head(3), [3])
                }
            }
            #expect(error.code == .simulatedCrash)
        }
        remote.faultsOff()
        #expect(remote.isCrashed, "faults stopping does not revive a dead process")
        switch effect {
        case .dropped: #expect(base.contents[head(2)] == nil)
        case .applied: #expect(base.contents[head(2)] == bytes)
        default:
            let stored = try #require(base.contents[head(2)])
            #expect(stored.count < bytes.count && Array(bytes.prefix(stored.count)) == stored)
        }
        #expect(base.contents[head(3)] == nil)
        #expect(remote.counts.crashed == 4)

        remote.restart()
        #expect(!remote.isCrashed)
        #expect(try await remote.get(head(1)) == [1])
        try await remote.put(head(2), bytes)
        #expect(base.contents[head(2)] == bytes)
    }

    @Test func crashAtTheNextMutationAndDisarming() async throws {
        let remote = faulty(.none)
        remote.crash(afterMutations: 0, effect: .applied)
        await #expect(throws: ConcordError.self) { try await remote.delete(head(1)) }
        remote.restart()
        remote.crash(afterMutations: 0)
        remote.faultsOff()  // disarms a crash point that has not fired
        try await remote.put(head(1), [1])
        #expect(!remote.isCrashed)
        let (whole, read) = Self.source(3)
        remote.crash(afterMutations: 0, effect: .applied)
        await #expect(throws: ConcordError.self) { try await remote.putStream(head(2), read: read) }
        #expect(base.contents[head(2)] == whole)
    }

    /// A fixed script of calls against a fresh remote: every outcome, the log and the final
    /// contents, as text.
    static func run(seed: UInt64) async -> [String] {
        let base = MemoryRemote()
        let remote = FaultyRemote(wrapping: base, seed: seed, plan: .uniform(0.3))
        var trace: [String] = []
        var generator = SeededGenerator(seed: 1000)  // the script, the same for every seed
        for step in 0..<80 {
            let seq = UInt64(generator.int(1...6))
            let path = RemoteLayout.head(Sample.a, seq: seq)
            do throws(ConcordError) {
                switch generator.int(0...4) {
                case 0: try await remote.put(path, Sample.bytes(generator.int(0...40), salt: UInt8(step))); trace.append("put ok")
                case 1: trace.append("get \(try await remote.get(path)?.count ?? -1)")
                case 2: trace.append("list \(try await remote.list(prefix: "heads/").map { "\($0.path.suffix(1)):\($0.size ?? 0)" })")
                case 3: try await remote.delete(path); trace.append("delete ok")
                default:
                    if step % 10 == 0 { remote.crash(afterMutations: generator.int(0...3)) }
                    if remote.isCrashed { remote.restart() }
                    let (_, read) = source(generator.int(0...3))
                    try await remote.putStream(path, read: read)
                    trace.append("stream ok")
                }
            } catch {
                trace.append("threw \(error.code)")
            }
        }
        let final = base.contents.sorted { $0.key < $1.key }.map { "\($0.key.suffix(1))=\($0.value.count)" }
        return trace + remote.log + ["final \(final)", "counts \(remote.counts)"]
    }

    @Test func aSeedReplaysTheSameFaults() async {
        let first = await Self.run(seed: 42)
        let second = await Self.run(seed: 42)
        #expect(first == second)
        let other = await Self.run(seed: 43)
        #expect(first != other)
        // The run met faults of many kinds.
        let log = first.joined(separator: "\n")
        for fault in ["failed call", "lost put", "torn", "stale listing", "incomplete listing", "simulated crash"] {
            #expect(log.contains(fault), "seed 42 never produced \(fault)")
        }
    }

    /// With `drawsPerCall`, each call meets the same faults whatever order the calls start
    /// in (as concurrent calls do): puts of 24 names, then gets of them, made in order and
    /// in reverse, fail, tear and vanish the same names. Drawn in start order, they do not.
    @Test(arguments: [true, false])
    func perCallDrawsReplayInAnyOrder(drawsPerCall: Bool) async {
        func outcomes(reversed: Bool) async -> [String: String] {
            let base = MemoryRemote()
            let remote = FaultyRemote(wrapping: base, seed: 77, plan: FaultyRemote.Plan(failure: 0.2, lostPut: 0.2, tornPut: 0.2), drawsPerCall: drawsPerCall)
            let paths = (1...24).map { RemoteLayout.batch(Sample.a, seq: UInt64($0)) }
            var result: [String: String] = [:]
            for path in reversed ? paths.reversed() : paths {
                do throws(ConcordError) {
                    try await remote.put(path, Sample.bytes(64, salt: 1))
                    result[path] = "put"
                } catch {
                    result[path] = "put threw"
                }
            }
            for path in reversed ? paths.reversed() : paths {
                var got = "threw"
                if let bytes = try? await remote.get(path) { got = "\(bytes.count)" } else if (try? await base.get(path)) == nil { got = "none" }
                result[path]! += ", stored \(base.contents[path]?.count ?? -1), got \(got)"
            }
            return result
        }
        let forward = await outcomes(reversed: false)
        let backward = await outcomes(reversed: true)
        #expect(Set(forward.values).count > 2, "the faults must vary by call: \(forward)")
        if drawsPerCall {
            #expect(forward == backward)
        } else {
            #expect(forward != backward)
        }
    }

    @Test func rollbackBringsBackAnEarlierCopyOfThePrefix() async throws {
        let remote = faulty(.none)
        try await remote.put(head(1), [1])
        try await remote.put(RemoteLayout.batch(Sample.a, seq: 1), [1, 1])
        let copy = try await remote.copy(prefix: "heads/")
        let whole = try await remote.copy()
        // Written, changed and deleted since the copies were taken.
        try await remote.put(head(2), [2])
        try await remote.delete(head(1))
        try await remote.put(RemoteLayout.batch(Sample.a, seq: 2), [2, 2])
        try await remote.rollback(to: copy)
        #expect(try await base.list(prefix: "heads/").map(\.path) == [head(1)])
        #expect(try await base.get(head(1)) == [1])
        // Another prefix is untouched by a prefix rollback.
        #expect(try await base.list(prefix: "replicas/").count == 2)
        try await remote.rollback(to: whole)
        #expect(Set(try await base.list(prefix: "").map(\.path)) == Set(whole.objects.keys))
        #expect(remote.counts.rollbacks == 2)
        #expect(remote.log.contains { $0.hasPrefix("rollback") })
    }

    @Test func vanishDeletesBehindTheReplicasBacksAsTheSeedSays() async throws {
        for seq in 1...20 { try await base.put(head(UInt64(seq)), [UInt8(seq)]) }
        try await base.put(RemoteLayout.batch(Sample.a, seq: 1), [1])
        let first = faulty(.none, seed: 7)
        let gone = try await first.vanish(prefix: "heads/", probability: 0.5)
        #expect(!gone.isEmpty && gone.count < 20 && gone.allSatisfy { $0.hasPrefix("heads/") })
        #expect(try await base.list(prefix: "heads/").count == 20 - gone.count)
        #expect(try await base.get(RemoteLayout.batch(Sample.a, seq: 1)) != nil)
        #expect(first.counts.vanished == gone.count)
        // The same seed over the same objects picks the same ones.
        let again = MemoryRemote()
        for seq in 1...20 { try await again.put(head(UInt64(seq)), [UInt8(seq)]) }
        #expect(try await FaultyRemote(wrapping: again, seed: 7).vanish(prefix: "heads/", probability: 0.5) == gone)
        #expect(try await faulty(.none).vanish(prefix: "heads/", probability: 0).isEmpty)
    }
}
