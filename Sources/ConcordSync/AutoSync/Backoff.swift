/// How long to wait before retrying after consecutive failures: exponential, capped, with
/// jitter.
///
/// The nominal delay before retry *n* (counting from 1) is `base · 2^(n−1)`, capped at
/// `max`. The actual delay is the nominal one minus a random part of up to `jitter` of it,
/// so it always lies in `[nominal · (1 − jitter), nominal]` and never exceeds `max`.
/// Jitter spreads the retries of many devices that lost the same remote at the same moment,
/// so they do not all come back at once; the cap keeps a device that was offline for a day
/// retrying every few minutes rather than every few hours.
public struct Backoff: Hashable, Sendable {
    /// The nominal delay before the first retry, in milliseconds (at least 1).
    public var base: UInt64
    /// The longest delay, in milliseconds.
    public var max: UInt64
    /// The fraction of the nominal delay that may be taken off at random, in `0...1`.
    public var jitter: Double

    /// A backoff from `base` doubling up to `max` (milliseconds), with `jitter` clamped to
    /// `0...1`. Defaults: 1 s, 5 min, a quarter.
    public init(base: UInt64 = 1_000, max: UInt64 = 300_000, jitter: Double = 0.25) {
        self.base = Swift.max(1, base)
        self.max = Swift.max(self.base, max)
        self.jitter = jitter.isNaN ? 0 : Swift.min(1, Swift.max(0, jitter))
    }

    /// The delay before retry `attempt` (1 for the first) without jitter: `base · 2^(attempt−1)`,
    /// capped at ``max``. Never overflows, however many attempts.
    public func nominalDelay(attempt: Int) -> UInt64 {
        var delay = base
        var doublings = Swift.max(0, attempt - 1)
        while doublings > 0 && delay < max {
            delay = delay > max / 2 ? max : delay * 2
            doublings -= 1
        }
        return Swift.min(delay, max)
    }

    /// The delay before retry `attempt`, jittered with `generator`: within
    /// `[nominal · (1 − jitter), nominal]`, and at least 1 ms.
    public func delay(attempt: Int, using generator: inout some RandomNumberGenerator) -> UInt64 {
        let nominal = nominalDelay(attempt: attempt)
        guard jitter > 0 else { return nominal }
        let cut = UInt64((Double(nominal) * jitter * Double.random(in: 0..<1, using: &generator)).rounded(.down))
        return Swift.max(1, nominal - Swift.min(cut, nominal))
    }
}
