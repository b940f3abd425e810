import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Removing a member of a shared store rotates the store key to the members left: they
/// converge without any action, the removed member is told and opens nothing sealed since;
/// a member added after a rotation is reached by another one; a rotation a crash left
/// undone after the removal is finished by the owner's next sync.
@Suite struct MemberRemovalTests {
    @Test func removingAMemberRotatesTheKeyToTheMembersLeft() async throws {
        // 0 owns the store; 1 and 2 are writers; 3 joins later.
        let members = try await KeyRotationTests.Members(count: 4)
        let owner = members.engines[0]
        try await owner.addMember(members.identities[1].publicIdentity, name: "bob", role: .writer)
        try await owner.addMember(members.identities[2].publicIdentity, name: "carol", role: .writer)
        #expect(await owner.keyGeneration().isZero, "adding members to a store never rotated hands out generation 0")
        for index in 0..<3 { try members.note(index, "before\(index)") }
        try await members.sync([0, 1, 2])
        #expect(Set(try (0..<3).map { try members.stores[$0].canonicalDump() }).count == 1)
        let old = Set(try await members.sealedObjects().map(\.path))

        let removal = try await owner.removeMember(named: "carol")
        #expect(removal.members.values.filter { !$0.isRemoved }.count == 2)
        let generation = await owner.keyGeneration()
        #expect(!generation.isZero, "the removal rotated the store key")
        #expect(try members.stores[0].sharingRecord(.rotationPending) == "0")

        // Bob picks the new key up at its next sync and writes under it; they converge.
        try members.note(0, "after0")
        try members.note(1, "after1")
        try await members.sync([0, 1])
        #expect(await members.engines[1].keyGeneration() == generation)
        #expect(try members.stores[0].canonicalDump() == members.stores[1].canonicalDump())
        #expect(try members.stores[1].canonicalDump().contains("after0 by 0"))

        // Carol: removed, in one line; opens nothing sealed since the rotation with any key it holds.
        await #expect(throws: ConcordError.self) { try await members.engines[2].sync() }
        let written = try await members.sealedObjects().filter { !old.contains($0.path) || $0.path.hasPrefix("heads/") }
        let newer = try written.filter { try !EncryptedObject.generation(of: $0.bytes, path: $0.path).isZero }
        #expect(newer.count >= 3, "\(written.map(\.path))")
        try KeyRotationTests().expectOpensNothingNew(members, replica: 2, written: newer)

        // Dave, added after the rotation, is reached by another rotation and gets everything.
        try await owner.addMember(members.identities[3].publicIdentity, name: "dave", role: .writer)
        let second = await owner.keyGeneration()
        #expect(second != generation && !second.isZero)
        try members.note(3, "by-dave")
        try await members.sync([3, 0, 1, 3])
        #expect(await members.engines[3].keyGeneration() == second)
        let dump = try members.stores[0].canonicalDump()
        #expect(try members.stores[1].canonicalDump() == dump && members.stores[3].canonicalDump() == dump)
        #expect(dump.contains("by-dave by 3") && dump.contains("after1 by 1") && dump.contains("before2 by 2"))
        try KeyRotationTests().expectOpensNothingNew(members, replica: 2, written: try await members.sealedObjects().filter {
            try EncryptedObject.generation(of: $0.bytes, path: $0.path) == second
        })

        // A removal whose rotation a crash left undone (the mark set, no new key): the
        // owner's next sync rotates.
        try members.stores[0].setSharingRecord(.rotationPending, "1")
        try await owner.sync()
        #expect(await owner.keyGeneration() != second)
        #expect(try members.stores[0].sharingRecord(.rotationPending) == "0")
        try await members.sync([1, 3, 0])
        #expect(await members.engines[1].keyGeneration() == owner.keyGeneration())
        #expect(try members.stores[1].canonicalDump() == members.stores[0].canonicalDump())
    }

    /// Found by the shared-store fuzz (schedule 38 of `make soak`'s count): an owner whose
    /// last sync predates another owner's rotation adds a member. Once, it judged from that
    /// stale keyring that the key was never rotated and handed out generation 0 only: the
    /// new member, listed as active, was told at every sync that it was removed.
    @Test func anOwnerBehindAnotherOwnersRotationStillReachesTheMemberItAdds() async throws {
        let members = try await KeyRotationTests.Members(count: 4)
        let (alice, bob) = (members.engines[0], members.engines[1])
        try await alice.addMember(members.identities[1].publicIdentity, name: "bob", role: .owner)
        try await alice.addMember(members.identities[2].publicIdentity, name: "carol", role: .writer)
        // (As `concord join` does: Bob's store pins the root his grant names.)
        for index in 1...3 { try SyncEngine.pinMembershipRoot(members.identities[0].publicIdentity.signingKey, in: members.stores[index]) }
        try await members.sync([0, 1, 2])
        #expect(await bob.keyGeneration().isZero)
        // Alice removes Carol (the key rotates); Bob, not synced since, adds Dave.
        try await alice.removeMember(named: "carol")
        try await bob.addMember(members.identities[3].publicIdentity, name: "dave", role: .writer)
        #expect(await bob.keyGeneration() != alice.keyGeneration(), "adding Dave rotated again, past Alice's rotation")
        // Dave joins as `concord join` does (reads the members), writes, and syncs.
        _ = try await members.engines[3].members()
        try members.note(3, "by-dave")
        try await members.sync([3, 0, 1, 3])
        #expect(await members.engines[3].keyGeneration() == alice.keyGeneration())
        let dump = try members.stores[0].canonicalDump()
        #expect(try members.stores[1].canonicalDump() == dump && members.stores[3].canonicalDump() == dump)
        #expect(dump.contains("by-dave by 3"))
        await KeyRotationTests().expectRemoved(members.engines[2])
    }

    /// Found by the shared-store fuzz (seeds 79 and 99 at `make soak`'s count): a writer
    /// pushes, a reader applies it, and the owner — who had not — removes the writer. Once,
    /// the removal's cut was only what the owner had applied: every replica but the reader
    /// rejected that batch, and the reader kept a write nobody else had. The cut now runs
    /// on over the batches the writer had put without a gap; a later one stays out.
    @Test func aRemovalsCutCoversWhatTheMemberPushedBeforeItEvenUnappliedByTheRemover() async throws {
        let members = try await KeyRotationTests.Members(count: 3)
        let owner = members.engines[0]
        try await owner.addMember(members.identities[1].publicIdentity, name: "wendy", role: .writer)
        try await owner.addMember(members.identities[2].publicIdentity, name: "rita", role: .reader)
        for index in 1...2 {
            try SyncEngine.pinMembershipRoot(members.identities[0].publicIdentity.signingKey, in: members.stores[index])
            _ = try await members.engines[index].members()
        }
        try members.note(1, "by-wendy")
        try await members.engines[1].sync()
        try await members.engines[2].sync()
        #expect(try members.stores[2].canonicalDump().contains("by-wendy by 1"))
        try await owner.removeMember(named: "wendy")
        try await members.sync([0, 2])
        let dump = try members.stores[0].canonicalDump()
        #expect(dump.contains("by-wendy by 1"), "the owner applies what the writer pushed before its removal")
        #expect(try members.stores[2].canonicalDump() == dump)
        await KeyRotationTests().expectRemoved(members.engines[1])
    }
}
