/// The 128-bit identity of one replica (one device's copy of a store).
///
/// Replica ids are chosen at random when a store is created and never reused. They break
/// ties between stamps with equal clock values, so two replicas with the same id would
/// corrupt convergence: never copy a store file to make a second replica — create a new
/// one and let it bootstrap.
public struct ReplicaID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The most significant 64 bits.
    public let high: UInt64
    /// The least significant 64 bits.
    public let low: UInt64

    public init(high: UInt64, low: UInt64) {
        self.high = high
        self.low = low
    }

    /// A fresh id drawn from `generator`. The core never draws randomness itself; callers
    /// pass a system generator in production and a seeded one in tests.
    public static func random(using generator: inout some RandomNumberGenerator) -> ReplicaID {
        ReplicaID(high: generator.next(), low: generator.next())
    }

    /// Parses 32 hexadecimal digits (either case).
    public init?(hex: some StringProtocol) {
        let digits = Array(hex.utf8)
        guard digits.count == 32 else { return nil }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in digits.enumerated() {
            guard let nibble = Hex.nibble(byte) else { return nil }
            if index < 16 { high = high << 4 | UInt64(nibble) } else { low = low << 4 | UInt64(nibble) }
        }
        self.init(high: high, low: low)
    }

    /// Exactly 32 lowercase hexadecimal digits (the only spelling remote names use); nil
    /// for anything else.
    package init?(lowercaseHex digits: some Collection<UInt8>) {
        guard digits.count == 32, Hex.isLowercase(digits) else { return nil }
        self.init(hex: String(decoding: digits, as: UTF8.self))
    }

    /// 32 lowercase hexadecimal digits.
    public var description: String { Hex.encode(high) + Hex.encode(low) }

    /// The 16 bytes, big-endian.
    public var bytes: [UInt8] { Hex.bigEndianBytes(high) + Hex.bigEndianBytes(low) }

    /// Builds an id from 16 big-endian bytes.
    @inlinable
    public init?(bytes: some Collection<UInt8>) {
        guard bytes.count == 16 else { return nil }
        // Contiguous bytes (an array, `Data`, a buffer — every caller in practice) are read as
        // two big-endian words; anything else byte by byte.
        if let words = bytes.withContiguousStorageIfAvailable({ buffer in
            (UInt64(bigEndian: UnsafeRawBufferPointer(buffer).loadUnaligned(as: UInt64.self)),
             UInt64(bigEndian: UnsafeRawBufferPointer(buffer).loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }) {
            self.init(high: words.0, low: words.1)
            return
        }
        var high: UInt64 = 0
        var low: UInt64 = 0
        for (index, byte) in bytes.enumerated() {
            if index < 8 { high = high << 8 | UInt64(byte) } else { low = low << 8 | UInt64(byte) }
        }
        self.init(high: high, low: low)
    }

    public static func < (lhs: ReplicaID, rhs: ReplicaID) -> Bool {
        (lhs.high, lhs.low) < (rhs.high, rhs.low)
    }
}

