import ArgumentParser
import Concord
import Foundation

/// Reads the values people type on the command line (`concord put … level=3`).
///
/// A value is JSON: `3` is an int (an integral number without `.` or exponent that fits
/// 64 bits), `3.5` or `1e3` a double, `true`/`false` a bool, `null` null, `"Zelda"` a
/// string, `{"$bytes": "00ff"}` bytes, and — for `put` only — an array of scalars sets a
/// set field. Anything that is not JSON and does not start like JSON (`"`, `[`, `{`) is a
/// bare word: a string. So `title=Zelda` and `title='"Zelda"'` mean the same.
enum ValueParser {
    /// What a `FIELD=VALUE` argument writes.
    static func assignment(_ argument: String) throws -> (field: String, write: FieldWrite) {
        guard let equals = argument.firstIndex(of: "="), equals != argument.startIndex else {
            throw ValidationError("'\(argument)' is not FIELD=VALUE (for example level=3 or title='\"Zelda\"')")
        }
        let field = String(argument[..<equals])
        let text = String(argument[argument.index(after: equals)...])
        switch try value(text, field: field) {
        case let .scalar(scalar): return (field, .scalar(scalar))
        case let .list(elements): return (field, .set(elements))
        }
    }

    /// A single scalar (set elements, `add` and `remove`).
    static func scalar(_ text: String, field: String) throws -> ScalarValue {
        switch try value(text, field: field) {
        case let .scalar(scalar): return scalar
        case .list: throw ValidationError("the value for \(field) is an array; give one element")
        }
    }

    enum Parsed {
        case scalar(ScalarValue)
        case list([ScalarValue])
    }

