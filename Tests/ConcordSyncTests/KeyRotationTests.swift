import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Rotating the store key (removal's key side) over a real folder remote: members pick the
/// new generation up at their next sync, a removed replica is told in one line, keeps its
/// copy read-only and opens nothing sealed since; concurrent rotations converge.
@Suite struct KeyRotationTests {
    /// Replicas with identities over one folder remote.
    struct Members {
        let scratch = TemporaryDirectory("keys")
        let folder: FolderRemote
        let key: StoreKey
        let storeID: StoreID
        let clock = ManualClock()
        var stores: [Store] = []
        var engines: [SyncEngine] = []
        var identities: [DeviceIdentity] = []
        /// Per replica, a listing that hides key objects while set (a stale listing).
        var stale: [StaleKeys] = []

        init(count: Int) async throws {
            folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true, clock: clock)
            (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: "pass", limits: .minimum)
            for index in 0..<count {
                let store = try Store(path: scratch.file("r\(index).db"), configuration: .init(clock: clock))
                let identity = DeviceIdentity.generate()
                let remote = StaleKeys(base: folder)
                stores.append(store)
                identities.append(identity)
                stale.append(remote)
                engines.append(SyncEngine(store: store, remote: remote, key: key, storeID: storeID, clock: clock, identity: identity))
            }
        }

        func note(_ index: Int, _ id: String) throws {
            try stores[index].put(RecordRef(collection: "notes", id: id), ["text": .scalar(.string("\(id) by \(index)"))])
        }

        func sync(_ indexes: [Int], rounds: Int = 2) async throws {
            for _ in 0..<rounds { for index in indexes { try await engines[index].sync() } }
        }

        /// Every batch, head and snapshot on the remote, with its bytes.
        func sealedObjects() async throws -> [(path: String, bytes: [UInt8])] {
            var found: [(String, [UInt8])] = []
            for object in try await folder.list(prefix: "") {
                switch RemoteLayout.parse(object.path) {
                case .batch?, .head?, .snapshot?: found.append((object.path, try #require(try await folder.get(object.path))))
                default: continue
                }
            }
            return found
        }
    }

    /// A remote whose listings leave out key objects while `hiding` is set.
    final class StaleKeys: Remote, @unchecked Sendable {
        let base: any Remote
        let lock = NSLock()
        private var _hiding = false
        var hiding: Bool {
            get { lock.withLock { _hiding } }
            set { lock.withLock { _hiding = newValue } }
        }
        init(base: any Remote) { self.base = base }
        func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { try await base.put(path, bytes) }
        func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await base.get(path) }
        func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? { try await base.get(path, limit: limit) }
        func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
            let listed = try await base.list(prefix: prefix)
            return hiding ? listed.filter { !$0.path.hasPrefix(RemoteLayout.keyObjectsPrefix) } : listed
        }
        func delete(_ path: String) async throws(ConcordError) { try await base.delete(path) }
        func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) { try await base.putStream(path, read: read) }
        func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
            try await base.getStream(path, write: write)
        }
        func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] { try await base.anomalies(prefix: prefix) }
    }

    func expectRemoved(_ engine: SyncEngine, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            try await engine.sync()
            Issue.record("a removed replica's sync succeeded", sourceLocation: sourceLocation)
        } catch {
            #expect(error.code == .removedFromStore, "\(error)", sourceLocation: sourceLocation)
            #expect(error.message.contains("removed") && !error.message.contains("\n"), sourceLocation: sourceLocation)
        }
    }

    /// Every key `store` holds (generation 0's, and every one its kept key objects give its
    /// identity), tried on every object sealed under a generation other than 0, for every
    /// purpose: none opens one.
    func expectOpensNothingNew(_ members: Members, replica: Int, written: [(path: String, bytes: [UInt8])]) throws {
        var held: [StoreKey] = [members.key]
        let ring = try Keyring(base: members.key, objects: try members.sealedKeyObjects(), identity: members.identities[replica])
        held += ring.keys.values
        for (path, bytes) in written {
            let generation = try EncryptedObject.generation(of: bytes, path: path)
            for key in held {
                for purpose in [KeyPurpose.batches, .heads, .snapshots] {
                    #expect((try? EncryptedObject.open(bytes, path: path, key: key.of(generation).subkey(for: purpose))) == nil, "\(path) opened")
                }
            }
        }
    }

    @Test func membersPickUpTheNewKeyAndTheRemovedOneIsToldKeepsItsCopyAndOpensNothingNew() async throws {
        let members = try await Members(count: 3)
        for index in 0..<3 { try members.note(index, "before\(index)") }
        try await members.sync([0, 1, 2])
        let before = try members.stores[2].canonicalDump()
        #expect(Set(try members.stores.map { try $0.canonicalDump() }).count == 1)
        let old = Set(try await members.sealedObjects().map(\.path))

        // A rotates to itself and B: C is removed.
        let rotation = try await members.engines[0].rotateStoreKey(recipients: [members.identities[1].publicIdentity])
        #expect(rotation.parents == [.zero] && rotation.recipients == 2)
        try members.note(0, "afterA")
        try await members.engines[0].sync()
        // B picks it up at its next sync, with no action, and writes under it too.
        try await members.engines[1].sync()
        #expect(await members.engines[1].keyGeneration() == KeyGeneration([rotation.generation]))
        try members.note(1, "afterB")
        try await members.sync([1, 0])
        #expect(try members.stores[0].canonicalDump() == members.stores[1].canonicalDump())
        #expect(try members.stores[0].canonicalDump().contains("afterB by 1"))

        // C: one line saying it was removed, its copy as it was, writes refused.
        await expectRemoved(members.engines[2])
        await expectRemoved(members.engines[2])
        #expect(try members.stores[2].canonicalDump() == before)
        #expect(try SyncEngine.removal(in: members.stores[2])?.contains("removed") == true)
        let refused = #expect(throws: ConcordError.self) { try members.note(2, "late") }
        #expect(refused?.code == .removedFromStore)
        #expect(try members.stores[2].canonicalDump() == before)

        // Everything sealed since the rotation names the new generation, and C opens none of it.
        let written = try await members.sealedObjects().filter { !old.contains($0.path) || $0.path.hasPrefix("heads/") }
        let newer = try written.filter { try !EncryptedObject.generation(of: $0.bytes, path: $0.path).isZero }
        #expect(newer.count >= 4, "\(written.map(\.path))")
        #expect(try written.filter { !old.contains($0.path) }.allSatisfy { try EncryptedObject.generation(of: $0.bytes, path: $0.path) == KeyGeneration([rotation.generation]) })
        try expectOpensNothingNew(members, replica: 2, written: newer)
        // No key in plaintext on the remote: neither the old nor the new one.
        let keyObject = try #require(try await members.folder.get(Keyring.path(rotation.generation)))
        let newKey = try #require(try Keyring(base: members.key, objects: try members.sealedKeyObjects(), identity: members.identities[0]).current)
        for secret in [members.key, newKey] {
            let raw = try #require(Hex.decode(String(decoding: secret.keyFileContents.dropLast(), as: UTF8.self)))
            #expect(!keyObject.contains(raw))
        }
    }

    /// Two owners rotate from generation 0 at once (neither lists the other's key object):
    /// A drops D, B drops C. Members of both converge on one key derived from both; C and D
    /// each hold one of the two and derive nothing current.
    @Test func concurrentRotationsConvergeOnOneKeyAndExcludeAMemberRemovedInEither() async throws {
        let members = try await Members(count: 4)
        for index in 0..<4 { try members.note(index, "before\(index)") }
        try await members.sync([0, 1, 2, 3])
        let pub = members.identities.map(\.publicIdentity)
        members.stale[1].hiding = true
        let dropsD = try await members.engines[0].rotateStoreKey(recipients: [pub[1], pub[2]])
        let dropsC = try await members.engines[1].rotateStoreKey(recipients: [pub[0], pub[3]])
        members.stale[1].hiding = false
        #expect(dropsD.parents == [.zero] && dropsC.parents == [.zero])
        try members.note(0, "afterA")
        try members.note(1, "afterB")
        try await members.sync([0, 1], rounds: 3)
        let current = KeyGeneration([dropsD.generation, dropsC.generation])
        #expect(await members.engines[0].keyGeneration() == current)
        #expect(await members.engines[1].keyGeneration() == current)
        #expect(try members.stores[0].canonicalDump() == members.stores[1].canonicalDump())
        let dump = try members.stores[0].canonicalDump()
        #expect(dump.contains("afterA by 0") && dump.contains("afterB by 1"))
        for removed in [2, 3] {
            await expectRemoved(members.engines[removed])
            let ring = try Keyring(base: members.key, objects: try members.sealedKeyObjects(), identity: members.identities[removed])
            #expect(ring.frontier == current && ring.current == nil && ring.unopened.count == 1)
        }
        // What A and B sealed under the merged generation opens for neither C nor D.
        let merged = try await members.sealedObjects().filter { try EncryptedObject.generation(of: $0.bytes, path: $0.path) == current }
        #expect(!merged.isEmpty)
        for removed in [2, 3] { try expectOpensNothingNew(members, replica: removed, written: merged) }
    }

    /// A key object modified on the remote — its signature or its chained keys — is refused
    /// by a member with a typed error, and nothing is sealed under it; one whose header was
    /// changed (another recipient's sealed key) no longer matches its signer's attestation:
    /// it is left aside as unauthentic, named in the report. Put back as it was, the member
    /// adopts it.
    @Test func aTamperedKeyObjectIsRejectedWithATypedError() async throws {
        let members = try await Members(count: 3)
        try members.note(1, "before")
        try await members.sync([0, 1])
        let pub = members.identities.map(\.publicIdentity)
        let rotation = try await members.engines[0].rotateStoreKey(recipients: [pub[1], pub[2]])
        let path = Keyring.path(rotation.generation)
        let original = try #require(try await members.folder.get(path))
        let boxes = 4 + 16 + 1 + 16 + 2
        // The box order is random: find B's own, to damage another recipient's.
        let boxOfB = (0..<3).first { index in
            (try? members.identities[1].openSealed(original[(boxes + 80 * index)..<(boxes + 80 * index + 80)])) != nil
        }
        let otherBox = try #require((0..<3).first { $0 != boxOfB })
        for offset in [original.count - 5, original.count - 40, boxes + 80 * otherBox + 60] {
            var bytes = original
            bytes[offset] ^= 0x04
            try await members.folder.put(path, bytes)
            do {
                let report = try await members.engines[1].sync()
                #expect(offset < original.count - 40, "a tampered key object at byte \(offset) was not refused")
                #expect(report.rejected.contains { $0.hasPrefix(path) && $0.contains("unauthentic") }, "\(report.rejected)")
            } catch {
                #expect(error.code == .authenticationFailed && error.message.contains(path), "\(error)")
            }
            #expect(await members.engines[1].keyGeneration() == .zero)
        }
        try await members.folder.put(path, original)
        try await members.engines[1].sync()
        #expect(await members.engines[1].keyGeneration() == KeyGeneration([rotation.generation]))
        // A key object cut short (a torn put) is left aside: not a generation, not an error;
        // the report names it.
        let torn = Keyring.path(.random())
        try await members.folder.put(torn, Array(original.dropLast(9)))
        let report = try await members.engines[2].sync()
        #expect(await members.engines[2].keyGeneration() == KeyGeneration([rotation.generation]))
        #expect(report.rejected.contains { $0.hasPrefix(torn) }, "\(report.rejected)")
    }
}

extension KeyRotationTests.Members {
    /// The key objects on the remote, as a replica would read them.
    func sealedKeyObjects() throws -> [KeyObject] {
        let folderPath = scratch.file("remote") + "/" + RemoteLayout.keyObjectsPrefix
        return try FileManager.default.contentsOfDirectory(atPath: folderPath).compactMap { name in
            guard let id = KeyGenerationID(hex: name), let data = FileManager.default.contents(atPath: folderPath + name) else { return nil }
            return try? KeyObject(bytes: [UInt8](data), path: Keyring.path(id), id: id)
        }
    }
}
