import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

private let day: Int64 = 86_400_000
private let note = RecordRef(collection: "notes", id: "n")

@Suite struct MetadataPurgeTests {
    @Test func aDeletionIsPurgedOnceEveryActiveReplicaHasSeenIt() async throws {
        var fleet = try await Fleet(count: 3)
        let (a, b, c) = (fleet.stores[0], fleet.stores[1], fleet.stores[2])
        try a.set(note, "title", .string("Plan"))
        try a.add(note, "tags", .string("work"))
        try await fleet.syncAll()
        try b.set(note, "body", .string("details"))
        try await fleet.syncAll()
        try a.delete(note)
        try await fleet.engines[0].sync()

        // b and c have not seen the deletion: nothing is purged, and a says why it waits.
        let early = try await fleet.engines[0].compact()
        #expect(early.metadata.purged.isEmpty)
        #expect(early.metadata.waiting == 1)
        #expect(try a.rawRecord(note) != nil)

        // Once their heads say they have seen it with nothing unsealed, a purges it; the
        // purge reaches b and c, and everyone's dump is as before.
        try await fleet.engines[1].sync()
        try await fleet.engines[2].sync()
        let dumps = try fleet.dumps()
        // Found stable now, it waits out twice the listing staleness first: a replica
        // whose head a stale listing does not show yet may hold an update it has not seen.
        let found = try await fleet.engines[0].compact()
        #expect(found.metadata.purged.isEmpty && found.metadata.waiting == 1)
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        let report = try await fleet.engines[0].compact()
        #expect(report.metadata.purged == [note])
        #expect(report.metadata.waiting == 0)
        try await fleet.syncAll()
        for store in [a, b, c] { #expect(try store.rawRecord(note) == nil) }
        #expect(try fleet.dumps() == dumps)
        #expect(try await fleet.engines[1].compact().metadata.purged.isEmpty)  // nothing left to purge

        // A replica bootstrapping now finds no trace of it in the snapshot.
        try await fleet.add(name: "d")
        try await fleet.engines[3].sync()
        #expect(try fleet.stores[3].rawRecord(note) == nil)

        // Re-created afterwards: only the new field, everywhere.
        try c.set(note, "title", .string("Again"))
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.map(\.name) == ["title"])
    }

    @Test func aRetiredReplicasConcurrentUpdateComesBackWithEveryFieldItHeld() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, c) = (fleet.stores[0], fleet.stores[2])
        try a.set(note, "title", .string("Plan"))
        try await fleet.syncAll()
        // c updates the record offline, before it sees the deletion, and goes silent.
        try c.set(note, "from-c", .string("written offline"))
        try a.delete(note)
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        #expect(try await fleet.engines[0].compact().metadata.purged.isEmpty)

        // 91 days later c is retired: the deletion is stable among the active replicas.
        fleet.clock.advance(by: 91 * day)
        try await fleet.engines[1].sync()
        #expect(try await fleet.engines[0].compact().metadata.waiting == 1)
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        try await fleet.engines[1].sync()
        let report = try await fleet.engines[0].compact()
        #expect(report.retiredReplicas == [c.replicaID])
        #expect(report.metadata.purged == [note])

        // c returns: its update keeps every field it held, as if there had been no purge
        // (rule 4) — c writes back what the purge took — and all replicas converge.
        try await fleet.syncAll(rounds: 3)
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.map(\.name) == ["from-c", "title"])
        #expect(try a.record(note)?.first?.value == .scalar(.string("written offline")))
        #expect(try a.record(note)?.last?.value == .scalar(.string("Plan")))
    }
}