    static func value(_ text: String, field: String) throws -> Parsed {
        var parser = Parser(bytes: Array(text.utf8))
        do {
            return try parser.document()
        } catch let invalid as Parser.OutOfRange {
            // A number that does not fit: refused, never rounded, never a string.
            throw ValidationError("the value for \(field), \(Entry.clip(text)), \(invalid.reason)")
        } catch {}
        if let first = text.utf8.first, [UInt8(ascii: "\""), UInt8(ascii: "["), UInt8(ascii: "{")].contains(first) {
            if (try? JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])) != nil {
                throw ValidationError("the value for \(field) is JSON but not a value Concord stores: \(Entry.clip(text)) (a scalar, {\"$bytes\": \"hex\"}, {\"$double\": \"NaN\"}, or an array of those)")
            }
            throw ValidationError("the value for \(field) starts like JSON but is not valid JSON: \(Entry.clip(text)) (quote strings as '\"text\"'; \\u escapes must name Unicode scalars)")
        }
        // A bare word is a string; one that reads as a number is not (that would be a
        // number that does not fit, silently kept as text).
        return .scalar(.string(text))
    }

    /// A small JSON reader for scalars, `{"$bytes": hex}` and arrays of those.
    struct Parser {
        struct Failure: Error {}
        /// A number that is valid JSON but does not fit a 64-bit integer or a finite double.
        struct OutOfRange: Error { let reason: String }
        let bytes: [UInt8]
        var index = 0

        init(bytes: [UInt8]) { self.bytes = bytes }

        mutating func document() throws -> Parsed {
            skipSpace()
            let result: Parsed
            if peek == UInt8(ascii: "[") {
                index += 1
                var elements: [ScalarValue] = []
                skipSpace()
                if peek == UInt8(ascii: "]") {
                    index += 1
                } else {
                    while true {
                        skipSpace()
                        elements.append(try scalar())
                        skipSpace()
                        if peek == UInt8(ascii: ",") { index += 1; continue }
                        guard peek == UInt8(ascii: "]") else { throw Failure() }
                        index += 1
                        break
                    }
                }
                result = .list(elements)
            } else {
                result = .scalar(try scalar())
            }
            skipSpace()
            guard index == bytes.count else { throw Failure() }
            return result
        }

        var peek: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipSpace() {
            while let byte = peek, byte == 0x20 || byte == 0x09 || byte == 0x0a || byte == 0x0d { index += 1 }
        }

        mutating func literal(_ word: String) -> Bool {
            let expected = Array(word.utf8)
            guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else { return false }
            index += expected.count
            return true
        }

        mutating func scalar() throws -> ScalarValue {
            if literal("null") { return .null }
            if literal("true") { return .bool(true) }
            if literal("false") { return .bool(false) }
            switch peek {
            case UInt8(ascii: "\""): return .string(try string())
            case UInt8(ascii: "{"): return try taggedObject()
            case let byte? where byte == UInt8(ascii: "-") || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte):
                return try number()
            default: throw Failure()
            }
        }

        /// `{"$bytes": "hex"}`, or `{"$double": "NaN" | "Infinity" | "-Infinity"}` (what
        /// `get --json` prints for the doubles JSON has no number for).
        mutating func taggedObject() throws -> ScalarValue {
            index += 1
            skipSpace()
            let tag = try string()
            skipSpace()
            guard peek == UInt8(ascii: ":") else { throw Failure() }
            index += 1
            skipSpace()
            let body = try string()
            let value: ScalarValue
            switch tag {
            case "$bytes":
                guard let decoded = Hex.decode(body) else { throw Failure() }
                value = .bytes(decoded)
            case "$double":
                switch body {
                case "NaN": value = .double(.nan)
                case "Infinity": value = .double(.infinity)
                case "-Infinity": value = .double(-.infinity)
                default: throw Failure()
                }
            default:
                throw Failure()
            }
            skipSpace()
            guard peek == UInt8(ascii: "}") else { throw Failure() }
            index += 1
            return value
        }

        mutating func number() throws -> ScalarValue {
            let start = index
            var isInteger = true
            if peek == UInt8(ascii: "-") { index += 1 }
            guard let first = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(first) else { throw Failure() }
            if first == UInt8(ascii: "0") {
                index += 1
            } else {
                digits()
            }
            if peek == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                guard digits() > 0 else { throw Failure() }
            }
            if peek == UInt8(ascii: "e") || peek == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if peek == UInt8(ascii: "+") || peek == UInt8(ascii: "-") { index += 1 }
                guard digits() > 0 else { throw Failure() }
            }
            let text = String(decoding: bytes[start..<index], as: UTF8.self)
            if isInteger {
                guard let value = Int64(text) else {
                    throw OutOfRange(reason: "does not fit a 64-bit integer (\(Int64.min) to \(Int64.max)); write it as a string, or as a double with a decimal point")
                }
                return .int(value)
            }
            guard let value = Double(text) else { throw Failure() }
            guard value.isFinite else { throw OutOfRange(reason: "is beyond the largest double (about 1.8e308)") }
            // A mantissa with a non-zero digit that became 0 underflowed.
            let mantissa = text.prefix { $0 != "e" && $0 != "E" }
            if value == 0, mantissa.contains(where: { ("1"..."9").contains($0) }) {
                throw OutOfRange(reason: "is closer to 0 than the smallest double (about 5e-324) and would become 0")
            }
            return .double(value)
        }

        @discardableResult
        mutating func digits() -> Int {
            var count = 0
            while let byte = peek, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                index += 1
                count += 1
            }
            return count
        }

        mutating func string() throws -> String {
            guard peek == UInt8(ascii: "\"") else { throw Failure() }
            index += 1
            var out: [UInt8] = []
            while true {
                guard let byte = peek else { throw Failure() }
                index += 1
                switch byte {
                case UInt8(ascii: "\""):
                    return String(decoding: out, as: UTF8.self)
                case UInt8(ascii: "\\"):
                    guard let escaped = peek else { throw Failure() }
                    index += 1
                    switch escaped {
                    case UInt8(ascii: "\""): out.append(escaped)
                    case UInt8(ascii: "\\"): out.append(escaped)
                    case UInt8(ascii: "/"): out.append(escaped)
                    case UInt8(ascii: "n"): out.append(0x0a)
                    case UInt8(ascii: "r"): out.append(0x0d)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0c)
                    case UInt8(ascii: "u"):
                        var scalar = try hex4()
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard literal("\\u") else { throw Failure() }
                            let low = try hex4()
                            guard (0xDC00..<0xE000).contains(low) else { throw Failure() }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let unicode = Unicode.Scalar(scalar) else { throw Failure() }
                        out.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default: throw Failure()
                    }
                case 0..<0x20:
                    throw Failure()
                default:
                    out.append(byte)
                }
            }
        }

        mutating func hex4() throws -> UInt32 {
            guard bytes.count - index >= 4, let bytes = Hex.decode(String(decoding: bytes[index..<index + 4], as: UTF8.self)) else { throw Failure() }
            index += 4
            return UInt32(bytes[0]) << 8 | UInt32(bytes[1])
        }
    }
}
