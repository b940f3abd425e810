import ConcordCore
import Synchronization

/// Tells, cheaply, whether anyone committed to a store file since the last look — this
/// process's other connections or another process altogether (a `concord put` in another
/// terminal, an app extension).
///
/// ``Store/changes()`` publishes the commits made through one `Store` instance; commits made
/// through another instance of the same file, in this process or another, reach no stream.
/// The probe finds them with SQLite's `PRAGMA data_version` on a connection of its own: the
/// value changes exactly when another connection committed to the file since the pragma
/// last ran, and reading it touches only the WAL index in shared memory, never the database
/// pages — about a microsecond, so it can run every few hundred milliseconds all day. The
/// probes of one `Store` (``Store/commitProbe()``) share that connection with its observed
/// queries.
///
/// The probe only says "something committed"; whether that left anything to push is the
/// caller's question (``Store/hasPendingChanges()``). A probe that cannot open its
/// connection answers `true` on every look, so a caller that relies on it does more work,
/// never less.
public final class CommitProbe: Sendable {
    private let poller: CommitPoller
    /// The poller's generation at the last look; nil when that look could not tell.
    private let seen: Mutex<UInt64?>

    /// A probe of the store file at `path`: its first ``committedSinceLastLook()`` answers
    /// whether anything committed since this call.
    public convenience init(path: String) {
        self.init(poller: CommitPoller(path: path))
    }

    init(poller: CommitPoller) {
        self.poller = poller
        seen = Mutex(poller.hold())
    }

    deinit { poller.release() }

    /// Whether a commit of another connection landed since the last call (or since the
    /// probe was made); true as well when the probe cannot tell.
    public func committedSinceLastLook() -> Bool {
        seen.withLock { seen in
            let last = seen
            seen = poller.look()
            guard let last, let seen else { return true }
            return last != seen
        }
    }
}

extension Store {
    /// A ``CommitProbe`` of this store's file: finds commits made by other processes (and
    /// by other `Store` instances of the same file), which ``changes()`` does not publish.
    public func commitProbe() -> CommitProbe {
        CommitProbe(poller: commitPoller)
    }

    /// A signal after each commit another connection made to this store's file (or each
    /// look that could not tell), the file looked at at least every `interval` while the
    /// stream is consumed: the store's one poll, which its observed queries share.
    package func commitSignals(every interval: Duration) -> AsyncStream<Void> {
        commitPoller.signals(every: interval)
    }
}
