import ConcordCore
import ConcordHTTP
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import ConcordWebDAV
import Foundation
import Testing

/// HTTP-level faults from a loopback proxy in front of Apache: transient statuses are
/// retried (honouring `Retry-After`), a persistent one is a typed error, a reset or a
/// truncated body is never taken for data, and a PUT answered but never stored is put again
/// by the next sync.
@Suite struct FaultProxyTests {
    func remote(retry: HTTPRetryPolicy = .init()) async throws -> (FaultProxy, WebDAVRemote) {
        let server = try await LoopbackServers.shared.server(.apache)
        let proxy = try await FaultProxy.start(in: server)
        let remote = try WebDAVRemote(url: "\(proxy.origin)/stores/p\(UUID().uuidString.prefix(12).lowercased())", retry: retry)
        try await remote.createRoot()
        return (proxy, remote)
    }

    let path = RemoteLayout.batch(ReplicaID(high: 7, low: 7), seq: 1)
    let bytes = (0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }

    @Test func transientStatusesAreRetriedHonouringRetryAfter() async throws {
        let (proxy, remote) = try await remote()
        try await proxy.arm(.status503, count: 2, method: "PUT")
        try await remote.put(path, bytes)
        try await proxy.arm(.status429, count: 1, method: "GET")
        #expect(try await remote.get(path) == bytes)
        let hits = try await proxy.hits()
        #expect(hits[.status503] == 2 && hits[.status429] == 1)
    }

    @Test func aPersistentServerErrorIsATypedErrorNamingTheRemoteAndLosesNothing() async throws {
        let (proxy, remote) = try await remote(retry: .init(attempts: 3, base: .milliseconds(10)))
        try await proxy.arm(.status500, count: 3, method: "PUT")
        let error = try #require(await #expect(throws: ConcordError.self) { try await remote.put(path, bytes) })
        #expect(error.code == .remote && error.message.contains("500") && error.message.contains(proxy.origin))
        #expect(!error.message.contains("\n"))
        #expect(try await remote.get(path) == nil)
        try await remote.put(path, bytes)
        #expect(try await remote.get(path) == bytes)
    }

    @Test(arguments: [FaultProxy.Mode.reset, .truncate, .slow])
    func aBrokenOrSlowResponseIsNeverTakenForData(_ mode: FaultProxy.Mode) async throws {
        let (proxy, remote) = try await remote(retry: .init(attempts: 3, base: .milliseconds(10)))
        try await remote.put(path, bytes)
        try await proxy.arm(mode, count: 1, method: "GET", delay: 1)
        // Retried: the whole object, never half of it.
        #expect(try await remote.get(path) == bytes)
        #expect(try await proxy.hits()[mode] == 1)
        // A listing cut short is retried too, never read as a shorter listing.
        try await proxy.arm(mode, count: 1, method: "PROPFIND", delay: 1)
        #expect(try await remote.list(prefix: "").map(\.path) == [path])
    }

    @Test func aPutAnsweredButNeverStoredIsPutAgainByTheNextSync() async throws {
        let (proxy, remote) = try await remote()
        let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: "proxy", limits: .minimum)
        let scratch = TemporaryDirectory("proxy")
        let a = try Store(path: scratch.file("a.db"))
        let b = try Store(path: scratch.file("b.db"))
        let writer = SyncEngine(store: a, remote: remote, key: key, storeID: storeID, lossCheckInterval: 0)
        let reader = SyncEngine(store: b, remote: remote, key: key, storeID: storeID, lossCheckInterval: 0)
        let note = RecordRef(collection: "notes", id: "n1")
        // Both announce themselves first (a first sync writes its head before anything else).
        try await writer.sync()
        try await reader.sync()
        try a.set(note, "title", .string("stored at last"))
        // The batch's PUT is answered 201 and dropped; its head lands.
        try await proxy.arm(.unstored, count: 1, method: "PUT")
        try await writer.sync()
        #expect(try await proxy.hits()[.unstored] == 1)
        _ = try await reader.sync()
        #expect(try b.record(note) == nil)
        // The writer's next sync sees its batch missing and puts it again; the reader gets it.
        let again = try await writer.sync()
        #expect(!again.remoteRolledBack.isEmpty)
        _ = try await reader.sync()
        #expect(try b.canonicalDump() == (try a.canonicalDump()))
        #expect(try b.record(note) != nil)
    }

    /// A WebDAV listing without sizes (`getcontentlength` is optional) lists every object at
    /// an unknown size, never 0; so the periodic check of every batch and file takes none
    /// for torn: it puts back 0 objects and warns of no rollback. Once it re-uploaded every
    /// file and republished every batch of its own, with a false "rolled back" warning.
    @Test func aListingWithoutSizesMakesThePeriodicCheckPutBackNothing() async throws {
        let (proxy, remote) = try await remote()
        let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: "proxy", limits: .minimum)
        let scratch = TemporaryDirectory("proxy")
        let a = try Store(path: scratch.file("a.db"))
        let writer = SyncEngine(store: a, remote: remote, key: key, storeID: storeID, lossCheckInterval: 0)
        let note = RecordRef(collection: "notes", id: "n1")
        try a.write { tx throws(ConcordError) in
            try tx.set(note, "title", .string("with a file"))
            _ = try tx.attachFile(note, "doc", bytes: Array(repeating: 7, count: 100_000))
        }
        let first = try await writer.sync()
        #expect(first.pushed == 1 && first.filesUploaded == 1)
        try await proxy.arm(.sizeless, count: 100_000, method: "PROPFIND")
        let listed = try await remote.list(prefix: RemoteLayout.blobsPrefix)
        #expect(listed.count == 1 && listed.allSatisfy { $0.size == nil }, "\(listed)")
        for _ in 0..<2 {
            let checked = try await writer.sync()
            #expect(checked.lossChecked)
            #expect(checked.remoteRolledBack.isEmpty, "\(checked.remoteRolledBack)")
            #expect(checked.filesUploaded == 0 && checked.pushed == 0)
        }
        #expect(try await proxy.hits()[.sizeless] ?? 0 > 0)
    }

    /// A full server or an exceeded quota (507) is `remoteFull`, not retried, in one line
    /// naming the remote; the write waits in the store and goes up once there is room.
    @Test func aFullServerIsRemoteFullAndTheWriteGoesUpOnceThereIsRoom() async throws {
        let (proxy, remote) = try await remote()
        let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: "proxy", limits: .minimum)
        let scratch = TemporaryDirectory("full")
        let a = try Store(path: scratch.file("a.db"))
        let b = try Store(path: scratch.file("b.db"))
        let writer = SyncEngine(store: a, remote: remote, key: key, storeID: storeID)
        let note = RecordRef(collection: "notes", id: "n1")
        try a.set(note, "title", .string("waits for room"))
        // One 507 is armed: were it retried, the retry would succeed and no error come back.
        try await proxy.arm(.status507, count: 1, method: "PUT")
        let error = try #require(await #expect(throws: ConcordError.self) { try await writer.sync() })
        #expect(error.code == .remoteFull, "\(error)")
        #expect(error.message.contains("507") && error.message.contains(proxy.origin) && !error.message.contains("\n"))
        #expect(try await proxy.hits()[.status507] == 1)
        #expect(try a.record(note) != nil, "the write is still in the store")
        // Room again: the next sync puts it, and another replica gets it.
        let pushed = try await writer.sync()
        #expect(pushed.pushed == 1)
        _ = try await SyncEngine(store: b, remote: remote, key: key, storeID: storeID).sync()
        #expect(try b.canonicalDump() == (try a.canonicalDump()))
        #expect(try b.record(note) != nil)
    }
}
