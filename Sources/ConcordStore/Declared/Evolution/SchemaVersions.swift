import ConcordCore
import Foundation
import GRDB

/// The schema versions a replica uses (README, "Evolving your model"): what it writes,
/// what it reads, and the minimum it requires. Each replica's head carries its own (the
/// optional key `schema`, docs/FORMAT.md §8), so every replica knows its fleet's.
public struct SchemaVersions: Codable, Hashable, Sendable {
    /// The version its writes are in: its newest declaration's.
    public var writes: Int
    /// The newest version it reads in full; a version reads every older one, since the
    /// changes between them are declared.
    public var reads: Int
    /// The version below which it asks every replica to refuse writes, if it set one.
    public var minimum: Int?

    public init(writes: Int, reads: Int, minimum: Int? = nil) {
        self.writes = writes
        self.reads = reads
        self.minimum = minimum
    }
}

/// What a replica learns of its fleet's versions (``Store/schemaEvents()``).
public struct SchemaEvent: Hashable, Sendable {
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        /// Another replica writes a newer version than this one reads: some of its data
        /// is kept as written but not read here until the app is updated.
        public static let newerVersion = Kind("newerVersion")
        /// Another replica requires a minimum version above this one's: this replica's
        /// local writes are refused (`schemaTooOld`) until the app is updated.
        public static let belowMinimum = Kind("belowMinimum")
    }

    public let kind: Kind
    /// The replica whose head said so.
    public let replica: ReplicaID
    /// What its head says.
    public let versions: SchemaVersions
    /// This replica's own.
    public let own: SchemaVersions?
}

/// Settings keys of the versions.
enum SchemaSettings {
    /// The minimum this app declared (``Store/requireSchemaVersion(atLeast:)``).
    static let localMinimum = "schema.minimum.local"
    /// The greatest minimum this replica or any head it read declared: what local writes
    /// are checked against, in the write's own transaction.
    static let minimum = "schema.minimum"
    /// Per replica (32 hex), the versions its newest head read said (JSON).
    static let fleet = "schema.fleet"
}

extension Store {
    /// This replica's schema versions: its newest declaration's version (nil when nothing
    /// is declared and no minimum set), and the minimum it requires.
    public func schemaVersions() throws(ConcordError) -> SchemaVersions? {
        try read { db in try Self.schemaVersions(db) }
    }

    static func schemaVersions(_ db: Database) throws -> SchemaVersions? {
        let declared = try DeclaredTables.all(db).values.map(\.version).max()
        let minimum = try String.fetchOne(db, sql: "SELECT value FROM concord_settings WHERE key = ?", arguments: [SchemaSettings.localMinimum]).flatMap { Int($0) }
        guard declared != nil || minimum != nil else { return nil }
        let version = declared ?? 1
        return SchemaVersions(writes: version, reads: version, minimum: minimum)
    }

    /// Declares the oldest schema version whose writes the app still accepts: replicas
    /// below it (this one included) refuse local writes with `schemaTooOld`, so a very old
    /// device cannot write in a shape nobody reads any more. It reaches the other replicas
    /// with this replica's next head. nil removes it.
    ///
    /// ```swift
    /// try store.requireSchemaVersion(atLeast: 2)
    /// ```
    public func requireSchemaVersion(atLeast version: Int?) throws(ConcordError) {
        try writeDatabase { db in
            try Self.setSetting(db, SchemaSettings.localMinimum, version.map(String.init))
            try Self.updateMinimum(db)
        }
    }

    /// Every other replica's versions, as its newest head this replica read said.
    public func fleetSchemaVersions() throws(ConcordError) -> [ReplicaID: SchemaVersions] {
        try read { db in try Self.fleet(db) }
    }

    /// The newest version another replica writes, when it is newer than this replica reads:
    /// "another device uses a newer version of this app's data: update to see all of it".
    /// nil for a replica that declares no version (a tool, not a version of the app).
    public func newerSchemaVersion() throws(ConcordError) -> (replica: ReplicaID, version: Int)? {
        try read { db in
            guard let own = try Self.schemaVersions(db)?.reads else { return nil }
            return try Self.fleet(db).filter { $0.value.writes > own }.max { ($0.value.writes, $1.key) < ($1.value.writes, $0.key) }
                .map { ($0.key, $0.value.writes) }
        }
    }

