import ConcordCore
import GRDBSQLite
import Synchronization

/// The one look of a store file for commits that no change stream reports: those of
/// another process (`concord put` in another terminal, another app's sync) or of another
/// `Store` instance of the same file. Observed queries (``Store/observe(_:)``), live sync
/// (`AutoSync`) and every ``CommitProbe`` of the store share it: one connection, one poll.
///
/// A look runs SQLite's `PRAGMA data_version` on a ``ReadConnection`` of its own: the value
/// changes exactly when another connection committed to the file since the pragma last ran,
/// and reading it touches only the WAL index in shared memory, never the database pages
/// (about a microsecond). A look that finds a change counts it in ``look()``'s generation,
/// calls the store's `onCommit` and signals every subscription. A burst of commits between
/// two looks is seen once; none is missed, since whoever is signalled then reads the state
/// after all of them. A look that cannot tell (the connection does not open, the file is
/// busy) counts as a commit for the subscriptions, so they do more work, never less.
///
/// While at least one subscription is held, one task looks at the shortest interval any of
/// them asks for; the connection is open while a subscription or a probe holds it, and
/// closed with the last.
final class CommitPoller: Sendable {
    /// How often the file is looked at while a query is observed.
    static let observeInterval = Duration.milliseconds(50)

    private let path: String
    private let onCommit: @Sendable () -> Void
    private let state = Mutex(State())

    private struct State {
        var connection: ReadConnection?
        /// The value the connection last read; nil when it could not read it.
        var last: Int64?
        var generation: UInt64 = 0
        /// The subscriptions and probes holding the connection.
        var holders = 0
        var nextID = 0
        var subscriptions: [Int: Subscription] = [:]
        var task: Task<Void, Never>?
    }

    private struct Subscription {
        let interval: Duration
        let signals: AsyncStream<Void>.Continuation?
    }

    /// The poll of the store file at `path`; `onCommit` runs after every look that found
    /// another connection's commit.
    init(path: String, onCommit: @escaping @Sendable () -> Void = {}) {
        self.path = path
        self.onCommit = onCommit
    }

    // MARK: Holding the connection

    /// Holds the connection open (opening it if no one held it) and returns the
    /// generation now, or nil if the connection could not be opened.
    func hold() -> UInt64? {
        state.withLock { state in
            state.holders += 1
            return open(&state) ? state.generation : nil
        }
    }

    /// Lets go of the connection: the last holder's release closes it.
    func release() {
        state.withLock { state in
            state.holders -= 1
            if state.holders == 0 {
                state.connection = nil
                state.last = nil
            }
        }
    }

    /// Opens the connection if it is not open, reading the value to compare the next
    /// look's with; whether it is open.
    private func open(_ state: inout State) -> Bool {
        if state.connection != nil { return true }
        guard let connection = ReadConnection(path: path, busyTimeout: 1_000, sql: "PRAGMA data_version") else { return false }
        state.connection = connection
        state.last = Self.read(connection)
        return true
    }

    // MARK: Looking

    /// Looks at the file now: the count of the commits by other connections seen since the
    /// connection opened (it grows by one for each look that found any), or nil when the
    /// look could not tell. A change (or a look that could not tell) signals the
    /// subscriptions; a change also runs `onCommit`.
    @discardableResult
    func look() -> UInt64? {
        let (generation, changed, signals) = state.withLock { state -> (UInt64?, Bool, [AsyncStream<Void>.Continuation]) in
            let subscribers = state.subscriptions.values.compactMap(\.signals)
            guard state.holders > 0, open(&state), let connection = state.connection, let now = Self.read(connection) else {
                return (nil, false, subscribers)
            }
            guard now != state.last else { return (state.generation, false, []) }
            state.last = now
            state.generation &+= 1
            return (state.generation, true, subscribers)
        }
        if changed { onCommit() }
        for signal in signals { signal.yield() }
        return generation
    }

    /// The value of `PRAGMA data_version`, or nil when SQLite could not read it (the file
    /// busy: read again at the next look, the change then seen).
    private static func read(_ connection: ReadConnection) -> Int64? {
        defer { sqlite3_reset(connection.statement) }
        guard sqlite3_step(connection.statement) == SQLITE_ROW else { return nil }
        return sqlite3_column_int64(connection.statement, 0)
    }

    // MARK: Subscriptions

    /// A subscription: the file is looked at at least every `interval` until it is
    /// cancelled (``unsubscribe(_:)``), and `signals` (if any) is signalled after each look
    /// that found a commit. Returns its id.
    func subscribe(every interval: Duration, signals: AsyncStream<Void>.Continuation? = nil) -> Int {
        state.withLock { state in
            state.holders += 1
            _ = open(&state)
            state.nextID += 1
            state.subscriptions[state.nextID] = Subscription(interval: interval, signals: signals)
            if state.task == nil {
                state.task = Task.detached { [weak self] in
                    while let interval = self?.interval, !Task.isCancelled {
                        try? await Task.sleep(for: interval)
                        guard !Task.isCancelled else { return }
                        self?.look()
                    }
                }
            }
            return state.nextID
        }
    }

    /// Ends the subscription `id`; the poll stops with the last.
    func unsubscribe(_ id: Int) {
        let ended = state.withLock { state -> Bool in
            guard state.subscriptions.removeValue(forKey: id) != nil else { return false }
            if state.subscriptions.isEmpty {
                state.task?.cancel()
                state.task = nil
            }
            return true
        }
        if ended { release() }
    }

    /// A signal after each look that found a commit (or could not tell), the file looked at
    /// at least every `interval` while the stream is consumed.
    func signals(every interval: Duration) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let id = subscribe(every: interval, signals: continuation)
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return stream
    }

    /// The shortest interval a subscription asks for; nil when none is held.
    private var interval: Duration? {
        state.withLock { state in state.subscriptions.values.map(\.interval).min() }
    }
}
