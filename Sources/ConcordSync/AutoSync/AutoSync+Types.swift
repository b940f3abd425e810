import ConcordCore
import Synchronization

extension AutoSync {
    /// When ``AutoSync`` syncs, and how it retries. All durations are in milliseconds of
    /// its ``SyncScheduler``.
    public struct Configuration: Hashable, Sendable {
        /// What each sync does. `.pullOnly` ignores local changes (nothing is pushed);
        /// `.pushOnly` never pulls on the interval.
        public var mode: SyncMode
        /// How long after a local commit the push waits (default 2 s). Each further commit
        /// within the wait restarts it, so a burst of commits becomes one sync and one batch.
        public var pushDebounce: UInt64
        /// The longest a local commit waits for its push however often commits keep coming
        /// (default 30 s), so a steady stream of writes still reaches the remote.
        public var pushMaxDelay: UInt64
        /// How often to pull when nothing else synced (default 60 s); nil never pulls on a
        /// timer. Every successful sync restarts the interval. An idle pull costs one listing.
        public var pullInterval: UInt64?
        /// The retry delays after consecutive failures (default 1 s doubling to 5 min, a
        /// quarter of jitter).
        public var backoff: Backoff
        /// Whether ``AutoSync/start()`` syncs at once (default) — catching up with what
        /// other replicas did and pushing what was written before — or waits for the first
        /// local commit or the first interval.
        public var syncOnStart: Bool
        /// The adaptive poll (default nil: every pull waits ``pullInterval``). When set and
        /// no ``RemoteWatcher`` is watching, a pull comes this many milliseconds after
        /// activity — a local commit, a sync that pushed or applied anything — and each
        /// idle pull doubles the wait, up to ``pullInterval``: quick while people work,
        /// one listing per ``pullInterval`` when nobody does. While a watcher watches, pulls
        /// follow its signals and the interval is only the safety net, always ``pullInterval``.
        public var pullAfterActivity: UInt64?
        /// How often, in milliseconds, to look for commits other processes made to the
        /// store file (default nil: never). The store's `changes()` publishes only this
        /// instance's commits; the look is the store's own poll of the file (`PRAGMA
        /// data_version`, about a microsecond, shared with its observed queries: it runs at
        /// the shortest interval any of them asks for, in real time, not on the
        /// ``SyncScheduler``), and a commit that left changes to push plans a push as a
        /// local commit does. Set it when another process may write the same store.
        public var commitProbeInterval: UInt64?
        /// How long, in milliseconds, a batch applied from a peer may be missing from the
        /// remote before this replica puts it there itself (default 10 s: its sender pushes
        /// it well within that when it can). The remote stays the source of truth: a
        /// replica that met only a peer loses nothing when the peer disappears.
        public var relayGrace: UInt64 = 10_000
        /// With a peer channel that listens: announce on the remote where it listens, and
        /// dial the replicas the listings announce (default true). See ``AutoSync`` "Peers".
        public var discovery = true

        /// A configuration; every parameter has the default described on its property.
        public init(
            mode: SyncMode = .twoWay, pushDebounce: UInt64 = 2_000, pushMaxDelay: UInt64 = 30_000,
            pullInterval: UInt64? = 60_000, backoff: Backoff = Backoff(), syncOnStart: Bool = true
        ) {
            self.mode = mode
            self.pushDebounce = pushDebounce
            self.pushMaxDelay = max(pushDebounce, pushMaxDelay)
            self.pullInterval = pullInterval.map { max(1, $0) }
            self.backoff = backoff
            self.syncOnStart = syncOnStart
        }

        /// The configuration of a live replica, which `concord sync --watch` uses: push 50 ms
        /// after a commit (at most 1 s after the first of a steady stream), look for other
        /// processes' commits every 100 ms, and poll adaptively from 1 s after activity up to
        /// `slowestPull` (default 5 min) when no watcher watches.
        public static func live(mode: SyncMode = .twoWay, slowestPull: UInt64 = 300_000) -> Self {
            var configuration = Self(
                mode: mode, pushDebounce: 50, pushMaxDelay: 1_000, pullInterval: slowestPull,
                backoff: Backoff(base: 1_000, max: Swift.max(1_000, Swift.min(300_000, slowestPull))))
            configuration.pullAfterActivity = Swift.min(1_000, slowestPull)
            configuration.commitProbeInterval = 100
            return configuration
        }
    }

