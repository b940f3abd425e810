import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Testing

/// The adaptive poll and the commit probe in virtual time (``VirtualScheduler``), and the
/// poll alone converging two replicas in real time.
extension LiveSyncTests {
    /// Idle pulls back off from the fastest interval to the slowest, one listing each; a
    /// change pulled from another replica, or a local commit, brings the fastest back.
    @Test func theAdaptivePollBacksOffWhenIdleAndQuickensAfterActivity() async throws {
        let (fleet, counting) = try await Fleet.wrapped(count: 2) { FaultyRemote(wrapping: $0, seed: 5) }
        // A replica that holds something: an empty one also looks for a snapshot to start from.
        try fleet.stores[0].set(Self.note(0), "title", .string("first"))
        try await fleet.engines[0].sync()
        let scheduler = VirtualScheduler(fleet.clock)
        var configuration = AutoSync.Configuration(
            pushDebounce: 2_000, pullInterval: 60_000, backoff: Backoff(base: 1_000, max: 16_000, jitter: 0), syncOnStart: true)
        configuration.pullAfterActivity = 1_000
        let auto = AutoSync(engine: fleet.engines[0], configuration: configuration, scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        var t = scheduler.now()
        await auto.start()
        guard case .synced = try await next(&events) else { Issue.record("the start sync failed"); return }
        for expected: UInt64 in [2_000, 4_000, 8_000, 16_000, 32_000, 60_000, 60_000] {
            #expect(await auto.status.pullInterval == expected)
            try await expectPlan(auto, scheduler, t + expected)
            let before = counting.counts.requests
            scheduler.advance(by: expected)
            t += expected
            guard case let .synced(report) = try await next(&events) else { Issue.record("an idle pull failed"); return }
            #expect(report.applied == 0 && report.pushed == 0)
            #expect(counting.counts.requests == before + 1, "an idle poll is one listing: \(counting.counts)")
        }
        // Another replica's change, pulled: the next pull comes after the fastest interval.
        try fleet.stores[1].set(Self.note(1), "title", .string("from device1"))
        try await fleet.engines[1].sync()
        try await expectPlan(auto, scheduler, t + 60_000)
        scheduler.advance(by: 60_000)
        t += 60_000
        guard case let .synced(pulled) = try await next(&events) else { Issue.record("the pull failed"); return }
        #expect(pulled.applied == 1)
        #expect(await auto.status.pullInterval == 1_000)
        try await expectPlan(auto, scheduler, t + 1_000)
        // One idle pull doubles it; a local commit brings the fastest back.
        scheduler.advance(by: 1_000)
        _ = try await next(&events)
        #expect(await auto.status.pullInterval == 2_000)
        try fleet.stores[0].set(Self.note(2), "title", .string("mine"))
        await settle(auto) { $0.counters.localChanges == 1 }
        #expect(await auto.status.pullInterval == 1_000)
        await auto.stop()
    }

    /// A thousand commits another writer of the store file makes in a burst — another
    /// process, here another `Store` of the same file, whose commits no change stream of
    /// this one reports — are found by the commit probe and pushed as one batch. (The probe
    /// is the store's own poll, which looks in real time, not on the loop's scheduler: it
    /// may look several times during the burst; the push waits for the scheduler.)
    @Test func aBurstOfCommitsFromAnotherWriterIsOneBatch() async throws {
        let fleet = try await Fleet(count: 2)
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        var configuration = AutoSync.Configuration(pushDebounce: 50, pushMaxDelay: 1_000, pullInterval: 60_000, syncOnStart: false)
        configuration.commitProbeInterval = 100
        let auto = AutoSync(engine: fleet.engines[0], configuration: configuration, scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        await scheduler.waitForDeadlines([t0 + 60_000])  // the pull

        let other = try Store(path: fleet.stores[0].path, configuration: .init(clock: fleet.clock))
        for index in 0..<1_000 { try other.set(Self.note(index), "title", .string("burst \(index)")) }
        #expect(await auto.status.counters.localChanges == 0, "this store's change stream does not see another writer's commits")
        await settle(auto) { $0.counters.probedCommits >= 1 }
        try await expectPlan(auto, scheduler, t0 + 50)
        scheduler.advance(by: 50)
        guard case let .synced(report) = try await next(&events) else { Issue.record("the push failed"); return }
        #expect(report.pushed == 1)
        let counters = await auto.status.counters
        #expect(counters.pushSyncs == 1 && counters.batchesPushed == 1, "\(counters)")
        #expect(try await fleet.remote.list(prefix: RemoteLayout.batchesPrefix(fleet.stores[0].replicaID)).count == 1)
        #expect(try await fleet.engines[1].sync().applied == 1)
        #expect(try fleet.stores[1].records(in: "notes").count == 1_000)
        await auto.stop()
    }

    /// A push seals what was pending when it began, once, however busy the writer: a burst
    /// still being written is not sealed a few writes at a time (it was: a push's seal loop
    /// went on while writes kept landing, 727 batches for a 1,000-write burst). What lands
    /// meanwhile goes with the next push, and nothing is lost.
    @Test func aPushSealsWhatWasPendingNotABurstStillBeingWritten() async throws {
        var fleet = try await Fleet(count: 1)
        let store = fleet.stores[0]
        try store.set(Self.note(0), "title", .string("before the push"))
        let writing = Task.detached {
            for index in 1...2_000 { try store.set(Self.note(index), "title", .string("burst \(index)")) }
        }
        let during = try await fleet.engines[0].sync()
        #expect(during.pushed == 1, "one seal of what was pending, not one per few writes")
        try await writing.value
        #expect(try await fleet.engines[0].sync().pushed <= 1)
        try await fleet.add(name: "reader")
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].records(in: "notes").count == 2_001)
    }

    /// With no watcher, two live loops that only poll still converge: each sees the
    /// other's write.
    @Test func withoutNotificationsThePollStillConverges() async throws {
        let fleet = try await Fleet(count: 2)
        var loops: [AutoSync] = []
        for engine in fleet.engines {
            let auto = AutoSync(engine: engine, configuration: .live(slowestPull: 2_000))
            await auto.start()
            loops.append(auto)
        }
        try fleet.stores[0].set(Self.note(0), "title", .string("from device0"))
        try fleet.stores[1].set(Self.note(1), "title", .string("from device1"))
        let converged = try await Self.eventually {
            try fleet.stores.allSatisfy { store in try store.record(Self.note(0)) != nil && store.record(Self.note(1)) != nil }
        }
        #expect(converged, "both replicas hold both writes")
        for auto in loops {
            #expect(await !auto.status.isWatching)
            await auto.stop()
        }
    }
}
