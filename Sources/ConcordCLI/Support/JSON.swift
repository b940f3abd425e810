import Concord

/// A JSON document as the CLI prints it: compact, object keys sorted by their UTF-8 bytes,
/// strings escaped as the canonical dump escapes them, so every `--json` output is stable.
///
/// `.raw` embeds text that is already canonical JSON (a record's fields or a conflict as
/// ``CanonicalDump`` writes them), so the CLI's shapes and the dump's never drift apart.
enum JSON {
    case null
    case bool(Bool)
    case int(Int64)
    case uint(UInt64)
    case double(Double)
    case string(String)
    case array([JSON])
    case object([(String, JSON)])
    case raw(String)

    /// An optional string, or null.
    static func string(_ value: String?) -> JSON {
        value.map { .string($0) } ?? .null
    }

    /// An optional number, or null.
    static func uint(_ value: UInt64?) -> JSON {
        value.map { .uint($0) } ?? .null
    }

    /// The compact text of this document.
    var text: String {
        var out = ""
        write(to: &out)
        return out
    }

    func write(to out: inout String) {
        switch self {
        case .null: out += "null"
        case let .bool(flag): out += flag ? "true" : "false"
        case let .int(number): out += String(number)
        case let .uint(number): out += String(number)
        case let .double(number):
            if number.isFinite {
                out += number.description
            } else {
                out += number.isNaN ? "{\"$double\":\"NaN\"}" : number < 0 ? "{\"$double\":\"-Infinity\"}" : "{\"$double\":\"Infinity\"}"
            }
        case let .string(text): JSON.escape(text, into: &out)
        case let .raw(text): out += text
        case let .array(items):
            out += "["
            for (index, item) in items.enumerated() {
                if index > 0 { out += "," }
                item.write(to: &out)
            }
            out += "]"
        case let .object(members):
            out += "{"
            let sorted = members.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { out += "," }
                JSON.escape(member.0, into: &out)
                out += ":"
                member.1.write(to: &out)
            }
            out += "}"
        }
    }

    /// Minimal escaping: `"`, `\` and control characters (as the canonical dump does).
    static func escape(_ text: String, into out: inout String) {
        out += "\""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case "\u{08}": out += "\\b"
            case "\u{0C}": out += "\\f"
            default:
                if scalar.value < 0x20 {
                    let hex = String(scalar.value, radix: 16)
                    out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                } else {
                    out.unicodeScalars.append(scalar)
                }
            }
        }
        out += "\""
    }
}

// MARK: The CLI's stable shapes (documented in the README)

extension JSON {
    /// A scalar as its JSON value; bytes as `{"$bytes":"hex"}` (the dump's spelling).
    static func scalar(_ value: ScalarValue) -> JSON {
        switch value {
        case .null: .null
        case let .bool(flag): .bool(flag)
        case let .int(number): .int(number)
        case let .double(number): .double(number)
        case let .string(text): .string(text)
        case let .bytes(bytes): .object([("$bytes", .string(Hex.encode(bytes)))])
        }
    }

    /// A file: `{"hash": H, "size": N, "type": T}` (`type` only when known).
    static func file(_ file: FileRef) -> JSON {
        var members: [(String, JSON)] = [("hash", .string(file.hash.hex)), ("size", .uint(file.size))]
        if let type = file.mediaType { members.append(("type", .string(type))) }
        return .object(members)
    }

    /// A record: `{"collection": C, "id": ID, "fields": {NAME: VALUE}}`.
    static func record(_ ref: RecordRef, _ fields: [(name: String, value: FieldValue)]) -> JSON {
        .object([
            ("collection", .string(ref.collection)),
            ("id", .string(ref.id)),
            ("fields", .raw(CanonicalDump.json(of: fields))),
        ])
    }

    /// One conflict, exactly as the canonical dump writes it.
    static func conflict(_ conflict: Conflict) -> JSON {
        .raw(CanonicalDump.json(of: conflict))
    }
}