    /// What happened, for an app's status line or the CLI's log.
    public enum Event: Hashable, Sendable {
        /// A sync succeeded; the consecutive-failure count is back to zero.
        case synced(SyncReport)
        /// A sync failed (the remote is unreachable, full, …); the next attempt is in
        /// `retryIn` milliseconds. Local writes keep working meanwhile. Errors a retry
        /// cannot fix (`wrongKey`, `storeMismatch`, `newerSchema`, `corrupt`) are retried
        /// too, at the capped delay, but need a person: show them.
        case failed(ConcordError, retryIn: UInt64)
        /// ``AutoSync/pause()`` took effect: nothing new starts until ``AutoSync/resume()``.
        case paused
        /// ``AutoSync/resume()`` took effect.
        case resumed
    }

    /// What the loop is doing.
    public enum Phase: Hashable, Sendable {
        /// ``AutoSync/start()`` was not called yet.
        case notStarted
        /// Waiting for a deadline, a local commit or a resume.
        case idle
        /// A sync is running.
        case syncing
        /// ``AutoSync/stop()`` was called and waits for the sync in flight.
        case stopping
        /// ``AutoSync/stop()`` finished: the loop is over for good.
        case stopped
    }

    /// Running totals since creation, for tests, benchmarks and diagnostics.
    public struct Counters: Hashable, Sendable {
        /// Local change events seen (one per changed record per commit).
        public var localChanges = 0
        /// Syncs started, for any reason.
        public var syncs = 0
        /// Syncs that succeeded and that failed.
        public var succeeded = 0
        public var failed = 0
        /// Syncs started by the push debounce, the pull interval, a retry, and start or resume.
        public var pushSyncs = 0
        public var intervalSyncs = 0
        public var retrySyncs = 0
        public var promptSyncs = 0
        /// Syncs started by a ``RemoteWatcher``'s signal.
        public var watchSyncs = 0
        /// Watcher signals received (several may be covered by one sync).
        public var watchSignals = 0
        /// Looks of the commit probe that found a commit leaving changes to push.
        public var probedCommits = 0
        /// Debounced pushes that found nothing left to push (an earlier sync took it) and so
        /// made no request.
        public var skippedPushes = 0
        /// Batches pushed and deltas applied, summed over the syncs' reports.
        public var batchesPushed = 0
        public var deltasApplied = 0
        /// Batches peers sent; of them, applied, and refused (their sender was dropped).
        public var peerDeliveries = 0
        public var peerApplied = 0
        public var peerRejected = 0
        /// This replica's batches sent to peers (once per batch, to every peer connected).
        public var batchesShared = 0
        /// Peers' batches this replica put on the remote, which did not hold them.
        public var batchesRelayed = 0

        /// All zero.
        public init() {}
    }

    /// A consistent picture of the loop at one moment.
    public struct Status: Hashable, Sendable {
        /// What the loop is doing.
        public var phase: Phase
        /// Whether ``AutoSync/pause()`` is in effect.
        public var isPaused: Bool
        /// The scheduler time at which the next sync is planned; nil when paused, stopped,
        /// or when nothing is planned (a push-only loop with no pending changes).
        public var nextSync: UInt64?
        /// Failures since the last success: what the next retry's backoff is based on.
        public var consecutiveFailures: Int
        /// Running totals.
        public var counters: Counters
        /// Whether a ``RemoteWatcher`` is watching the remote (false when there was none,
        /// or it failed and the loop polls).
        public var isWatching: Bool
        /// How long after a sync the next pull comes, as planned now (nil: none on a timer).
        public var pullInterval: UInt64?
        /// The peers connected now (empty without a peer channel).
        public var peers: [PeerChannel.Peer]
        /// Batches applied from peers that the remote was not yet seen to hold.
        public var heldFromPeers: Int
        /// Other replicas' peer announcements the last sync's listing showed holding, and
        /// those refused (each with why).
        public var announcedPeers: [PeerAnnouncement] = []
        public var rejectedAnnouncements: [String] = []
    }
}
