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

/// Retirement (docs/ARCHITECTURE.md §4): replicas silent past the retention period, or forgotten, are
/// not waited for; one that returns joins a snapshot and keeps its unpushed changes.
@Suite struct RetirementTests {
    @Test func aSilentReplicaIsRetiredAndComesBackWithoutLoss() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, c) = (fleet.stores[0], fleet.stores[2])
        try await fleet.syncAll()
        // c writes, but never pushes it, and goes silent.
        try c.set(note, "from-c", .string("written offline"))
        for round in 0..<3 {
            try a.set(note, "round", .int(Int64(round)))
            try await fleet.engines[0].sync()
            try await fleet.engines[1].sync()
        }
        let waiting = try await fleet.engines[0].compact()
        #expect(waiting.deletedBatches.isEmpty)
        #expect(waiting.retiredReplicas.isEmpty)

        // 91 days later, c is silent past the retention period: not waited for.
        fleet.clock.advance(by: 91 * day)
        try await fleet.engines[1].sync()
        let report = try await fleet.engines[0].compact()
        #expect(report.retiredReplicas == [c.replicaID])
        #expect(report.deletedBatches == [1, 2, 3])
        #expect(try await fleet.engines[1].replicas().first { $0.id == c.replicaID }?.status == .silent)

        // c returns: it joins a's snapshot and pushes its own change; everyone converges.
        let back = try await fleet.engines[2].sync()
        #expect(back.joinedSnapshots.count == 1)
        #expect(back.pushed == 1)
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.first { $0.name == "from-c" }?.value == .scalar(.string("written offline")))
        #expect(try await fleet.engines[0].replicas().allSatisfy { $0.status == .active })
    }

    @Test func forgetRetiresAReplicaOnEveryReplica() async throws {
        let fleet = try await Fleet(count: 3)
        let (a, b, c) = (fleet.stores[0], fleet.stores[1], fleet.stores[2])
        try await fleet.syncAll()
        try c.set(note, "from-c", .string("never pushed yet"))
        try b.set(note, "from-b", .int(1))
        try await fleet.engines[1].sync()
        try await fleet.engines[0].sync()
        #expect(try await fleet.engines[1].compact().deletedBatches.isEmpty)  // c has not applied it

        // a forgets c; b honours it through a's head.
        let info = try await fleet.engines[0].forget(c.replicaID)
        #expect(info.status == .forgotten)
        let report = try await fleet.engines[1].compact()
        #expect(report.retiredReplicas == [c.replicaID])
        #expect(report.deletedBatches == [1])
        #expect(try await fleet.engines[1].replicas().first { $0.id == c.replicaID }?.status == .forgotten)

        // c comes back: nothing of its own is lost, and it is active again.
        fleet.clock.advance(by: 60_000)
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        #expect(try a.record(note)?.first { $0.name == "from-c" }?.value == .scalar(.string("never pushed yet")))
        #expect(try await fleet.engines[0].replicas().first { $0.id == c.replicaID }?.status == .active)
    }

    @Test func forgetRefusesItselfAndUnknownReplicas() async throws {
        let fleet = try await Fleet(count: 2)
        try await fleet.syncAll()
        await #expect(throws: ConcordError.self) { try await fleet.engines[0].forget(fleet.stores[0].replicaID) }
        do {
            try await fleet.engines[0].forget(ReplicaID(high: 1, low: 2))
            Issue.record("forgetting an unknown replica succeeded")
        } catch {
            #expect(error.code == .notFound)
        }
    }
}
