import ConcordCore
import Synchronization

/// A physical clock that moves only when told to: tests set, advance and skew it.
public final class ManualClock: PhysicalClock, Sendable {
    private let now: Mutex<UInt64>

    /// Starts at `millis` milliseconds since the epoch (default: 2026-01-01T00:00:00Z).
    public init(millis: UInt64 = 1_767_225_600_000) {
        now = Mutex(millis)
    }

    public func millisecondsSinceEpoch() -> UInt64 { now.withLock { $0 } }

    /// Moves the clock forward (or, with a negative amount, backward) by `millis`.
    public func advance(by millis: Int64) {
        now.withLock { $0 = UInt64(max(0, Int64($0) + millis)) }
    }

    public func set(_ millis: UInt64) {
        now.withLock { $0 = millis }
    }
}
