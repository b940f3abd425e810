import Concord
import Foundation

/// Human-readable text for values, times and records (the output without `--json`).
enum Format {
    /// A field's value: scalars as JSON, sets as `[a, b]`, files as `file <hash> (N bytes)`.
    static func value(_ value: FieldValue) -> String {
        switch value {
        case let .scalar(scalar): JSON.scalar(scalar).text
        case let .set(elements): "[" + elements.map { JSON.scalar($0).text }.joined(separator: ", ") + "]"
        case let .file(file): Format.file(file)
        }
    }

    static func file(_ file: FileRef) -> String {
        "file \(file.hash.hex) (\(file.size) bytes\(file.mediaType.map { ", \($0)" } ?? ""))"
    }

    /// A record as an indented block: its reference, then one `name = value` line per field.
    static func record(_ ref: RecordRef, _ fields: [(name: String, value: FieldValue)]) -> String {
        var lines = ["\(ref)"]
        for field in fields { lines.append("  \(field.name) = \(value(field.value))") }
        if fields.isEmpty { lines.append("  (no fields)") }
        return lines.joined(separator: "\n")
    }

    /// Records of `collection` as `list` and `query` print them: `{"records": [RECORD, …]}`
    /// with `--json` (one shape for both, in the order given), else one block per record or
    /// `empty` when there are none.
    static func records(
        _ collection: String, _ records: [(id: String, fields: [(name: String, value: FieldValue)])], empty: String
    ) -> (json: JSON, text: String) {
        let refs = records.map { (ref: RecordRef(collection: collection, id: $0.id), fields: $0.fields) }
        return (.object([("records", .array(refs.map { .record($0.ref, $0.fields) }))]),
                refs.isEmpty ? empty : refs.map { record($0.ref, $0.fields) }.joined(separator: "\n"))
    }

    /// A conflict in one line per version.
    static func conflict(_ conflict: Conflict, names: [ReplicaID: String] = [:]) -> String {
        if conflict.kind == .fileFork {
            var lines = ["fileFork \(conflict.ref) \(conflict.field ?? ""): \(conflict.versions.count) versions"]
            for version in conflict.versions {
                let who = names[version.stamp.replica].map { "\($0) (\(version.stamp.replica))" } ?? "\(version.stamp.replica)"
                lines.append("  \(version.file.hash.hex)  \(version.file.size) bytes  from \(who)")
            }
            return lines.joined(separator: "\n")
        }
        if conflict.kind == .deleteUpdate {
            return "deleteUpdate \(conflict.ref): deleted on one device while updated on another; the record was kept with all its fields"
        }
        return "\(conflict.kind) \(conflict.ref)"
    }

    /// Milliseconds since the epoch as an ISO 8601 time in UTC.
    static func time(_ millis: UInt64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime]
        return formatter.string(from: Date(timeIntervalSince1970: Double(millis) / 1_000))
    }

    /// A duration in milliseconds, roughly: `42 ms`, `3.1 s`, `5 min`, `2 h`, `3 d`.
    static func duration(_ millis: UInt64) -> String {
        switch millis {
        case ..<1_000: "\(millis) ms"
        case ..<60_000: String(format: "%.1f s", Double(millis) / 1_000)
        case ..<3_600_000: "\(millis / 60_000) min"
        case ..<86_400_000: "\(millis / 3_600_000) h"
        default: "\(millis / 86_400_000) d"
        }
    }

    static func now() -> UInt64 {
        UInt64(max(0, Date().timeIntervalSince1970 * 1_000))
    }
}
