import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// `RemoteStores` from the library: named stores created, listed, found, opened by a
/// `SyncEngine`, and deleted (refused while in use) on a folder remote.
@Suite struct RemoteStoresLibraryTests {
    @Test func storesAreCreatedListedFoundSyncedAndDeleted() async throws {
        let scratch = TemporaryDirectory("remote-stores")
        try FileManager.default.createDirectory(atPath: scratch.file("remote"), withIntermediateDirectories: true)
        let stores = RemoteStores(root: FolderLocation(path: scratch.file("remote")))
        let key = StoreKey.random()
        let family = try await stores.create(named: "family", credential: .passphrase("p"), limits: .minimum, now: 1_000)
        let work = try await stores.create(named: "work", credential: .key(key), now: 2_000)
        #expect(family.manifest.storeID != work.manifest.storeID)
        await #expect(throws: ConcordError.self) { try await stores.create(named: "family", credential: .passphrase("p"), limits: .minimum, now: 3_000) }

        let asFamily = try await stores.list(credential: .passphrase("p"))
        #expect(asFamily.map(\.name) == ["family", nil])
        #expect(asFamily.map(\.created) == [1_000, 2_000] && asFamily.allSatisfy { !$0.isRoot && $0.objects == 1 })
        #expect(try await stores.list(credential: .key(key)).map(\.name) == ["work", nil])
        #expect(try await stores.list(credential: nil).allSatisfy { $0.name == nil && !$0.opened })
        #expect(try await stores.find(named: "family", credential: .passphrase("wrong")) == nil)
        #expect(try await stores.find(named: "work", credential: .passphrase("p")) == nil)
        let found = try #require(try await stores.find(named: "family", credential: .passphrase("p")))
        #expect(found.key == family.key && found.manifest == family.manifest)

        let id = family.manifest.storeID
        let store = try Store(path: scratch.file("device.db"))
        let engine = SyncEngine(store: store, remote: try await stores.open(id), key: found.key, storeID: id)
        try store.put(RecordRef(collection: "recipes", id: "soup"), ["title": .scalar(.string("Soup"))])
        _ = try await engine.sync()
        #expect(FileManager.default.fileExists(atPath: scratch.file("remote/stores/\(id.hex)/heads")))
        #expect(!FileManager.default.fileExists(atPath: scratch.file("remote/heads")))

        // In use: the device just synced. Not when it is the caller's own replica, or forced.
        let now = UInt64(Date().timeIntervalSince1970 * 1000)
        for (key, force, code) in [(found.key, false, ConcordError.Code.storeInUse), (work.key, true, .wrongKey)] {
            do {
                _ = try await stores.delete(id, key: key, now: now, force: force)
                Issue.record("the deletion was not refused")
            } catch let error as ConcordError {
                #expect(error.code == code, "\(error)")
            }
        }
        // The refused attempts deleted nothing.
        #expect(try await stores.list(credential: .passphrase("p")).first?.objects ?? 0 >= 3)
        let deleted = try await stores.delete(id, key: found.key, now: now, excluding: [store.replicaID])
        #expect(deleted.objectsDeleted >= 3)
        #expect(try await stores.list(credential: .passphrase("p")).map(\.name) == [nil])
        do {
            _ = try await stores.open(id)
            Issue.record("a deleted store opened")
        } catch let error as ConcordError {
            #expect(error.code == .noSuchStore)
        }
        #expect(try await stores.list(credential: .key(key)).map(\.name) == ["work"])
    }
}
