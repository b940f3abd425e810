/// RFC 3986 percent-encoding of paths and query values, and its inverse.
public enum PercentEncoding {
    /// `text`'s UTF-8 bytes with unreserved characters (and `/` when `keepSlash`) as they
    /// are and every other byte as `%XX` (upper-case hex).
    public static func encode(_ text: String, keepSlash: Bool) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        let digits = Array("0123456789ABCDEF".utf8)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: "/") where keepSlash:
                out.append(byte)
            default:
                out += [UInt8(ascii: "%"), digits[Int(byte >> 4)], digits[Int(byte & 15)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `text` with every valid `%XX` decoded; nil if the result is not UTF-8.
    public static func decode(_ text: String) -> String? {
        let bytes = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        func hex(_ byte: UInt8) -> UInt8? {
            switch byte {
            case 48...57: byte - 48
            case 65...70: byte - 55
            case 97...102: byte - 87
            default: nil
            }
        }
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count, let high = hex(bytes[index + 1]), let low = hex(bytes[index + 2]) {
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(bytes[index])
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }
}
