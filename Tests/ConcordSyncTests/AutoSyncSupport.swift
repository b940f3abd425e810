import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Synchronization
import Testing

/// Waits until the loop's status satisfies `condition`; records an issue if it stopped (or the
/// time limit cancelled the test) first.
func settle(
    _ auto: AutoSync, sourceLocation: SourceLocation = #_sourceLocation,
    _ condition: @escaping @Sendable (AutoSync.Status) -> Bool
) async {
    if await !auto.wait(until: condition) {
        Issue.record("the loop stopped, or the test timed out, first: \(await auto.status)", sourceLocation: sourceLocation)
    }
}

/// Checks that the loop plans its next sync at `deadline` (nil: none), then waits until its
/// only timer is set for exactly that — so advancing time next has a known effect. A wrong
/// plan fails here at once rather than leaving the test waiting for a timer.
func expectPlan(
    _ auto: AutoSync, _ scheduler: VirtualScheduler, _ deadline: UInt64?,
    sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    let planned = await auto.status.nextSync
    try #require(planned == deadline, "the loop plans its next sync at \(planned.map(String.init) ?? "never"), not \(deadline.map(String.init) ?? "never")", sourceLocation: sourceLocation)
    await scheduler.waitForDeadlines(deadline.map { [$0] } ?? [])
}

/// The next event; fails the test if the stream ended.
func next(_ events: inout AsyncStream<AutoSync.Event>.Iterator, sourceLocation: SourceLocation = #_sourceLocation) async throws -> AutoSync.Event {
    let event = await events.next()
    return try #require(event, "the event stream ended", sourceLocation: sourceLocation)
}

/// A ``SyncScheduler`` whose time is a ``ManualClock`` that moves only in ``advance(by:)``.
///
/// Sleepers are registered with their deadlines; ``advance(by:)`` wakes those it passes.
/// ``waitForDeadlines(_:)`` suspends until the registered deadlines are exactly the given
/// ones — the loop's plan is then known, and advancing time has a known effect.
final class VirtualScheduler: SyncScheduler {
    let clock: ManualClock

    private struct Sleeper {
        let deadline: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct Watcher {
        let expected: [UInt64]
        let continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var nextID = 0
        var sleepers: [Int: Sleeper] = [:]
        /// Sleeps and waits cancelled before they registered.
        var cancelled: Set<Int> = []
        var watchers: [Int: Watcher] = [:]
    }

    private let state = Mutex(State())

    init(_ clock: ManualClock) {
        self.clock = clock
    }

    func now() -> UInt64 { clock.millisecondsSinceEpoch() }

    func sleep(until deadline: UInt64) async throws {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome = state.withLock { state -> Result<Void, any Error>? in
                    if state.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if deadline <= now() { return .success(()) }
                    state.sleepers[id] = Sleeper(deadline: deadline, continuation: continuation)
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) } else { notify() }
            }
        } onCancel: {
            let sleeper = state.withLock { state -> Sleeper? in
                if let sleeper = state.sleepers.removeValue(forKey: id) { return sleeper }
                state.cancelled.insert(id)
                return nil
            }
            if let sleeper {
                sleeper.continuation.resume(throwing: CancellationError())
                notify()
            }
        }
    }

    /// The registered sleepers' deadlines, in order.
    var deadlines: [UInt64] {
        state.withLock { $0.sleepers.values.map(\.deadline).sorted() }
    }

    /// Moves time forward by `millis` and wakes every sleeper whose deadline it reaches.
    func advance(by millis: UInt64) {
        clock.advance(by: Int64(millis))
        let now = now()
        let due = state.withLock { state -> [Sleeper] in
            let ids = state.sleepers.filter { $0.value.deadline <= now }.map(\.key)
            return ids.compactMap { state.sleepers.removeValue(forKey: $0) }
        }
        for sleeper in due { sleeper.continuation.resume() }
        notify()
    }

    /// Suspends until the registered deadlines are exactly `expected` (in order), or the
    /// task is cancelled (as the suite's time limit does).
    func waitForDeadlines(_ expected: [UInt64]) async {
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let done = state.withLock { state -> Bool in
                    if state.cancelled.remove(id) != nil || state.sleepers.values.map(\.deadline).sorted() == expected { return true }
                    state.watchers[id] = Watcher(expected: expected, continuation: continuation)
                    return false
                }
                if done { continuation.resume() }
            }
        } onCancel: {
            let watcher = state.withLock { state -> Watcher? in
                if let watcher = state.watchers.removeValue(forKey: id) { return watcher }
                state.cancelled.insert(id)
                return nil
            }
            watcher?.continuation.resume()
        }
    }

    private func notify() {
        let ready = state.withLock { state -> [Watcher] in
            let deadlines = state.sleepers.values.map(\.deadline).sorted()
            let ids = state.watchers.filter { $0.value.expected == deadlines }.map(\.key)
            return ids.compactMap { state.watchers.removeValue(forKey: $0) }
        }
        for watcher in ready { watcher.continuation.resume() }
    }
}

/// Holds remote listings while armed, so a test can act while a sync is in flight.
final class Gate: Sendable {
    private struct State {
        var armed = false
        var held: [CheckedContinuation<Void, Never>] = []
        var watchers: [CheckedContinuation<Void, Never>] = []
        var cancelled = false
    }

    private let state = Mutex(State())

    /// Holds every call to ``pass()`` from now until ``release()``.
    func arm() { state.withLock { $0.armed = true } }

    /// Returns at once unless armed; then waits for ``release()``.
    func pass() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let watchers = state.withLock { state -> [CheckedContinuation<Void, Never>]? in
                guard state.armed else { return nil }
                state.held.append(continuation)
                defer { state.watchers = [] }
                return state.watchers
            }
            guard let watchers else { return continuation.resume() }
            for watcher in watchers { watcher.resume() }
        }
    }

    /// Suspends until a call is held; releases the gate if the task is cancelled first (as
    /// the suite's time limit does).
    func waitUntilHolding() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let holding = state.withLock { state -> Bool in
                    if !state.held.isEmpty || state.cancelled { return true }
                    state.watchers.append(continuation)
                    return false
                }
                if holding { continuation.resume() }
            }
        } onCancel: {
            let watchers = state.withLock { state in
                state.cancelled = true
                defer { state.watchers = [] }
                return state.watchers
            }
            for watcher in watchers { watcher.resume() }
            release()
        }
    }

    /// Disarms and lets the held calls go on.
    func release() {
        let held = state.withLock { state in
            state.armed = false
            defer { state.held = [] }
            return state.held
        }
        for continuation in held { continuation.resume() }
    }
}

/// A remote whose listings pass through a ``Gate``.
struct GatedRemote: Remote {
    let base: any Remote
    let gate: Gate

    init(wrapping base: any Remote, gate: Gate) {
        self.base = base
        self.gate = gate
    }

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { try await base.put(path, bytes) }
    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await base.get(path) }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        await gate.pass()
        return try await base.list(prefix: prefix)
    }
    func delete(_ path: String) async throws(ConcordError) { try await base.delete(path) }
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try await base.putStream(path, read: read)
    }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, write: write)
    }
}
