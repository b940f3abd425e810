import ConcordCore

/// Reads the primitives of docs/FORMAT.md §2 from untrusted bytes.
///
/// Every read checks the remaining length first and throws a typed error naming what was
/// being read and where; no read traps, and no count is trusted beyond what the remaining
/// input could hold.
struct ByteReader {
    private let bytes: [UInt8]
    private(set) var offset: Int
    /// What the decoder is reading, for error messages ("delta", "snapshot").
    let what: String

    /// Where the input starts in `bytes`: error messages count from there.
    private let origin: Int

    init(_ bytes: [UInt8], what: String, offset: Int = 0) {
        self.bytes = bytes
        self.offset = offset
        self.origin = offset
        self.what = what
    }

    var remaining: Int { bytes.count - offset }
    var isAtEnd: Bool { offset == bytes.count }

    func error(_ code: ConcordError.Code, _ message: String) -> ConcordError {
        error(code, message, at: offset)
    }

    /// An error about what starts at `position` (an offset into the bytes, as ``offset``).
    func error(_ code: ConcordError.Code, _ message: String, at position: Int) -> ConcordError {
        ConcordError(code, "\(what) at byte \(position - origin): \(message)")
    }

    mutating func byte(_ field: @autoclosure () -> String) throws(ConcordError) -> UInt8 {
        guard offset < bytes.count else { throw error(.truncated, "input ends before \(field())") }
        let value = bytes[offset]
        offset += 1
        return value
    }

    mutating func raw(_ count: Int, _ field: @autoclosure () -> String) throws(ConcordError) -> ArraySlice<UInt8> {
        guard count <= remaining else { throw error(.truncated, "input ends inside \(field()) (\(count) bytes needed, \(remaining) left)") }
        let slice = bytes[offset..<offset + count]
        offset += count
        return slice
    }

    /// Unsigned LEB128; rejects encodings longer than needed and values over 64 bits.
    @inline(__always)
    mutating func varint(_ field: @autoclosure () -> String) throws(ConcordError) -> UInt64 {
        // Fast path: one byte.
        if offset < bytes.count, bytes[offset] < 0x80 {
            let value = UInt64(bytes[offset])
            offset += 1
            return value
        }
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = offset
        while true {
            guard offset < bytes.count else { throw error(.truncated, "input ends inside varint \(field())") }
            let byte = bytes[offset]
            offset += 1
            if shift == 63 && byte > 1 {
                throw error(.malformed, "varint \(field()) exceeds 64 bits")
            }
            result |= UInt64(byte & 0x7f) << shift
            if byte & 0x80 == 0 {
                if byte == 0 && offset - start > 1 {
                    throw error(.malformed, "varint \(field()) is not minimally encoded")
                }
                return result
            }
            shift += 7
        }
    }

    mutating func signed(_ field: @autoclosure () -> String) throws(ConcordError) -> Int64 {
        Wire.unzigzag(try varint(field()))
    }

    mutating func fixed64(_ field: @autoclosure () -> String) throws(ConcordError) -> UInt64 {
        let slice = try raw(8, field())
        var value: UInt64 = 0
        for (index, byte) in slice.enumerated() { value |= UInt64(byte) << UInt64(index * 8) }
        return value
    }

    /// A count of items that each take at least `minimumSize` bytes: never more than the
    /// remaining input could hold, nor more than `limit`.
    mutating func count(_ field: @autoclosure () -> String, minimumSize: Int = 1, limit: Int) throws(ConcordError) -> Int {
        let value = try varint(field())
        guard value <= UInt64(limit) else {
            throw error(.limitExceeded, "\(field()) count \(value) exceeds the limit of \(limit)")
        }
        guard value <= UInt64(remaining / max(minimumSize, 1)) else {
            throw error(.truncated, "\(field()) count \(value) is more than the remaining \(remaining) bytes can hold")
        }
        return Int(value)
    }

    /// A length-prefixed byte string of at most `limit` bytes.
    mutating func lengthPrefixed(_ field: @autoclosure () -> String, limit: Int) throws(ConcordError) -> ArraySlice<UInt8> {
        let length = try varint(field())
        guard length <= UInt64(limit) else {
            throw error(.limitExceeded, "\(field()) is \(length) bytes, over the limit of \(limit)")
        }
        return try raw(Int(length), field())
    }

    /// A length-prefixed UTF-8 string; invalid UTF-8 is rejected.
    mutating func string(_ field: @autoclosure () -> String, limit: Int) throws(ConcordError) -> String {
        let slice = try lengthPrefixed(field(), limit: limit)
        guard let text = Self.utf8(slice) else { throw error(.malformed, "\(field()) is not valid UTF-8") }
        return text
    }

    static func utf8(_ slice: ArraySlice<UInt8>) -> String? {
        // ASCII is the common case and needs no validation pass beyond the scan.
        if slice.allSatisfy({ $0 < 0x80 }) { return String(decoding: slice, as: UTF8.self) }
        return String(validating: slice, as: UTF8.self)
    }
}
