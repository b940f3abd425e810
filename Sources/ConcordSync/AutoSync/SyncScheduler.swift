/// Time as ``AutoSync`` sees it: a reading in milliseconds and a way to sleep until one.
///
/// Automatic sync never reads a clock or sleeps on its own; it asks its scheduler. Apps use
/// ``SystemScheduler``; tests pass a virtual scheduler whose time moves only when the test
/// advances it, so no test's outcome depends on how fast the machine runs.
///
/// Deadlines are absolute readings of ``now()``: a sleeper that starts late (because the
/// machine was busy, or the test advanced time before it got there) still wakes at its
/// deadline, or at once if the deadline has passed.
public protocol SyncScheduler: Sendable {
    /// Milliseconds on this scheduler's timeline. The origin is the scheduler's own; only
    /// differences between readings mean anything. Never goes backward.
    func now() -> UInt64

    /// Suspends until ``now()`` reaches `deadline`; returns at once if it already has.
    ///
    /// - Throws: `CancellationError` when the calling task is cancelled first. A cancelled
    ///   sleep must end promptly: ``AutoSync`` cancels its timer whenever its plan changes.
    func sleep(until deadline: UInt64) async throws
}

/// The real scheduler: the monotonic `ContinuousClock` (it keeps counting while the
/// machine sleeps, so a pull that fell due during sleep runs on wake) and `Task.sleep`.
public struct SystemScheduler: SyncScheduler {
    private let origin: ContinuousClock.Instant

    /// A scheduler whose time 0 is now.
    public init() {
        origin = ContinuousClock.now
    }

    public func now() -> UInt64 {
        let elapsed = (ContinuousClock.now - origin).components
        return UInt64(max(0, elapsed.seconds)) * 1_000 + UInt64(max(0, elapsed.attoseconds) / 1_000_000_000_000_000)
    }

    public func sleep(until deadline: UInt64) async throws {
        // About 285,000 years: far enough to mean "never", near enough not to overflow.
        let capped = Int64(min(deadline, 1 << 53))
        try await Task.sleep(until: origin + .milliseconds(capped), clock: .continuous)
    }
}
