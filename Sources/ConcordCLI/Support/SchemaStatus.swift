import Concord

/// What `concord status` says of the schema versions: this replica's, the fleet's (as the
/// heads it read said), and whether another device uses a newer one.
struct SchemaStatus {
    let own: SchemaVersions?
    let fleet: [(replica: ReplicaID, versions: SchemaVersions)]
    let newer: (replica: ReplicaID, version: Int)?
    let writable: ConcordError?

    init(_ store: Store) throws {
        own = try store.schemaVersions()
        fleet = try store.fleetSchemaVersions().sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
        newer = try store.newerSchemaVersion()
        let required = ([own?.minimum] + fleet.map(\.versions.minimum)).compactMap { $0 }.max()
        if let required, let own, own.writes < required {
            writable = ConcordError(.schemaTooOld, "version \(required) or newer is required")
        } else {
            writable = nil
        }
    }

    static let newerLine = "another device uses a newer version of this app's data: update to see all of it"

    var lines: [String] {
        guard own != nil || !fleet.isEmpty else { return [] }
        var lines = ["  schema: this replica " + (own.map { "writes version \($0.writes)\($0.minimum.map { ", requires \($0) or newer" } ?? "")" } ?? "declares no version")]
        for (replica, versions) in fleet {
            let mark = own.map { versions.writes > $0.reads } == true ? " (newer)" : ""
            lines.append("    \(replica): version \(versions.writes)\(mark)\(versions.minimum.map { ", requires \($0) or newer" } ?? "")")
        }
        if newer != nil { lines.append("  " + Self.newerLine) }
        if writable != nil {
            lines.append("  local writes are refused: this app writes version \(own?.writes ?? 0), below the version \(([own?.minimum] + fleet.map(\.versions.minimum)).compactMap { $0 }.max() ?? 0) required; update the app")
        }
        return lines
    }

    static func document(_ versions: SchemaVersions) -> [(String, JSON)] {
        [("writes", .int(Int64(versions.writes))), ("reads", .int(Int64(versions.reads))), ("minimum", versions.minimum.map { .int(Int64($0)) } ?? .null)]
    }

    var json: [(String, JSON)] {
        [
            ("schema", own.map { .object(Self.document($0)) } ?? .null),
            ("fleetSchema", .array(fleet.map { entry in
                .object([("replica", .string(entry.replica.description))] + Self.document(entry.versions) + [("newer", .bool(own.map { entry.versions.writes > $0.reads } == true))])
            })),
            ("newerSchema", .bool(newer != nil)),
            ("writesRefused", .bool(writable != nil)),
        ]
    }
}
