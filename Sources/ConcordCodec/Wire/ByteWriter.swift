/// Appends the primitives of docs/FORMAT.md §2 to a byte buffer.
struct ByteWriter {
    private(set) var bytes: [UInt8] = []

    init(capacity: Int = 0) {
        bytes.reserveCapacity(capacity)
    }

    mutating func byte(_ value: UInt8) {
        bytes.append(value)
    }

    mutating func raw(_ value: some Sequence<UInt8>) {
        bytes.append(contentsOf: value)
    }

    /// Unsigned LEB128, minimal length.
    @inline(__always)
    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value >>= 7
        }
        bytes.append(UInt8(value))
    }

    mutating func varint(_ value: Int) {
        varint(UInt64(value))
    }

    /// ZigZag, then LEB128: small magnitudes of either sign take few bytes.
    mutating func signed(_ value: Int64) {
        varint(Wire.zigzag(value))
    }

    /// 8 bytes, little-endian.
    mutating func fixed64(_ value: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) {
            bytes.append(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }

    /// A length-prefixed byte string.
    mutating func lengthPrefixed(_ value: some Collection<UInt8>) {
        varint(value.count)
        bytes.append(contentsOf: value)
    }

    mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { lengthPrefixed($0) }
    }
}

enum Wire {
    @inline(__always)
    static func zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value << 1) ^ (value >> 63))
    }

    @inline(__always)
    static func unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value >> 1) ^ -Int64(bitPattern: value & 1)
    }
}
