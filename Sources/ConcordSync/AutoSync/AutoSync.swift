import ConcordCore
import ConcordStore
import Logging

/// Keeps one ``SyncEngine``'s store in sync without being asked: pushes shortly after local
/// commits, pulls on an interval, and retries failures with exponential backoff.
///
/// - **Push, debounced.** Every local commit (a `.local` event of `Store.changes()`) plans a
///   sync ``Configuration/pushDebounce`` later; a further commit within that time moves it
///   back, so a burst of commits is one sync and one batch. However often commits come, the
///   first waits at most ``Configuration/pushMaxDelay``. Any sync covers the commits made
///   before it, so it cancels the planned push; a push planned by a commit that a sync
///   already in flight took along finds nothing left and makes no request.
/// - **Pull, on an interval.** ``Configuration/pullInterval`` after the last successful
///   sync — or sooner after activity, with ``Configuration/pullAfterActivity`` (the
///   adaptive poll). Changes applied from other replicas do not plan a push.
/// - **Pull, when the remote says so.** With a ``RemoteWatcher`` (a watched folder), each
///   of its signals plans a sync at once (waiting only for a retry in progress). If its
///   stream ends, the loop polls adaptively from then on.
/// - **Other processes' commits.** With ``Configuration/commitProbeInterval``, commits
///   made to the store file by other processes plan a push as local commits do.
/// - **Peers.** With a ``PeerChannel``, the push's debounce also seals the commits and sends
///   the batches to every connected peer — while the remote fails too, not waiting for a
///   retry; what peers send is applied between syncs, and each batch applied from a peer
///   that the remote lacks after ``Configuration/relayGrace`` is put there by this replica.
///   With ``Configuration/discovery`` (the default), a channel that listens is announced on
///   the remote after each sync (`heads/peers/<tag>`, sealed), the replicas the sync's
///   listing announced are dialled, and the announcement is withdrawn when the loop stops.
/// - **Backoff.** A failed sync is retried after ``Configuration/backoff``'s delay for the
///   number of consecutive failures (jittered with the injected generator, capped); while
///   retrying, the push and pull timers wait for the retry, which syncs both ways. One
///   success resets the count.
/// - **Offline tolerance.** Failures are reported (``Event/failed(_:retryIn:)``) and never
///   end the loop. Local writes only touch the store, so they keep working; what they
///   changed waits in the outbox and goes out with the first sync that succeeds.
/// - **Pause and resume.** ``pause()`` lets a sync in flight finish and starts none until
///   ``resume()``, which syncs at once if local commits are waiting (even during backoff)
///   and otherwise picks up the timers where they stand (an interval that fell due while
///   paused pulls at once).
/// - **Stop.** ``stop()`` waits for a sync in flight, ends the loop, stops watching the
///   store and finishes every ``events()`` stream. A stopped loop does not start again.
///
/// Time comes from a ``SyncScheduler`` and jitter from an injected generator, so a test drives
/// the whole loop with virtual time and a seed (all but the look for other processes'
/// commits, which is the store's own poll: ``Configuration/commitProbeInterval``). Syncs never overlap: one loop runs them one
/// at a time. The loop keeps itself alive until ``stop()``; call it when done.
public actor AutoSync {
    /// The engine every sync goes through.
    public let engine: SyncEngine
    /// When to sync and how to retry.
    public let configuration: Configuration
    /// Where time comes from.
    public nonisolated let scheduler: any SyncScheduler
    /// What tells the loop the remote changed, if anything does.
    public nonisolated let watcher: (any RemoteWatcher)?
    /// The LAN peer channel the loop sends this replica's batches on and applies peers'
    /// batches from, if any.
    public nonisolated let peers: PeerChannel?

    private var generator: any RandomNumberGenerator & Sendable
    private let broadcaster = Broadcaster<Event>(bufferingPolicy: .bufferingNewest(1_024))

    // The plan: scheduler times at which a sync is due, for each reason.
    /// A sync as soon as possible: at start, or on resume with commits waiting.
    private var promptDue: UInt64?
    /// The debounced push, and when the oldest commit it covers was seen.
    private var pushDue: UInt64?
    private var firstPendingAt: UInt64?
    /// The next interval pull.
    private var pullDue: UInt64?
    /// The next retry after a failure; while set, the push and pull timers wait for it.
    var retryDue: UInt64?
    /// The pull a watcher's signal asked for.
    private var remoteDue: UInt64?
    /// Pulls since the last activity that found nothing: how far the adaptive poll backed off.
    var peerState = PeerState()
    var discoveryState = DiscoveryState()
    private var idlePulls = 0
    private var watching = false

    var phase = Phase.notStarted
    var paused = false
    var stopping = false
    private var consecutiveFailures = 0
    var counters = Counters()

    private var driver: Task<Void, Never>?
    private var localWatch: Task<Void, Never>?
    private var remoteWatch: Task<Void, Never>?
    private var prober: Task<Void, Never>?
    /// The loop's sleep: resumed by its timer or by ``wake()``.
    var wakeUp: CheckedContinuation<Void, Never>?
    /// What the loop's current sleep waits for (nil: a wake-up only).
    var sleepingUntil: UInt64?
    var timer: Task<Void, Never>?
    var sleepGeneration = 0
    var waiters: [Int: Waiter] = [:]
    var nextWaiter = 0

    struct Waiter {
        let condition: @Sendable (Status) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    private enum Trigger {
        case prompt, push, interval, retry, remote, share, deliver, relay
    }

    /// A loop for `engine`, idle until ``start()``.
    ///
    /// ```swift
    /// let auto = AutoSync(engine: engine, configuration: AutoSync.Configuration(pullInterval: 300_000))
    /// await auto.start()
    /// ```
    ///
    /// `scheduler` supplies time (tests pass a
    /// virtual one) and `generator` the backoff's jitter (tests pass a seeded one).
    /// `watcher` (``RemoteWatch/watcher(for:ignoring:debounce:)``) makes pulls follow the
    /// remote's changes; the loop stops it when it stops. `peers`
    /// (``SyncEngine/peerChannel(configuration:)``) shares batches with peers on the LAN;
    /// the loop stops it too.
    public init(
        engine: SyncEngine, configuration: Configuration = Configuration(),
        scheduler: any SyncScheduler = SystemScheduler(),
        generator: any RandomNumberGenerator & Sendable = SystemRandomNumberGenerator(),
        watcher: (any RemoteWatcher)? = nil, peers: PeerChannel? = nil
    ) {
        self.engine = engine
        self.configuration = configuration
        self.scheduler = scheduler
        self.generator = generator
        self.watcher = watcher
        self.peers = peers
    }

    // MARK: Observing

    /// What happens from now on: each sync's outcome, pauses and resumes.
    ///
    /// ```swift
    /// for await event in auto.events() {
    ///     if case let .failed(error, retryIn) = event { print("\(error.message); retrying in \(retryIn) ms") }
    /// }
    /// ```
    ///
    /// Ends when the loop
    /// stops (at once if it already has). A subscriber that falls more than 1,024 events
    /// behind loses the oldest.
    public nonisolated func events() -> AsyncStream<Event> {
        broadcaster.subscribe()
    }

    /// The loop's phase, plan and counters right now.
    public var status: Status {
        Status(
            phase: stopping && phase != .stopped ? .stopping : phase, isPaused: paused,
            nextSync: paused || stopping || phase == .stopped || phase == .notStarted ? nil : nextDeadline(),
            consecutiveFailures: consecutiveFailures, counters: counters, isWatching: watching,
            pullInterval: configuration.mode == .pushOnly ? nil : currentPullInterval(),
            peers: peers?.peers ?? [], heldFromPeers: heldFromPeers,
            announcedPeers: discoveryState.announced, rejectedAnnouncements: discoveryState.rejected)
    }

    // MARK: Control

    /// Starts watching the store's local commits and syncing: at once if
    /// ``Configuration/syncOnStart``, else after the first commit's debounce or the first
    /// interval.
    ///
    /// ```swift
    /// let auto = AutoSync(engine: engine)
    /// await auto.start()            // syncs at once, then keeps syncing
    /// try store.set(zelda, "level", .int(6))  // pushed about 2 s later
    /// await auto.stop()             // when the app quits
    /// ```
    ///
    /// Every commit made after this returns is seen. Does nothing if already
    /// started or stopped.
    public func start() {
        guard phase == .notStarted, !stopping else { return }
        let changes = engine.store.changes()
        localWatch = Task { [weak self] in
            for await change in changes where change.origin == .local {
                guard let self else { return }
                await self.noteLocalCommit()
            }
        }
        startLiveSources()
        startPeers()
        let now = scheduler.now()
        if configuration.syncOnStart {
            promptDue = now
        } else {
            planPull(after: now)
        }
        phase = .idle
        driver = Task { await self.drive() }
        changed()
    }

    /// Starts no new sync until ``resume()``; a sync in flight completes (its event follows
    /// ``Event/paused``). Local commits are still noted, to push on resume. Does nothing if
    /// already paused or stopped.
    public func pause() {
        guard !paused, !stopping, phase != .stopped else { return }
        paused = true
        broadcaster.publish(.paused)
        wake()
        changed()
    }

    /// Lets syncs start again: at once if local commits are waiting — even while backing
    /// off, since a person or the network coming back is a good reason to try — otherwise
    /// when the timers say. Does nothing unless paused.
    public func resume() {
        guard paused, !stopping, phase != .stopped else { return }
        paused = false
        broadcaster.publish(.resumed)
        if pushDue != nil { promptDue = scheduler.now() }
        wake()
        changed()
    }

    /// Ends the loop: waits for a sync in flight, stops watching the store, cancels every
    /// timer and finishes every ``events()`` stream. Later calls do nothing.
    public func stop() async {
        guard phase != .stopped else { return }
        stopping = true
        localWatch?.cancel()
        localWatch = nil
        stopLiveSources()
        stopPeers()
        wake()
        changed()
        if let driver { await driver.value }
        guard phase != .stopped else { return }  // a concurrent stop() finished first
        await withdrawAnnouncement()
        guard phase != .stopped else { return }
        phase = .stopped
        broadcaster.finish()
        let current = status
        for (_, waiter) in waiters { waiter.continuation.resume(returning: waiter.condition(current)) }
        waiters = [:]
    }

    // MARK: The remote's and other processes' news

    private func startLiveSources() {
        if let watcher {
            watching = true
            let signals = watcher.signals()
            remoteWatch = Task { [weak self] in
                for await _ in signals {
                    guard let self else { return }
                    await self.remoteChanged()
                }
                await self?.watcherEnded()
            }
        }
        if let interval = configuration.commitProbeInterval, configuration.mode != .pullOnly {
            let commits = engine.store.commitSignals(every: .milliseconds(max(1, interval)))
            prober = Task { [weak self] in
                for await _ in commits {
                    guard let self else { return }
                    await self.noteProbedCommit()
                }
            }
        }
    }

    private func stopLiveSources() {
        watching = false
        watcher?.stop()
        remoteWatch?.cancel()
        remoteWatch = nil
        prober?.cancel()
        prober = nil
    }

    /// A watcher's signal: pull at once (after a retry in progress, if one is).
    private func remoteChanged() {
        counters.watchSignals += 1
        guard !stopping, configuration.mode != .pushOnly else { return }
        idlePulls = 0
        remoteDue = remoteDue ?? scheduler.now()
        if !paused && wakeUp != nil && sleepingUntil != nextDeadline() { wake() }
        changed()
    }

    /// The watcher failed or was stopped: poll from now on.
    private func watcherEnded() {
        guard watching else { return }
        watching = false
        if !stopping {
            engine.logger(ConcordLogLabel.autoSync).notice("the remote's watcher stopped; polling instead")
            idlePulls = 0
            if pullDue != nil { planPull(after: scheduler.now()) }
            if !paused && wakeUp != nil && sleepingUntil != nextDeadline() { wake() }
        }
        changed()
    }

    /// Some connection committed to the store file: plan a push if that left changes to
    /// push (another process's write; this process's own are noted through `changes()` too).
    private func noteProbedCommit() {
        guard !stopping, (try? engine.store.hasPendingChanges()) ?? true else { return }
        counters.probedCommits += 1
        planPush()
    }

    // MARK: The loop

    private func noteLocalCommit() {
        counters.localChanges += 1
        planPush()
    }

    /// Plans the debounced push for a commit just noted.
    private func planPush() {
        idlePulls = 0
        if configuration.mode != .pullOnly && !stopping {
            let now = scheduler.now()
            let first = firstPendingAt ?? now
            firstPendingAt = first
            pushDue = min(now + configuration.pushDebounce, first + configuration.pushMaxDelay)
            planShare()
            // Re-plan only when the plan moved: a burst of commits within one millisecond
            // (one event per record) costs one timer, not one per record.
            if !paused && wakeUp != nil && sleepingUntil != nextDeadline() { wake() }
        }
        changed()
    }

    private func drive() async {
        while !stopping {
            if !paused, let trigger = dueTrigger(at: scheduler.now()) {
                await perform(trigger)
            } else {
                await sleep(until: paused ? nil : nextDeadline())
            }
        }
    }

    /// The next planned sync: a prompt one first; while retrying, the retry; else the
    /// earliest of the watcher's pull, the push and the interval's pull.
    func nextDeadline() -> UInt64? {
        if let promptDue { return promptDue }
        let peers = [peerState.deliverDue, peerState.shareDue].compactMap { $0 }.min()
        if let retryDue { return min(retryDue, peers ?? retryDue) }
        return [remoteDue, pushDue, pullDue, peers, peerState.relayDue].compactMap { $0 }.min()
    }

    private func dueTrigger(at now: UInt64) -> Trigger? {
        if let promptDue, now >= promptDue { return .prompt }
        // Peers do not wait for the remote: sharing and applying go on while it fails.
        if let due = peerState.deliverDue, now >= due { return .deliver }
        if let due = peerState.shareDue, now >= due { return .share }
        if let retryDue { return now >= retryDue ? .retry : nil }
        if let due = peerState.relayDue, now >= due { return .relay }
        if let remoteDue, now >= remoteDue { return .remote }
        if let pushDue, now >= pushDue { return .push }
        if let pullDue, now >= pullDue { return .interval }
        return nil
    }

    private func planPull(after now: UInt64) {
        pullDue = configuration.mode == .pushOnly ? nil : currentPullInterval().map { now + $0 }
    }

    /// The interval's pull: ``Configuration/pullInterval``, or with the adaptive poll and no
    /// watcher, ``Configuration/pullAfterActivity`` doubled once per idle pull up to it.
    private func currentPullInterval() -> UInt64? {
        guard let slowest = configuration.pullInterval else { return nil }
        guard let fastest = configuration.pullAfterActivity, !watching else { return slowest }
        return Backoff(base: fastest, max: slowest, jitter: 0).nominalDelay(attempt: idlePulls + 1)
    }

    private func perform(_ trigger: Trigger) async {
        switch trigger {
        case .share: return await share()
        case .deliver: return await deliver()
        case .relay: return await relayHeld()
        default: break
        }
        if trigger == .push {
            // A sync in flight when these commits were noted may have sealed and pushed them.
            let seen = counters.localChanges
            let pending = await hasUnpushedChanges()
            guard !pending else { return await sync(trigger) }
            if counters.localChanges == seen {  // no commit came in while we looked
                pushDue = nil
                firstPendingAt = nil
                counters.skippedPushes += 1
                changed()
            }
            return
        }
        await sync(trigger)
    }

    private func sync(_ trigger: Trigger) async {
        // This sync seals every commit made before it starts pushing, so it covers what the
        // plan held; commits noted from here on plan the next push.
        promptDue = nil
        pushDue = nil
        remoteDue = nil
        firstPendingAt = nil
        phase = .syncing
        counters.syncs += 1
        switch trigger {
        case .prompt: counters.promptSyncs += 1
        case .push: counters.pushSyncs += 1
        case .interval: counters.intervalSyncs += 1
        case .retry: counters.retrySyncs += 1
        case .remote: counters.watchSyncs += 1
        case .share, .deliver, .relay: break
        }
        changed()
        let logger = engine.logger(ConcordLogLabel.autoSync)
        logger.debug("starting a sync", metadata: ["trigger": "\(trigger)"])
        let event: Event
        do {
            let report = try await engine.sync(mode: configuration.mode)
            consecutiveFailures = 0
            retryDue = nil
            let active = report.pushed > 0 || report.applied > 0 || trigger == .remote
            idlePulls = active ? 0 : idlePulls + 1
            planPull(after: scheduler.now())
            counters.succeeded += 1
            counters.batchesPushed += report.pushed
            counters.deltasApplied += report.applied
            // Batches this sync sealed go to peers too; held peers' batches are looked for.
            if report.pushed > 0 { planShareNow() }
            planRelay()
            event = .synced(report)
        } catch {
            consecutiveFailures += 1
            let delay = configuration.backoff.delay(attempt: consecutiveFailures, using: &generator)
            retryDue = scheduler.now() + delay
            counters.failed += 1
            logger.debug("sync failed; retrying later", metadata: [
                "error": "\(error)", "retryInMs": "\(delay)", "consecutiveFailures": "\(consecutiveFailures)",
            ])
            event = .failed(error, retryIn: delay)
        }
        phase = .idle
        broadcaster.publish(event)
        changed()
        if case .synced = event { await discover() }
    }

    /// Whether the outbox holds commits or sealed batches wait for their push. True when the
    /// store cannot tell, so that the sync runs and reports the problem.
    private func hasUnpushedChanges() async -> Bool {
        do {
            if try engine.store.hasPendingChanges() { return true }
            return try engine.store.sealedSeq() > (try await engine.pushedSeq())
        } catch {
            return true
        }
    }

}
