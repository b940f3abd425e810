import ConcordCore
import ConcordRemote
import Synchronization

/// Lets the remote calls of several syncs running at once through one at a time, in an
/// order drawn from a seed, so that concurrent syncs replay exactly.
///
/// Each participant (a sync, through its ``TurnstileRemote``) is either working locally or
/// waiting at the turnstile with a call. A call goes through only when no other call is in
/// progress and every participant still running waits with one: the turnstile then draws
/// which. A participant's local work between its calls is deterministic, so the whole
/// interleaving follows from the seed — as long as each participant makes one call at a
/// time (a sync with one request in flight).
public final class Turnstile: Sendable {
    private struct State: Sendable {
        var running: Set<Int>
        var waiting: [Int: [CheckedContinuation<Void, Never>]] = [:]
        var busy = false
        var generator: SeededGenerator
        var order: [Int] = []
    }

    private let state: Mutex<State>

    /// A turnstile for `participants`, each running until it calls ``end(_:)``.
    public init(seed: UInt64, participants: Set<Int>) {
        state = Mutex(State(running: participants, generator: SeededGenerator(seed: seed)))
    }

    /// The participants whose calls went through, in order.
    public var order: [Int] { state.withLock { $0.order } }

    /// How many times a call of one participant followed a call of another: two or more
    /// means the participants were in the middle of their work at the same time.
    public var switches: Int {
        let order = self.order
        return zip(order, order.dropFirst()).filter { $0 != $1 }.count
    }

    /// Waits until the turnstile lets a call of `participant` through.
    public func enter(_ participant: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let next = state.withLock { state in
                state.waiting[participant, default: []].append(continuation)
                return Self.next(&state)
            }
            next?.resume()
        }
    }

    /// The call let through last has returned.
    public func leave() {
        let next = state.withLock { state in
            state.busy = false
            return Self.next(&state)
        }
        next?.resume()
    }

    /// `participant` makes no more calls.
    public func end(_ participant: Int) {
        let next = state.withLock { state in
            state.running.remove(participant)
            return Self.next(&state)
        }
        next?.resume()
    }

    /// The call to let through, once no call is in progress and every running participant
    /// waits with one (or has ended).
    private static func next(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        guard !state.busy else { return nil }
        let candidates = state.waiting.filter { !$0.value.isEmpty }.keys.sorted()
        guard !candidates.isEmpty, state.running.allSatisfy({ !(state.waiting[$0]?.isEmpty ?? true) }) else { return nil }
        let chosen = candidates[state.generator.int(0...(candidates.count - 1))]
        state.busy = true
        state.order.append(chosen)
        return state.waiting[chosen]!.removeFirst()
    }
}

/// A remote whose calls go through a ``Turnstile`` while one is engaged, and straight to
/// the wrapped remote otherwise.
public final class TurnstileRemote: Remote {
    public let base: any Remote
    private let gate = Mutex<(turnstile: Turnstile, participant: Int)?>(nil)

    public init(wrapping base: any Remote) {
        self.base = base
    }

    /// From now on, calls wait for `turnstile`, as `participant`.
    public func engage(_ turnstile: Turnstile, as participant: Int) {
        gate.withLock { $0 = (turnstile, participant) }
    }

    /// From now on, calls go straight through.
    public func disengage() {
        gate.withLock { $0 = nil }
    }

    private func through<T>(_ body: () async throws(ConcordError) -> T) async throws(ConcordError) -> T {
        guard let (turnstile, participant) = gate.withLock({ $0 }) else { return try await body() }
        await turnstile.enter(participant)
        defer { turnstile.leave() }
        return try await body()
    }

    public func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try await through { () async throws(ConcordError) in try await base.put(path, bytes) }
    }

    public func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        try await through { () async throws(ConcordError) in try await base.get(path) }
    }

    public func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        try await through { () async throws(ConcordError) in try await base.get(path, limit: limit) }
    }

    public func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        try await through { () async throws(ConcordError) in try await base.list(prefix: prefix) }
    }

    public func delete(_ path: String) async throws(ConcordError) {
        try await through { () async throws(ConcordError) in try await base.delete(path) }
    }

    public func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try await through { () async throws(ConcordError) in try await base.putStream(path, read: read) }
    }

    public func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await through { () async throws(ConcordError) in try await base.getStream(path, write: write) }
    }

    public func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await through { () async throws(ConcordError) in try await base.getStream(path, limit: limit, write: write) }
    }

    public func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] {
        try await through { () async throws(ConcordError) in try await base.anomalies(prefix: prefix) }
    }
}
