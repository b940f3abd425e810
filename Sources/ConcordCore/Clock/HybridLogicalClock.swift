/// A source of physical time in milliseconds since the Unix epoch.
///
/// The core never reads a clock: whoever drives a ``HybridLogicalClock`` passes a value in.
/// The store passes the system clock; tests pass a manual clock they can skew.
public protocol PhysicalClock: Sendable {
    /// Milliseconds since 1970-01-01T00:00:00Z.
    func millisecondsSinceEpoch() -> UInt64
}

/// Helpers on raw HLC values: `physical << 16 | counter`, one monotonic 64-bit number.
public enum HLC {
    /// Bits of logical counter below the physical milliseconds.
    public static let counterBits: UInt64 = 16
    /// The largest physical millisecond value a stamp can carry (about the year 10889).
    public static let maxPhysical: UInt64 = (1 << 48) - 1
    /// The greatest value a local clock issues: the first of the last millisecond a stamp
    /// can carry, far beyond any real clock. A clock pushed there by a remote stamp (which is
    /// still applied and followed) issues nothing more, so no dot is ever issued twice.
    public static let ceiling: UInt64 = maxPhysical << counterBits

    /// The physical milliseconds part of `hlc`.
    public static func physical(_ hlc: UInt64) -> UInt64 { hlc >> counterBits }

    /// The logical counter part of `hlc`.
    public static func counter(_ hlc: UInt64) -> UInt64 { hlc & 0xffff }

    /// The smallest HLC value at physical time `millis`.
    public static func value(physical millis: UInt64, counter: UInt64 = 0) -> UInt64 {
        min(millis, maxPhysical) << counterBits | (counter & 0xffff)
    }

    static func describe(_ hlc: UInt64) -> String { "\(physical(hlc)).\(counter(hlc))" }
}

/// A hybrid logical clock (docs/ARCHITECTURE.md §2, rules 2 and 7).
///
/// `tick` returns a value greater than every value this clock issued or observed, and at
/// least the physical time. So a write is stamped after everything its replica had seen,
/// even when the wall clock is behind, and stamps stay close to real time when clocks agree.
///
/// The clock holds one 64-bit number, and when the 16-bit counter is exhausted within one
/// millisecond it carries into the millisecond part. A remote stamp far in the future is
/// followed, not refused; the sync layer reports the skew instead. The one way it can fail
/// is at the end of its range: once it has reached ``HLC/ceiling`` (about the year 10889,
/// reachable only by following a stamp no real clock makes), `tick` throws
/// ``ConcordError/Code/clockExhausted`` rather than issue a value twice.
public struct HybridLogicalClock: Hashable, Sendable {
    /// The greatest value issued or observed so far.
    public private(set) var latest: UInt64

    public init(latest: UInt64 = 0) {
        self.latest = latest
    }

    /// Issues a new value at physical time `physicalMillis`.
    ///
    /// - Throws: ``ConcordError/Code/clockExhausted`` once `latest` has reached
    ///   ``HLC/ceiling``; the clock is unchanged then.
    public mutating func tick(physicalMillis: UInt64) throws(ConcordError) -> UInt64 {
        guard latest < HLC.ceiling else {
            throw ConcordError(.clockExhausted, "the clock has reached the end of its range (\(HLC.describe(latest)), after following a stamp from about the year 10889); no new write can be stamped, but every change already made still syncs")
        }
        let next = max(HLC.value(physical: physicalMillis), latest + 1)
        latest = next
        return next
    }

    /// Issues a new value, reading physical time from `clock`.
    public mutating func tick(clock: some PhysicalClock) throws(ConcordError) -> UInt64 {
        try tick(physicalMillis: clock.millisecondsSinceEpoch())
    }

    /// Follows a value seen in a remote change, so later local values exceed it.
    public mutating func observe(_ remote: UInt64) {
        latest = max(latest, remote)
    }

    /// How far `remote` runs ahead of `physicalMillis`, in milliseconds, when that is more
    /// than `maxDrift`; otherwise nil. Used to report clock skew (rule 7), never to refuse.
    public static func skew(of remote: UInt64, physicalMillis: UInt64, maxDrift: UInt64) -> UInt64? {
        let remoteMillis = HLC.physical(remote)
        let now = min(physicalMillis, HLC.maxPhysical)
        guard remoteMillis > now, remoteMillis - now > maxDrift else { return nil }
        return remoteMillis - now
    }
}
