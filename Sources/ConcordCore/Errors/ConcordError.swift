/// An error from the core: what went wrong, in words a person can act on, and a code a
/// program can switch on. Codes are static members of an extensible struct, not a closed
/// enum, so later releases can add codes without breaking callers.
public struct ConcordError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Which kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// A delta or snapshot that breaks the format's rules (unsorted, out of range, …).
        public static let malformed = Code("malformed")
        /// A delta whose dependencies are not yet applied; apply those first.
        public static let notReady = Code("notReady")
        /// Bytes that end before the structure they encode.
        public static let truncated = Code("truncated")
        /// A format version this release cannot read.
        public static let unsupportedVersion = Code("unsupportedVersion")
        /// A count or length over the format's limits.
        public static let limitExceeded = Code("limitExceeded")
        /// An operation that does not apply to the record as it is (e.g. keeping a file
        /// version that is not one of the fork's versions).
        public static let invalidOperation = Code("invalidOperation")
        /// This replica's clock has issued the last value of its range (only a store an
        /// older release stamped at the end of the range gets there): it cannot stamp
        /// another write without issuing a value twice. Remote stamps never cause it.
        public static let clockExhausted = Code("clockExhausted")
    }

    public let code: Code
    public let message: String
    /// The error underneath, when this one reports another's failure: a SQLite error, a
    /// file-system error, a decoding error. Kept whole for a program to inspect; the
    /// message already says in words what it means. Not part of equality.
    public let cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { "\(code): \(message)" }

    /// Two errors are equal when their codes and messages are.
    public static func == (lhs: ConcordError, rhs: ConcordError) -> Bool {
        lhs.code == rhs.code && lhs.message == rhs.message
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(message)
    }
}
