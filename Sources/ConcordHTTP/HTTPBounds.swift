import ConcordCore
import ConcordRemote
import NIOCore

/// How long a read may take, and how much of an error answer is read: whoever answers a
/// remote's requests must not make a replica wait or read for ever.
///
/// - **Time scales with size.** A read of up to `n` bytes may take ``grace`` plus `n`
///   divided by ``minimumRate``; `n` is what the reader expects (a file's exact size from
///   its authenticated reference, an object kind's limit, a listing page's limit), lowered
///   to the `Content-Length` when the server gives a smaller one. A read past its time is
///   stopped with ``/ConcordCore/ConcordError/Code/limitExceeded``, as one over its size is:
///   the object is treated as damaged, nothing else is affected. The check runs as bytes
///   arrive; a server that sends nothing at all is cut off by the client's 60 s read timeout.
/// - **Error answers are read to ``errorBodyLimit`` at most**, to quote them; the rest is
///   never read (the connection is dropped).
public struct HTTPBounds: Sendable {
    /// Time allowed on top of the expected bytes at ``minimumRate``.
    public var grace: Duration
    /// The slowest transfer accepted, in bytes per second.
    public var minimumRate: UInt64
    /// The most pages one listing may take (``/ConcordRemote/RemoteLayout/maxListingPages``
    /// unless lowered): a server whose continuation tokens never end stops there.
    public var maxListingPages: Int

    /// The most of an error answer's body that is read: 64 KiB.
    public static let errorBodyLimit = 64 << 10
    /// The longest any one read may take, whatever its size: a week.
    static let longest: Duration = .seconds(7 * 86_400)

    /// Defaults: 120 s of grace (room for a slow server to start answering) and
    /// 64 KiB/s: a 16 MiB head may take 6.3 minutes, a 1 GiB snapshot 4.6 hours.
    public init(grace: Duration = .seconds(120), minimumRate: UInt64 = 64 << 10, maxListingPages: Int = RemoteLayout.maxListingPages) {
        self.grace = grace
        self.minimumRate = max(1, minimumRate)
        self.maxListingPages = max(1, maxListingPages)
    }

    /// The longest a read of `bytes` bytes may take.
    public func allowance(forBytes bytes: UInt64) -> Duration {
        let seconds = bytes / minimumRate
        guard seconds < 7 * 86_400 else { return Self.longest }
        let rest = Double(bytes % minimumRate) / Double(minimumRate)
        return min(Self.longest, grace + .seconds(seconds) + .seconds(rest))
    }
}

/// One request's clock: started when it went out, allowed the time of the body it sends
/// and the size it expects back (``HTTPBounds/allowance(forBytes:)``).
struct TransferClock {
    let bounds: HTTPBounds
    let started = ContinuousClock.now
    /// The request body's size: an 8 MiB part is given the time to go up too.
    let sending: UInt64
    private(set) var expected: UInt64

    init(bounds: HTTPBounds, expected: UInt64, sending: UInt64 = 0) {
        self.bounds = bounds
        self.expected = expected
        self.sending = sending
    }

    /// The bytes whose transfer the clock allows time for.
    var total: UInt64 { expected.addingReportingOverflow(sending).overflow ? .max : expected + sending }

    /// The request's deadline as the HTTP client takes it (it bounds the wait for the
    /// answer's head; the body is checked by ``check(received:object:remoteName:)``).
    var clientDeadline: NIODeadline {
        let allowed = bounds.allowance(forBytes: total).components
        return .now() + .nanoseconds(allowed.seconds * 1_000_000_000 + allowed.attoseconds / 1_000_000_000)
    }

    /// A server that announces fewer bytes gets the time of those.
    mutating func announce(_ contentLength: UInt64?) {
        if let contentLength { expected = min(expected, contentLength) }
    }

    /// Throws once the read has taken longer than its size allows (or, `forced`, because a
    /// timer found it had: the answer stalled).
    func check(received: UInt64, object: String, remoteName: String, forced: Bool = false) throws(ConcordError) {
        let elapsed = ContinuousClock.now - started
        let allowed = bounds.allowance(forBytes: total)
        guard elapsed > allowed || forced else { return }
        throw ConcordError(
            .limitExceeded,
            "\(remoteName), \(object): \(forced ? "the answer stalled; " : "")\(received) bytes arrived in \(Self.seconds(elapsed)) s, over the \(Self.seconds(allowed)) s allowed to read "
                + "\(expected) bytes at the least rate of \(bounds.minimumRate) bytes/s: it was stopped and not used; nothing local was lost"
        )
    }

    static func seconds(_ duration: Duration) -> String {
        let tenths = duration.components.seconds * 10 + duration.components.attoseconds / 100_000_000_000_000_000
        return "\(tenths / 10).\(tenths % 10)"
    }
}
