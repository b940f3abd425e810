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
/// nobody is marked removed.
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
}
