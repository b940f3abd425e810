import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

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

    /// A fleet of `count` replicas whose remote is `wrap` around the folder, and that wrapper.
    static func wrapped<Wrapper: Remote>(count: Int, _ wrap: @escaping (FolderRemote) -> Wrapper) async throws -> (Fleet, Wrapper) {
        var made: Wrapper?
        let fleet = try await Fleet(count: count) { folder in
            let remote = wrap(folder)
            made = remote
            return remote
        }
        return (fleet, try #require(made))
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

/// A remote that forwards every call to `base`; a test wrapper implements only the calls
/// it changes.
protocol ForwardingRemote: Remote {
    var base: any Remote { get }
}

extension ForwardingRemote {
    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { try await base.put(path, bytes) }
    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await base.get(path) }
    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? { try await base.get(path, limit: limit) }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { try await base.list(prefix: prefix) }
    func delete(_ path: String) async throws(ConcordError) { try await base.delete(path) }
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) { try await base.putStream(path, read: read) }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, write: write)
    }
    func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] { try await base.anomalies(prefix: prefix) }
}
