import ConcordCore
import Foundation

/// When an HTTP request is tried again: on connection errors and on 408, 429 and 5xx except
/// 501 (not implemented), 505 and 507 (out of space), which do not change by waiting. The
/// delay doubles from ``base`` up to ``cap`` with full jitter; a `Retry-After` (seconds or
/// an HTTP date) is honoured up to ``maxRetryAfter``.
public struct HTTPRetryPolicy: Sendable {
    /// Attempts in all, the first included.
    public var attempts: Int
    public var base: Duration
    public var cap: Duration
    public var maxRetryAfter: Duration

    public init(attempts: Int = 5, base: Duration = .milliseconds(200), cap: Duration = .seconds(10), maxRetryAfter: Duration = .seconds(60)) {
        self.attempts = max(1, attempts)
        self.base = base
        self.cap = cap
        self.maxRetryAfter = maxRetryAfter
    }

    /// Whether a response with `status` is worth another attempt.
    public func isRetryable(status: Int) -> Bool {
        status == 408 || status == 429 || (status >= 500 && status <= 599 && status != 501 && status != 505 && status != 507)
    }

    /// The delay before attempt `attempt + 1`: `Retry-After` if given, else the jittered
    /// exponential backoff.
    public func delay(attempt: Int, retryAfter: String?) -> Duration {
        if let retryAfter, let seconds = Self.seconds(retryAfter: retryAfter) {
            return min(.seconds(max(0, seconds)), maxRetryAfter)
        }
        let exponential = base * (1 << min(attempt, 20))
        let ceiling = min(exponential, cap)
        let millis = Int64(ceiling.components.seconds * 1000 + ceiling.components.attoseconds / 1_000_000_000_000_000)
        return .milliseconds(Int64.random(in: 0...max(1, millis)))
    }

    func wait(attempt: Int, retryAfter: String?) async throws(ConcordError) {
        do {
            try await Task.sleep(for: delay(attempt: attempt, retryAfter: retryAfter))
        } catch {
            throw ConcordError(.remote, "the sync was cancelled while waiting to retry a request")
        }
    }

    /// A `Retry-After` value in seconds: a number, or an HTTP date from now.
    static func seconds(retryAfter: String) -> Int64? {
        let trimmed = retryAfter.trimmingCharacters(in: .whitespaces)
        if let seconds = Int64(trimmed) { return seconds }
        guard let date = HTTPDate.millis(trimmed) else { return nil }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return max(0, (Int64(date) - now) / 1000)
    }
}

/// HTTP dates (RFC 9110 IMF-fixdate, `Sun, 06 Nov 1994 08:49:37 GMT`) and ISO 8601 times
/// (`2026-11-24T22:17:42.123Z`), parsed without locale-dependent formatters.
public enum HTTPDate {
    static let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]

    /// Milliseconds since the epoch of an IMF-fixdate (or RFC 850 / asctime with the same
    /// fields), or nil.
    public static func millis(_ text: String) -> UInt64? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "," || $0 == "-" }).map { $0.lowercased() }
        var day: Int?, month: Int?, year: Int?, time: [Int]?
        for part in parts {
            if let index = months.firstIndex(of: String(part.prefix(3))), part.count <= 9, month == nil, Int(part) == nil {
                month = index + 1
            } else if part.contains(":") {
                let fields = part.split(separator: ":").compactMap { Int($0) }
                if fields.count == 3 { time = fields }
            } else if let number = Int(part) {
                if day == nil && number <= 31 && part.count <= 2 { day = number } else { year = number < 100 ? number + (number < 70 ? 2000 : 1900) : number }
            }
        }
        guard let day, let month, let year, let time else { return nil }
        return epochMillis(year: year, month: month, day: day, hour: time[0], minute: time[1], second: time[2], millis: 0)
    }

    /// Milliseconds since the epoch of an ISO 8601 UTC time, or nil.
    public static func iso8601Millis(_ text: String) -> UInt64? {
        let bytes = Array(text.utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= bytes.count else { return nil }
            var value = 0
            for byte in bytes[range] {
                guard byte >= 48 && byte <= 57 else { return nil }
                value = value * 10 + Int(byte - 48)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19) else { return nil }
        var millis = 0
        if bytes.count > 20, bytes[19] == UInt8(ascii: ".") {
            var digits = 0
            var index = 20
            while index < bytes.count, bytes[index] >= 48, bytes[index] <= 57 {
                if digits < 3 { millis = millis * 10 + Int(bytes[index] - 48); digits += 1 }
                index += 1
            }
            while digits < 3 { millis *= 10; digits += 1 }
        }
        return epochMillis(year: year, month: month, day: day, hour: hour, minute: minute, second: second, millis: millis)
    }

    static func epochMillis(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int, millis: Int) -> UInt64? {
        guard (1...12).contains(month), (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute),
              (0...60).contains(second), year >= 1970, year < 10000 else { return nil }
        // Days from civil (Howard Hinnant's algorithm).
        let y = month <= 2 ? year - 1 : year
        let era = y / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        let days = era * 146_097 + doe - 719_468
        let total = ((days * 24 + hour) * 60 + minute) * 60 + second
        return total < 0 ? nil : UInt64(total) * 1000 + UInt64(millis)
    }
}
