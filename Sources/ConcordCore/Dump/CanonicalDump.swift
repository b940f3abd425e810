/// The canonical dump of a state (docs/ARCHITECTURE.md §2, "Canonical state"): its visible records and
/// open conflicts as JSON with every key sorted and no insignificant whitespace, so two
/// replicas that have seen the same changes print the same bytes.
///
/// Shape: `{"collections":{C:{ID:{NAME:VALUE}}},"conflicts":[…]}`. A scalar is its JSON
/// value (bytes as `{"$bytes":"hex"}`, non-finite doubles as `{"$double":"NaN"}` etc.), a
/// set a sorted array, a file `{"hash":H,"size":N,"type":T}` (`type` only when known). A
/// conflict is `{"collection":C,"id":ID,"kind":"deleteUpdate"}` or
/// `{"collection":C,"field":F,"id":ID,"kind":"fileFork","versions":[{"hash":H,"replica":R,"size":N}]}`.
/// Object keys are sorted by their UTF-8 bytes.
public enum CanonicalDump {
    /// The dump of `state` as a string.
    public static func json(of state: StoreState) -> String {
        var out = JSONWriter()
        out.raw("{\"collections\":{")
        var firstCollection = true
        var currentCollection: String?
        var firstRecord = true
        for (ref, fields) in state.visibleRecords {
            if currentCollection.map({ !Bytewise.equal($0, ref.collection) }) ?? true {
                if currentCollection != nil { out.raw("}") }
                if !firstCollection { out.raw(",") }
                firstCollection = false
                currentCollection = ref.collection
                out.string(ref.collection)
                out.raw(":{")
                firstRecord = true
            }
            if !firstRecord { out.raw(",") }
            firstRecord = false
            out.string(ref.id)
            out.raw(":")
            writeFields(fields, to: &out)
        }
        if currentCollection != nil { out.raw("}") }
        out.raw("},\"conflicts\":[")
        for (index, conflict) in state.conflicts.enumerated() {
            if index > 0 { out.raw(",") }
            write(conflict, to: &out)
        }
        out.raw("]}")
        return out.text
    }

    /// The JSON of one record's fields, keys sorted.
    public static func json(of fields: [(name: String, value: FieldValue)]) -> String {
        var out = JSONWriter()
        writeFields(fields, to: &out)
        return out.text
    }

    /// The JSON of one conflict, keys sorted.
    public static func json(of conflict: Conflict) -> String {
        var out = JSONWriter()
        write(conflict, to: &out)
        return out.text
    }

    static func writeFields(_ fields: [(name: String, value: FieldValue)], to out: inout JSONWriter) {
        out.raw("{")
        for (index, field) in fields.enumerated() {
            if index > 0 { out.raw(",") }
            out.string(field.name)
            out.raw(":")
            switch field.value {
            case let .scalar(value):
                out.scalar(value)
            case let .set(elements):
                out.raw("[")
                for (position, element) in elements.enumerated() {
                    if position > 0 { out.raw(",") }
                    out.scalar(element)
                }
                out.raw("]")
            case let .file(file):
                out.raw("{\"hash\":\"\(file.hash.hex)\",\"size\":\(file.size)")
                if let type = file.mediaType {
                    out.raw(",\"type\":")
                    out.string(type)
                }
                out.raw("}")
            }
        }
        out.raw("}")
    }

    static func write(_ conflict: Conflict, to out: inout JSONWriter) {
        out.raw("{\"collection\":")
        out.string(conflict.ref.collection)
        if let field = conflict.field {
            out.raw(",\"field\":")
            out.string(field)
        }
        out.raw(",\"id\":")
        out.string(conflict.ref.id)
        out.raw(",\"kind\":")
        out.string(conflict.kind.name)
        if conflict.kind == .fileFork {
            out.raw(",\"versions\":[")
            for (index, version) in conflict.versions.enumerated() {
                if index > 0 { out.raw(",") }
                out.raw("{\"hash\":\"\(version.file.hash.hex)\",\"replica\":\"\(version.stamp.replica)\",\"size\":\(version.file.size)}")
            }
            out.raw("]")
        }
        out.raw("}")
    }
}

/// Writes canonical JSON: strings escaped minimally (`"`, `\`, and control characters),
/// numbers in Swift's shortest round-trip form.
struct JSONWriter {
    var bytes: [UInt8] = []

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func raw(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    mutating func string(_ value: String) {
        bytes.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): raw("\\\"")
            case UInt8(ascii: "\\"): raw("\\\\")
            case 0x0a: raw("\\n")
            case 0x0d: raw("\\r")
            case 0x09: raw("\\t")
            case 0x08: raw("\\b")
            case 0x0c: raw("\\f")
            case 0..<0x20:
                raw("\\u00")
                bytes.append(Hex.digits[Int(byte >> 4)])
                bytes.append(Hex.digits[Int(byte & 0xf)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func scalar(_ value: ScalarValue) {
        switch value {
        case .null: raw("null")
        case let .bool(flag): raw(flag ? "true" : "false")
        case let .int(number): raw(String(number))
        case let .double(number):
            if number.isNaN {
                raw("{\"$double\":\"NaN\"}")
            } else if number.isInfinite {
                raw(number < 0 ? "{\"$double\":\"-Infinity\"}" : "{\"$double\":\"Infinity\"}")
            } else {
                raw(number.description)
            }
        case let .string(text): string(text)
        case let .bytes(data): raw("{\"$bytes\":\"\(Hex.encode(data))\"}")
        }
    }
}
