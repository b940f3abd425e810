import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Only an owner rotates the key of a shared store: a key object made by a writer — whose
/// signature is valid, and which follows the real generation — is left aside by every
/// replica, recipient or not: named in the sync report and by doctor, never adopted, and
/// nobody is marked removed. A removed owner's rotations count when made before its removal.
@Suite struct ForgedRotationTests {
    @Test func aWritersRotationExcludingTheOwnerIsLeftAsideAndNobodyIsRemoved() async throws {
        // 0 owns the store; 1 (wendy) and 2 (bob) write; 3 (carol) is removed: a real generation.
        let members = try await KeyRotationTests.Members(count: 4)
        let owner = members.engines[0]
        let pub = members.identities.map(\.publicIdentity)
        try await owner.addMember(pub[1], name: "wendy", role: .writer)
        try await owner.addMember(pub[2], name: "bob", role: .writer)
        try await owner.addMember(pub[3], name: "carol", role: .writer)
        for index in 0..<3 { try members.note(index, "before\(index)") }
        try await members.sync([0, 1, 2])
        try await owner.removeMember(named: "carol")
        let real = await owner.keyGeneration()
        try await members.sync([1, 2])
        #expect(await members.engines[1].keyGeneration() == real)

        // Wendy's own engine refuses to rotate: she is no owner.
        let refused = await #expect(throws: ConcordError.self) { try await members.engines[1].rotateStoreKey(recipients: [pub[2]]) }
        #expect(refused?.code == .invalidOperation)
        // A client of hers that rotates anyway: a new key sealed to herself and bob, chaining
        // the real generation's key (she holds it), properly signed — excluding the owner.
        let ring = try Keyring(base: members.key, objects: try members.sealedKeyObjects(), identity: members.identities[1])
        let realID = try #require(real.ids.first)
        let forgedID = KeyGenerationID.random()
        let forged = try KeyObject.create(
            key: StoreKey.random().of(KeyGeneration([forgedID])!), parents: [realID: try #require(ring.keys[realID])],
            recipients: [pub[1], pub[2]], signer: members.identities[1], path: Keyring.path(forgedID), attestedUnder: members.key)
        try await members.folder.put(Keyring.path(forgedID), forged.bytes)

        // Every replica — the owner (not a recipient), bob (a recipient), wendy herself —
        // names it and keeps syncing under the real generation; nobody is removed.
        for index in 0..<3 { try members.note(index, "after\(index)") }
        for _ in 0..<2 {
            for index in 0..<3 {
                let report = try await members.engines[index].sync()
                #expect(report.rejected.contains { $0.hasPrefix(Keyring.path(forgedID)) && $0.contains("unauthentic") }, "\(index): \(report.rejected)")
                #expect(await members.engines[index].keyGeneration() == real)
                #expect(try SyncEngine.removal(in: members.stores[index]) == nil)
            }
        }
        let dump = try members.stores[0].canonicalDump()
        #expect(try members.stores[1].canonicalDump() == dump && members.stores[2].canonicalDump() == dump)
        #expect(dump.contains("after0 by 0") && dump.contains("after1 by 1") && dump.contains("after2 by 2"))
        // Nothing on the remote is sealed under the forged generation.
        for object in try await members.sealedObjects() {
            #expect(try !EncryptedObject.generation(of: object.bytes, path: object.path).ids.contains(forgedID), "\(object.path)")
        }
        // Doctor names it as unauthentic.
        let doctor = try await owner.doctor()
        #expect(doctor.findings.contains { $0.path == Keyring.path(forgedID) && $0.kind == .unauthentic }, "\(doctor.findings)")
        // The owner's next rotation follows the real generation, never the forged one.
        let next = try await owner.rotateStoreKey(recipients: [pub[1], pub[2]])
        #expect(next.parents == [realID])
        try await members.sync([1, 2, 0])
        #expect(await members.engines[2].keyGeneration() == KeyGeneration([next.generation]))
    }

    /// A removed owner's rotation made while it was an owner still counts — the removing
    /// owner's rotation follows it, which vouches for it even to a replica that reads both
    /// only after the removal — and one it makes after its removal counts nowhere.
    @Test func aRemovedOwnersEarlierRotationCountsAndItsLaterOneIsLeftAside() async throws {
        // 0 and 1 (olga) own the store; 2 (bob) writes; 3 (dave) writes and first syncs at the end.
        let members = try await KeyRotationTests.Members(count: 4)
        let root = members.engines[0]
        let pub = members.identities.map(\.publicIdentity)
        try await root.addMember(pub[1], name: "olga", role: .owner)
        try await root.addMember(pub[2], name: "bob", role: .writer)
        try await root.addMember(pub[3], name: "dave", role: .writer)
        try await members.sync([0, 1, 2])
        let earlier = try await members.engines[1].rotateStoreKey(recipients: [pub[0], pub[2], pub[3]])
        try await members.sync([0, 2])
        try await root.removeMember(named: "olga")
        let current = await root.keyGeneration()
        #expect(current != KeyGeneration([earlier.generation]))

        // After her removal, olga (holding the earlier generation) rotates to herself alone.
        let ring = try Keyring(base: members.key, objects: try members.sealedKeyObjects(), identity: members.identities[1])
        let lateID = KeyGenerationID.random()
        let late = try KeyObject.create(
            key: StoreKey.random().of(KeyGeneration([lateID])!), parents: [earlier.generation: try #require(ring.keys[earlier.generation])],
            recipients: [pub[1]], signer: members.identities[1], path: Keyring.path(lateID), attestedUnder: members.key)
        try await members.folder.put(Keyring.path(lateID), late.bytes)

        try members.note(3, "by-dave")
        for index in [2, 3, 0, 2, 3] {
            let report = try await members.engines[index].sync()
            #expect(report.rejected.contains { $0.hasPrefix(Keyring.path(lateID)) && $0.contains("unauthentic") }, "\(index): \(report.rejected)")
            #expect(!report.rejected.contains { $0.hasPrefix(Keyring.path(earlier.generation)) }, "\(index): \(report.rejected)")
            #expect(await members.engines[index].keyGeneration() == current, "\(index)")
            #expect(try SyncEngine.removal(in: members.stores[index]) == nil)
        }
        #expect(try members.stores[0].canonicalDump().contains("by-dave by 3"))
        #expect(try members.stores[2].canonicalDump() == members.stores[3].canonicalDump())
    }
}
