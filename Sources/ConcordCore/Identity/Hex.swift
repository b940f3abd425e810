/// Lowercase hexadecimal, shared by every module of the package (printable ids, hashes,
/// `concord.json`, key files, remote names, CLI output).
package enum Hex {
    static let digits = Array("0123456789abcdef".utf8)

    package static func nibble(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Whether every byte is a lowercase hex digit (`0-9a-f`): the only spelling of names.
    package static func isLowercase(_ bytes: some Sequence<UInt8>) -> Bool {
        bytes.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) }
    }

    /// Exactly 16 lowercase hex digits as a `UInt64`; nil for anything else.
    package static func lowercaseUInt64(_ bytes: some Collection<UInt8>) -> UInt64? {
        guard bytes.count == 16, isLowercase(bytes) else { return nil }
        return bytes.reduce(UInt64(0)) { $0 << 4 | UInt64(nibble($1)!) }
    }

    package static func encode(_ value: UInt64) -> String {
        var out = [UInt8](repeating: 0, count: 16)
        for index in 0..<16 {
            out[index] = digits[Int((value >> UInt64(60 - index * 4)) & 0xf)]
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func encode(_ bytes: some Sequence<UInt8>) -> String {
        var out: [UInt8] = []
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0xf)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    package static func decode(_ text: some StringProtocol) -> [UInt8]? {
        decode(utf8: Array(text.utf8))
    }

    /// Parses ASCII hex digits (either case); nil for odd length or any other character.
    package static func decode(utf8 chars: [UInt8]) -> [UInt8]? {
        guard chars.count % 2 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(chars.count / 2)
        var index = 0
        while index < chars.count {
            guard let hi = nibble(chars[index]), let lo = nibble(chars[index + 1]) else { return nil }
            out.append(hi << 4 | lo)
            index += 2
        }
        return out
    }

    static func bigEndianBytes(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> UInt64(56 - $0 * 8)) }
    }
}
