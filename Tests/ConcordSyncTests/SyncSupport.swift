import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation

/// Replicas syncing through one folder remote with a passphrase.
struct Fleet {
    let scratch = TemporaryDirectory("sync")
    let remote: any Remote
    let key: StoreKey
    let storeID: StoreID
    var stores: [Store] = []
    var engines: [SyncEngine] = []
    let clock: ManualClock

    static let passphrase = "correct horse battery staple"

    init(count: Int, clock: ManualClock = ManualClock(), remote wrap: ((FolderRemote) -> any Remote)? = nil) async throws {
        self.clock = clock
        // The folder stamps objects with the fleet's clock, so object ages follow it.
        let folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true, clock: clock)
        remote = wrap?(folder) ?? folder
        (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: Self.passphrase, limits: .minimum)
        for index in 0..<count { try await add(name: "device\(index)") }
    }

    /// Adds a replica: a fresh store that unlocks the remote with the passphrase.
    mutating func add(name: String) async throws {
        let store = try Store(path: scratch.file("\(name).db"), configuration: .init(clock: clock))
        try store.setName(name)
        let (key, storeID) = try await SyncEngine.unlock(remote, passphrase: Self.passphrase)
        stores.append(store)
        engines.append(SyncEngine(store: store, remote: remote, key: key, storeID: storeID, clock: clock))
    }

    /// Syncs every replica, `rounds` times.
    func syncAll(rounds: Int = 2) async throws {
        for _ in 0..<rounds {
            for engine in engines { try await engine.sync() }
        }
    }

    func dumps() throws -> Set<String> { Set(try stores.map { try $0.canonicalDump() }) }
}