    /// Events of the fleet's versions: another replica writing a newer version, or
    /// requiring a minimum above this one's. Each is published once, when a head saying it
    /// is first read (``noteSchemaVersions(_:of:)``).
    ///
    /// ```swift
    /// for await event in store.schemaEvents() where event.kind == .newerVersion {
    ///     showBanner("Another device uses a newer version of this app: update to see all of your data")
    /// }
    /// ```
    public func schemaEvents() -> AsyncStream<SchemaEvent> {
        schemaEventStream.subscribe()
    }

    /// Notes what `replica`'s head says of its versions (nil: it says nothing), and tells
    /// the app when that is newer than this replica, or requires more. The sync engine calls
    /// it for every head it reads.
    public func noteSchemaVersions(_ versions: SchemaVersions?, of replica: ReplicaID) throws(ConcordError) {
        guard replica != replicaID else { return }
        let events = try writeDatabase { db -> [SchemaEvent] in
            var fleet = try Self.fleet(db)
            let before = fleet[replica]
            guard before != versions else { return [] }
            fleet[replica] = versions
            let json = Dictionary(uniqueKeysWithValues: fleet.map { ($0.key.description, $0.value) })
            try Self.setSetting(db, SchemaSettings.fleet, String(decoding: (try? JSONEncoder.sorted.encode(json)) ?? Data("{}".utf8), as: UTF8.self))
            try Self.updateMinimum(db)
            guard let versions else { return [] }
            let own = try Self.schemaVersions(db)
            var events: [SchemaEvent] = []
            if let own, versions.writes > own.reads, versions.writes > (before?.writes ?? 0) {
                events.append(SchemaEvent(kind: .newerVersion, replica: replica, versions: versions, own: own))
            }
            let required = versions.minimum ?? 0
            if let own, required > own.writes, required > (before?.minimum ?? 0) {
                events.append(SchemaEvent(kind: .belowMinimum, replica: replica, versions: versions, own: own))
            }
            return events
        }
        for event in events { schemaEventStream.publish(event) }
    }

    /// Refuses a local write when this replica's version is below the minimum it or its
    /// fleet requires: one point read in the common case of no minimum.
    static func checkWritableSchema(_ db: Database) throws {
        guard let minimum = try String.fetchOne(db.cachedStatement(sql: "SELECT value FROM concord_settings WHERE key = '\(SchemaSettings.minimum)'")).flatMap({ Int($0) }),
              let own = try schemaVersions(db), own.writes < minimum else { return }
        throw ConcordError(.schemaTooOld, "this app writes version \(own.writes) of its data, and version \(minimum) or newer is required by this app or another device: update the app to write again (nothing was written; everything it holds still syncs)")
    }

    private static func fleet(_ db: Database) throws -> [ReplicaID: SchemaVersions] {
        guard let json = try String.fetchOne(db, sql: "SELECT value FROM concord_settings WHERE key = ?", arguments: [SchemaSettings.fleet]),
              let decoded = try? JSONDecoder().decode([String: SchemaVersions].self, from: Data(json.utf8)) else { return [:] }
        var fleet: [ReplicaID: SchemaVersions] = [:]
        for (hex, versions) in decoded { if let replica = ReplicaID(hex: hex) { fleet[replica] = versions } }
        return fleet
    }

    private static func updateMinimum(_ db: Database) throws {
        let local = try String.fetchOne(db, sql: "SELECT value FROM concord_settings WHERE key = ?", arguments: [SchemaSettings.localMinimum]).flatMap { Int($0) }
        let minimum = ([local].compactMap { $0 } + (try fleet(db)).values.compactMap(\.minimum)).max()
        try setSetting(db, SchemaSettings.minimum, minimum.map(String.init))
    }

    private static func setSetting(_ db: Database, _ key: String, _ value: String?) throws {
        if let value {
            try db.execute(sql: "INSERT OR REPLACE INTO concord_settings (key, value) VALUES (?, ?)", arguments: [key, value])
        } else {
            try db.execute(sql: "DELETE FROM concord_settings WHERE key = ?", arguments: [key])
        }
    }
}
