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
    /// The first value of the last millisecond a stamp can carry (about the year 10889),
    /// far beyond any real clock.
    public static let ceiling: UInt64 = maxPhysical << counterBits
    /// How far ahead of its physical time a clock follows an observed value, in
    /// milliseconds: one day. Past it a remote stamp is still applied, and reported, but
    /// not followed (``HybridLogicalClock``).
    public static let maxLead: UInt64 = 86_400_000

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
/// `tick` returns a value greater than every value this clock issued, at least the
/// physical time, and greater than every value it observed from other replicas — up to a
/// bound: a remote value more than ``HLC/maxLead`` ahead of the physical time is followed
/// only that far. So a write is stamped after everything its replica had seen when clocks
/// roughly agree, stamps stay close to real time, and no stamp received from anywhere —
/// a broken clock, or a forged one at the end of the range — can push this clock out of
/// its range and stop it from writing. A causally later write still replaces every value
/// it observed whatever their stamps (the registers are observed-remove, rule 2); stamps
/// only order concurrent writes.
///
/// The clock holds two 64-bit numbers: what it issued (`latest`) and the greatest value it
/// observed (`observed`). When the 16-bit counter is exhausted within one millisecond it
/// carries into the millisecond part. A physical reading past the end of the range (a
/// clock past the year 10889) is not a time: the clock counts on from its latest value.
/// The one way it can fail is a clock that itself issued `UInt64.max` — reachable only by
/// a store an older release stamped at the end of the range — and then `tick` throws
/// ``ConcordError/Code/clockExhausted`` rather than issue a value twice.
public struct HybridLogicalClock: Hashable, Sendable {
    /// The greatest value this clock issued (or was told it issued, ``pass(_:)``).
    public private(set) var latest: UInt64
    /// The greatest value observed from anywhere, followed up to ``HLC/maxLead``.
    public private(set) var observed: UInt64

    public init(latest: UInt64 = 0, observed: UInt64 = 0) {
        self.latest = latest
        self.observed = max(observed, latest)
    }

    /// Issues a new value at physical time `physicalMillis`, following what it observed at
    /// most `maxLead` milliseconds ahead of it.
    ///
    /// - Throws: ``ConcordError/Code/clockExhausted`` once `latest` is `UInt64.max`; the
    ///   clock is unchanged then.
    public mutating func tick(physicalMillis: UInt64, maxLead: UInt64 = HLC.maxLead) throws(ConcordError) -> UInt64 {
        guard latest < .max else {
            throw ConcordError(.clockExhausted, "this replica's clock has issued the last value of its range (\(HLC.describe(latest))), which only an older release could reach; no new write can be stamped under this replica id, but every change already made still syncs")
        }
        var next = latest + 1
        if physicalMillis <= HLC.maxPhysical {
            let (ahead, overflow) = physicalMillis.addingReportingOverflow(maxLead)
            let limit = HLC.value(physical: overflow ? HLC.maxPhysical : ahead)
            next = max(next, HLC.value(physical: physicalMillis), min(observed, limit) + 1)
        }
        latest = next
        observed = max(observed, next)
        return next
    }

    /// Issues a new value, reading physical time from `clock`.
    public mutating func tick(clock: some PhysicalClock, maxLead: UInt64 = HLC.maxLead) throws(ConcordError) -> UInt64 {
        try tick(physicalMillis: clock.millisecondsSinceEpoch(), maxLead: maxLead)
    }

    /// Notes a value seen in a remote change, so later local values exceed it where it is
    /// within ``HLC/maxLead`` of the physical time.
    public mutating func observe(_ remote: UInt64) {
        observed = max(observed, remote)
    }

    /// Notes a value this replica issued (its own dot, read back from its state): later
    /// values exceed it whatever the physical time, so no dot is issued twice.
    public mutating func pass(_ own: UInt64) {
        latest = max(latest, own)
        observed = max(observed, own)
    }

    /// Whether `remote` lies beyond what a tick at `physicalMillis` follows: more than
    /// `maxLead` ahead of it.
    public static func isBeyondLead(_ remote: UInt64, physicalMillis: UInt64, maxLead: UInt64 = HLC.maxLead) -> Bool {
        let now = min(physicalMillis, HLC.maxPhysical)
        let (ahead, overflow) = now.addingReportingOverflow(maxLead)
        return !overflow && HLC.physical(remote) > ahead
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
