import ConcordCore
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// The fleet knows its versions (README, "Evolving your model"): each head says which
/// schema versions its replica writes and reads; a replica seeing a newer one tells the app
/// and keeps working; a minimum version refuses the writes of replicas below it.
@Suite struct SchemaFleetTests {
    static func games(version: Int, level: String) throws -> CollectionDeclaration {
        try CollectionDeclaration("games", version: version, fields: [.init(level, .int)],
                                  changes: level == "level" ? [:] : [level: .init(renamedFrom: "level")])
    }

    @Test func aReplicaSeesANewerVersionKeepsWorkingAndIsHeldToAMinimum() async throws {
        let fleet = try await Fleet(count: 2)
        let (old, new) = (fleet.stores[0], fleet.stores[1])
        try old.declare(Self.games(version: 1, level: "level"))
        try new.declare(Self.games(version: 2, level: "tier"))
        let events = old.schemaEvents()
        var iterator = events.makeAsyncIterator()
        let zelda = RecordRef(collection: "games", id: "zelda")
        try old.put(zelda, ["level": .scalar(.int(1))])
        try await fleet.syncAll()
        #expect(try old.schemaVersions() == SchemaVersions(writes: 1, reads: 1))
        #expect(try old.fleetSchemaVersions() == [new.replicaID: SchemaVersions(writes: 2, reads: 2)])
        #expect(try old.newerSchemaVersion()?.version == 2)
        #expect(try new.newerSchemaVersion() == nil)
        let seen = await iterator.next()
        #expect(seen?.kind == .newerVersion && seen?.replica == new.replicaID && seen?.versions.writes == 2)
        // The heads say it, for every replica to list.
        let infos = try await fleet.engines[0].replicas()
        #expect(infos.first { $0.id == new.replicaID }?.schema == SchemaVersions(writes: 2, reads: 2))
        #expect(infos.first { $0.id == old.replicaID }?.schema == SchemaVersions(writes: 1, reads: 1))
        // The old replica keeps working: it writes, and the new one reads under its name.
        try old.put(zelda, ["level": .scalar(.int(3))])
        try await fleet.syncAll()
        #expect(try new.query(Query("games", filter: .field("tier", .equal, .int(3)))).map(\.id) == ["zelda"])

        // The new version requires itself: the old replica's writes are refused, loudly.
        try new.requireSchemaVersion(atLeast: 2)
        try new.put(zelda, ["level": .scalar(.int(4))])
        try await fleet.syncAll()
        let below = await iterator.next()
        #expect(below?.kind == .belowMinimum && below?.versions.minimum == 2)
        #expect { try old.put(zelda, ["level": .scalar(.int(9))]) } throws: { error in
            (error as? ConcordError)?.code == .schemaTooOld && (error as? ConcordError)?.message.contains("update the app") == true
        }
        // It still syncs and reads what others write.
        try await fleet.syncAll()
        #expect(try old.record(zelda)?.first?.value == .scalar(.int(4)))
        // Updated, it writes again.
        try old.declare(Self.games(version: 2, level: "tier"))
        try old.put(zelda, ["level": .scalar(.int(5))])
        try await fleet.syncAll()
        #expect(try new.record(zelda)?.first?.value == .scalar(.int(5)))
        #expect(try old.newerSchemaVersion() == nil)
    }
}
