import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Synchronization
import Testing

/// Automatic sync over real stores and a real folder remote, in virtual time: the scheduler's
/// clock is the fleet's ``ManualClock`` and moves only when a test advances it, and a test
/// advances it only once the loop's plan (its registered timers) is known. So every sync
/// happens at a known virtual moment, and nothing depends on how fast the machine runs.
@Suite(.timeLimit(.minutes(1))) struct AutoSyncTests {
    /// Debounce 2 s, pull every 60 s, backoff 1 s doubling to 16 s with half jitter, and no
    /// sync on start unless a test asks.
    static func configuration(
        mode: SyncMode = .twoWay, pushMaxDelay: UInt64 = 30_000, syncOnStart: Bool = false
    ) -> AutoSync.Configuration {
        AutoSync.Configuration(
            mode: mode, pushDebounce: 2_000, pushMaxDelay: pushMaxDelay, pullInterval: 60_000,
            backoff: Backoff(base: 1_000, max: 16_000, jitter: 0.5), syncOnStart: syncOnStart)
    }

    static func note(_ index: Int) -> RecordRef { RecordRef(collection: "notes", id: "n\(index)") }

    @Test func commitsWithinTheDebounceWindowMakeOnePush() async throws {
        let fleet = try await Fleet(count: 2)
        let (store, scheduler) = (fleet.stores[0], VirtualScheduler(fleet.clock))
        let t0 = scheduler.now()
        let auto = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        // Before any commit only the pull is planned.
        try await expectPlan(auto, scheduler, t0 + 60_000)

        for index in 0..<10 { try store.set(Self.note(index), "title", .string("first \(index)")) }
        await settle(auto) { $0.counters.localChanges == 10 }
        try await expectPlan(auto, scheduler, t0 + 2_000)
        // Within the window, more commits move the push back.
        scheduler.advance(by: 1_500)
        for index in 10..<20 { try store.set(Self.note(index), "title", .string("second \(index)")) }
        await settle(auto) { $0.counters.localChanges == 20 }
        try await expectPlan(auto, scheduler, t0 + 3_500)
        // Up to a millisecond before it, no timer is due, so nothing can start.
        scheduler.advance(by: 1_999)
        #expect(scheduler.deadlines == [t0 + 3_500])
        #expect(await auto.status.counters.syncs == 0)

        scheduler.advance(by: 1)
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.pushed == 1)
        let counters = await auto.status.counters
        #expect(counters.syncs == 1 && counters.pushSyncs == 1 && counters.batchesPushed == 1, "\(counters)")
        #expect(try await fleet.remote.list(prefix: RemoteLayout.batchesPrefix(store.replicaID)).count == 1)
        // Then only the pull, a full interval after the sync.
        try await expectPlan(auto, scheduler, t0 + 3_500 + 60_000)
        // The other replica gets all twenty commits in that one batch.
        #expect(try await fleet.engines[1].sync().applied == 1)
        #expect(try fleet.stores[1].records(in: "notes").count == 20)
        await auto.stop()
    }

    @Test func aSteadyStreamOfCommitsStillPushesWithinTheMaximumDelay() async throws {
        let fleet = try await Fleet(count: 1)
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        let auto = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(pushMaxDelay: 5_000), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        // A commit every 1.5 s would hold a 2 s debounce off forever; the cap is 5 s.
        for (index, deadline) in [2_000, 3_500, 5_000, 5_000].enumerated() {
            try fleet.stores[0].set(Self.note(index), "title", .string("v\(index)"))
            await settle(auto) { $0.counters.localChanges == index + 1 }
            try await expectPlan(auto, scheduler, t0 + UInt64(deadline))
            scheduler.advance(by: 1_500)
        }
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.pushed == 1)
        #expect(await auto.status.counters.syncs == 1)
        await auto.stop()
    }

    @Test func commitsAnotherSyncAlreadyPushedCostNoFurtherSync() async throws {
        let gate = Gate()
        let fleet = try await Fleet(count: 1) { GatedRemote(wrapping: FaultyRemote(wrapping: $0, seed: 3), gate: gate) }
        let counting = try #require((fleet.remote as? GatedRemote)?.base as? FaultyRemote)
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        let auto = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        try await expectPlan(auto, scheduler, t0 + 60_000)

        // A commit a second before the interval: the interval sync pushes it, and no push
        // is planned after.
        scheduler.advance(by: 59_000)
        try fleet.stores[0].set(Self.note(1), "title", .string("just in time"))
        await settle(auto) { $0.counters.localChanges == 1 }
        try await expectPlan(auto, scheduler, t0 + 60_000)
        scheduler.advance(by: 1_000)
        var event = try await next(&events)
        guard case let .synced(first) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(first.pushed == 1)
        try await expectPlan(auto, scheduler, t0 + 120_000)

        // A commit noted while the next sync is in flight, before it seals: that sync pushes
        // it, and the push the commit planned finds nothing left and asks the remote nothing.
        gate.arm()
        scheduler.advance(by: 60_000)
        await gate.waitUntilHolding()
        try fleet.stores[0].set(Self.note(2), "title", .string("during the sync"))
        await settle(auto) { $0.counters.localChanges == 2 }
        gate.release()
        event = try await next(&events)
        guard case let .synced(second) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(second.pushed == 1)
        try await expectPlan(auto, scheduler, t0 + 122_000)
        let requests = counting.counts.requests
        scheduler.advance(by: 2_000)
        await settle(auto) { $0.counters.skippedPushes + $0.counters.pushSyncs == 1 }
        #expect(await auto.status.counters.skippedPushes == 1)
        try await expectPlan(auto, scheduler, t0 + 180_000)
        #expect(counting.counts.requests == requests)
        let counters = await auto.status.counters
        #expect(counters.syncs == 2 && counters.intervalSyncs == 2 && counters.pushSyncs == 0, "\(counters)")
        await auto.stop()
    }

    @Test func pullsOnTheIntervalBringAnotherReplicasChange() async throws {
        let fleet = try await Fleet(count: 2)
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        let auto = AutoSync(engine: fleet.engines[1], configuration: Self.configuration(syncOnStart: true), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        guard case .synced = try await next(&events) else { Issue.record("the start sync failed"); return }
        try await expectPlan(auto, scheduler, t0 + 60_000)

        try fleet.stores[0].set(Self.note(1), "title", .string("from device0"))
        try await fleet.engines[0].sync()
        scheduler.advance(by: 59_999)
        #expect(scheduler.deadlines == [t0 + 60_000])
        #expect(try fleet.stores[1].record(Self.note(1)) == nil)

        scheduler.advance(by: 1)
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.applied == 1)
        #expect(try fleet.stores[1].record(Self.note(1))?.first { $0.name == "title" }?.value == .scalar(.string("from device0")))
        let counters = await auto.status.counters
        #expect(counters.promptSyncs == 1 && counters.intervalSyncs == 1 && counters.syncs == 2, "\(counters)")
        // A change applied from another replica plans no push: next is the next interval.
        try await expectPlan(auto, scheduler, t0 + 120_000)
        #expect(await auto.status.counters.localChanges == 0)
        await auto.stop()
    }

    @Test func failuresBackOffExponentiallyWithinTheJitterUpToTheCapThenReset() async throws {
        let seed: UInt64 = 20_260_101
        let fleet = try await Fleet(count: 1) { FaultyRemote(wrapping: $0, seed: 7) }
        let faulty = try #require(fleet.remote as? FaultyRemote)
        let scheduler = VirtualScheduler(fleet.clock)
        let configuration = Self.configuration(syncOnStart: true)
        let auto = AutoSync(
            engine: fleet.engines[0], configuration: configuration, scheduler: scheduler,
            generator: SeededGenerator(seed: seed))
        var events = auto.events().makeAsyncIterator()
        faulty.plan = FaultyRemote.Plan(failure: 1)  // the remote is unreachable
        await auto.start()

        var delays: [UInt64] = []
        for attempt in 1...8 {
            let event = try await next(&events)
            guard case let .failed(error, retryIn) = event else { Issue.record("attempt \(attempt): expected a failure, got \(event)"); return }
            #expect(error.code == .remote)
            let nominal = min(16_000, UInt64(1_000) << (attempt - 1))
            #expect(retryIn <= nominal && Double(retryIn) >= Double(nominal) * 0.5, "attempt \(attempt): \(retryIn) ms, nominal \(nominal) ms (seed \(seed))")
            delays.append(retryIn)
            // The loop sleeps until exactly the retry, and nothing else.
            let retryAt = scheduler.now() + retryIn
            try await expectPlan(auto, scheduler, retryAt)
            if attempt == 4 {
                // Offline, local writes still work; the backoff holds their push (due in
                // 2 s) back until the retry (in 4 to 8 s).
                try fleet.stores[0].set(Self.note(1), "title", .string("written offline"))
                await settle(auto) { $0.counters.localChanges == 1 }
                try await expectPlan(auto, scheduler, retryAt)
            }
            if attempt < 8 { scheduler.advance(by: retryIn) }
        }
        // The delays are the seed's: replaying it gives the same ones.
        var replay = SeededGenerator(seed: seed)
        #expect(delays == (1...8).map { configuration.backoff.delay(attempt: $0, using: &replay) }, "seed \(seed)")
        #expect(delays.suffix(4).allSatisfy { $0 >= 8_000 }, "capped at 16 s with half jitter: \(delays) (seed \(seed))")
        #expect(await auto.status.consecutiveFailures == 8)

        // The remote comes back: the next retry succeeds and pushes what was written offline.
        faulty.faultsOff()
        scheduler.advance(by: delays[7])
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.pushed == 1)
        var status = await auto.status
        #expect(status.consecutiveFailures == 0)
        #expect(status.counters.failed == 8 && status.counters.retrySyncs == 8 && status.counters.succeeded == 1, "\(status.counters)")
        try await expectPlan(auto, scheduler, scheduler.now() + 60_000)

        // The backoff starts over: the next failure waits about the base delay again.
        faulty.plan = FaultyRemote.Plan(failure: 1)
        try fleet.stores[0].set(Self.note(2), "title", .string("again"))
        await settle(auto) { $0.counters.localChanges == 2 }
        try await expectPlan(auto, scheduler, scheduler.now() + 2_000)
        scheduler.advance(by: 2_000)
        let again = try await next(&events)
        guard case let .failed(_, retryIn) = again else { Issue.record("expected a failure, got \(again)"); return }
        #expect(retryIn <= 1_000 && retryIn >= 500, "\(retryIn) ms (seed \(seed))")
        status = await auto.status
        #expect(status.consecutiveFailures == 1)
        await auto.stop()
    }

    @Test func pauseHoldsSyncsAndResumePushesWhatWaits() async throws {
        let fleet = try await Fleet(count: 1)
        let scheduler = VirtualScheduler(fleet.clock)
        let auto = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        await auto.pause()
        #expect(try await next(&events) == .paused)
        for index in 0..<3 { try fleet.stores[0].set(Self.note(index), "title", .string("paused \(index)")) }
        await settle(auto) { $0.counters.localChanges == 3 && $0.isPaused }
        // Paused, the loop has no timer at all, so no amount of time starts a sync.
        try await expectPlan(auto, scheduler, nil)
        scheduler.advance(by: 10 * 60_000)
        #expect(scheduler.deadlines.isEmpty)
        #expect(await auto.status.counters.syncs == 0)

        await auto.resume()
        #expect(try await next(&events) == .resumed)
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.pushed == 1)
        let counters = await auto.status.counters
        #expect(counters.syncs == 1 && counters.promptSyncs == 1, "\(counters)")
        await auto.stop()
    }

    @Test func pausingLetsTheSyncInFlightFinish() async throws {
        let gate = Gate()
        let fleet = try await Fleet(count: 1) { GatedRemote(wrapping: $0, gate: gate) }
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        let auto = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(syncOnStart: true), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        try fleet.stores[0].set(Self.note(1), "title", .string("before start"))
        gate.arm()
        await auto.start()
        await gate.waitUntilHolding()
        #expect(await auto.status.phase == .syncing)

        await auto.pause()
        gate.release()
        #expect(try await next(&events) == .paused)
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.pushed == 1)
        await settle(auto) { $0.phase == .idle }
        try await expectPlan(auto, scheduler, nil)

        // Nothing waits, so resuming only brings back the pull planned after that sync.
        await auto.resume()
        #expect(try await next(&events) == .resumed)
        try await expectPlan(auto, scheduler, t0 + 60_000)
        #expect(await auto.status.counters.syncs == 1)
        await auto.stop()
    }

    @Test func stopWaitsForTheSyncInFlightAndEndsTheLoop() async throws {
        let gate = Gate()
        let fleet = try await Fleet(count: 1) { GatedRemote(wrapping: $0, gate: gate) }
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        let auto = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(), scheduler: scheduler)
        var events = auto.events().makeAsyncIterator()
        await auto.start()
        try fleet.stores[0].set(Self.note(1), "title", .string("last words"))
        await settle(auto) { $0.counters.localChanges == 1 }
        try await expectPlan(auto, scheduler, t0 + 2_000)
        gate.arm()
        scheduler.advance(by: 2_000)
        await gate.waitUntilHolding()

        let stopping = Task { await auto.stop() }
        await settle(auto) { $0.phase == .stopping }
        gate.release()
        await stopping.value
        let event = try await next(&events)
        guard case let .synced(report) = event else { Issue.record("expected a sync, got \(event)"); return }
        #expect(report.pushed == 1)
        #expect(await events.next() == nil, "the event stream ends with the loop")

        // Over for good: no timers, no restart, no waiting, no events.
        #expect(await auto.status.phase == .stopped)
        #expect(scheduler.deadlines.isEmpty)
        try fleet.stores[0].set(Self.note(2), "title", .string("after the end"))
        await auto.start()
        await auto.resume()
        scheduler.advance(by: 10 * 60_000)
        #expect(scheduler.deadlines.isEmpty)
        #expect(await auto.status.counters.syncs == 1)
        #expect(await auto.wait { $0.counters.syncs == 2 } == false)
        var late = auto.events().makeAsyncIterator()
        #expect(await late.next() == nil)
        await auto.stop()
    }

    @Test func modesDecideWhatIsPlanned() async throws {
        let fleet = try await Fleet(count: 2)
        let scheduler = VirtualScheduler(fleet.clock)
        let t0 = scheduler.now()
        // Push-only: no pulls; a commit plans a push.
        let backup = AutoSync(engine: fleet.engines[0], configuration: Self.configuration(mode: .pushOnly), scheduler: scheduler)
        await backup.start()
        try await expectPlan(backup, scheduler, nil)
        try fleet.stores[0].set(Self.note(1), "title", .string("backed up"))
        await settle(backup) { $0.counters.localChanges == 1 }
        try await expectPlan(backup, scheduler, t0 + 2_000)
        await backup.stop()
        // Pull-only: pulls; a commit plans nothing.
        let mirror = AutoSync(engine: fleet.engines[1], configuration: Self.configuration(mode: .pullOnly), scheduler: scheduler)
        await mirror.start()
        try await expectPlan(mirror, scheduler, t0 + 60_000)
        try fleet.stores[1].set(Self.note(2), "title", .string("kept here"))
        await settle(mirror) { $0.counters.localChanges == 1 }
        try await expectPlan(mirror, scheduler, t0 + 60_000)
        await mirror.stop()
    }

    @Test func backoffDoublesUpToItsCapWithinItsJitter() {
        let backoff = Backoff(base: 1_000, max: 300_000, jitter: 0.25)
        #expect((1...11).map { backoff.nominalDelay(attempt: $0) } == [1_000, 2_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000, 256_000, 300_000, 300_000])
        #expect(backoff.nominalDelay(attempt: 10_000) == 300_000)
        #expect(Backoff(base: .max / 2 + 1, max: .max).nominalDelay(attempt: 3) == .max)
        for seed: UInt64 in 1...20 {
            var generator = SeededGenerator(seed: seed)
            for attempt in 1...12 {
                let nominal = backoff.nominalDelay(attempt: attempt)
                let delay = backoff.delay(attempt: attempt, using: &generator)
                #expect(delay <= nominal && Double(delay) >= Double(nominal) * 0.75, "seed \(seed), attempt \(attempt): \(delay)")
            }
        }
        var generator = SeededGenerator(seed: 1)
        #expect(Backoff(base: 500, max: 500, jitter: 0).delay(attempt: 4, using: &generator) == 500)
        #expect(Backoff(base: 0, jitter: 7).jitter == 1 && Backoff(base: 0).base == 1)
    }

    @Test func systemSchedulerSleepsUntilADeadlineAndStopsWhenCancelled() async throws {
        let scheduler = SystemScheduler()
        try await scheduler.sleep(until: 0)  // already past: returns at once
        let before = scheduler.now()
        try await scheduler.sleep(until: before + 1)
        #expect(scheduler.now() >= before + 1)
        let sleeper = Task { try await scheduler.sleep(until: scheduler.now() + 3_600_000) }
        sleeper.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
    }
}
