import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// Over a link with latency, a backlog must not cost one round trip per batch: pull fetches
/// ahead and push puts several batches at once — never more than `requestsInFlight`.
@Suite struct InFlightTests {
    /// Counts the requests running at once; each takes a few milliseconds, as over a network.
    final class Gauge: ForwardingRemote {
        let base: any Remote
        /// Requests running now and the most at once: in all, and per kind of object.
        let running = Mutex((now: [String: Int](), most: [String: Int]()))
        init(_ base: any Remote) { self.base = base }

        var most: Int { running.withLock { $0.most["all", default: 0] } }
        /// The most reads of heads at once.
        var mostHeads: Int { running.withLock { $0.most[RemoteLayout.headsPrefix, default: 0] } }
        /// The most reads of batches at once.
        var mostBatches: Int { running.withLock { $0.most[RemoteLayout.replicasPrefix, default: 0] } }
        func reset() { running.withLock { $0 = ([:], [:]) } }

        func measured<T>(_ path: String = "", _ body: () async throws(ConcordError) -> T) async throws(ConcordError) -> T {
            let kinds = ["all"] + [RemoteLayout.headsPrefix, RemoteLayout.replicasPrefix].filter { path.hasPrefix($0) }
            running.withLock { state in
                for kind in kinds {
                    state.now[kind, default: 0] += 1
                    state.most[kind] = max(state.most[kind, default: 0], state.now[kind]!)
                }
            }
            defer { running.withLock { state in for kind in kinds { state.now[kind]! -= 1 } } }
            try? await Task.sleep(for: .milliseconds(3))
            return try await body()
        }

        func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { try await measured { () throws(ConcordError) in try await base.put(path, bytes) } }
        func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await measured { () throws(ConcordError) in try await base.get(path) } }
        func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
            try await measured(path) { () throws(ConcordError) in try await base.get(path, limit: limit) }
        }
        func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
            try await measured { () throws(ConcordError) in try await base.putStream(path, read: read) }
        }
        func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
            try await measured { () throws(ConcordError) in try await base.getStream(path, write: write) }
        }
    }

    /// A fleet behind a ``Gauge``, and a maker of its replicas syncing `window` requests at
    /// a time.
    static func fleet(window: Int) async throws -> (Gauge, (String) throws -> (Store, SyncEngine)) {
        let (fleet, remote) = try await Fleet.wrapped(count: 0, Gauge.init)
        let (key, storeID) = try await SyncEngine.unlock(remote, passphrase: Fleet.passphrase)
        let clock = fleet.clock
        return (remote, { name in
            let store = try Store(path: fleet.scratch.file("\(name)-\(window).db"), configuration: .init(clock: clock))
            return (store, SyncEngine(store: store, remote: remote, key: key, storeID: storeID, clock: clock, snapshotEvery: nil, requestsInFlight: window))
        })
    }

    @Test(arguments: [1, 4, 8])
    func aBacklogMovesWithBoundedRequestsInFlightAndConverges(window: Int) async throws {
        let (remote, engine) = try await Self.fleet(window: window)
        let (writerStore, writer) = try engine("writer")
        let (readerStore, reader) = try engine("reader")
        // 40 batches: one write each, sealed by a sync each (pushed later, all at once).
        for index in 0..<40 {
            try writerStore.set(RecordRef(collection: "notes", id: "n\(index)"), "title", .string("note \(index)"))
            _ = try writerStore.seal(maxSlots: 10)
        }
        remote.reset()
        let pushed = try await writer.sync(mode: .pushOnly)
        #expect(pushed.pushed == 40)
        let pushing = remote.most
        remote.reset()
        let pulled = try await reader.sync(mode: .pullOnly)
        #expect(pulled.applied == 40)
        let pulling = remote.most
        #expect(pushing <= window && pulling <= window)
        if window == 1 {
            #expect(pushing == 1 && pulling == 1)
        } else {
            #expect(pushing > 1 && pulling > 1, "pushing \(pushing), pulling \(pulling) at once")
        }
        #expect(try writerStore.canonicalDump() == (try readerStore.canonicalDump()))
    }

    /// Files too: a batch with twelve files uploads them a window at a time, a reader
    /// fetches them a window at a time, and so does a newcomer joining a snapshot.
    @Test(arguments: [1, 4])
    func filesMoveWithBoundedRequestsInFlightInPushPullAndBootstrap(window: Int) async throws {
        let (remote, engine) = try await Self.fleet(window: window)
        let (writerStore, writer) = try engine("writer")
        let (readerStore, reader) = try engine("reader")
        let photos = (0..<12).map { Array("photo \($0) ".utf8) + [UInt8](repeating: UInt8($0), count: 70_000) }
        let files = try writerStore.write { transaction throws(ConcordError) in
            try photos.enumerated().map { index, bytes throws(ConcordError) in
                try transaction.attachFile(RecordRef(collection: "photos", id: "p\(index)"), "image", bytes: bytes)
            }
        }
        remote.reset()
        let pushed = try await writer.sync(mode: .pushOnly)
        #expect(pushed.filesUploaded == 12)
        let uploading = remote.most
        remote.reset()
        let pulled = try await reader.sync(mode: .pullOnly)
        #expect(pulled.filesFetched == 12)
        let fetching = remote.most
        // A snapshot, then a newcomer that joins it and fetches its files.
        _ = try await writer.compact(batchGracePeriod: 0)
        let (newcomerStore, newcomer) = try engine("newcomer")
        remote.reset()
        let joined = try await newcomer.sync(mode: .pullOnly)
        #expect(joined.bootstrapped != nil, "the newcomer joined a snapshot")
        #expect(joined.filesFetched == 12)
        let bootstrapping = remote.most
        for most in [uploading, fetching, bootstrapping] {
            #expect(most <= window)
            #expect(window == 1 ? most == 1 : most > 1, "uploading \(uploading), fetching \(fetching), bootstrapping \(bootstrapping) at once")
        }
        let dump = try writerStore.canonicalDump()
        #expect(try readerStore.canonicalDump() == dump)
        #expect(try newcomerStore.canonicalDump() == dump)
        for (file, bytes) in zip(files, photos) {
            #expect(FileManager.default.contents(atPath: newcomerStore.blobs.path(for: file.hash)) == Data(bytes))
        }
    }

    /// A pull that finds news from many replicas opens their heads, and fetches their
    /// batches, a window at a time — across origins, not one origin after another.
    @Test(arguments: [1, 4])
    func newsFromManyReplicasMovesAWindowAtATime(window: Int) async throws {
        let (remote, engine) = try await Self.fleet(window: window)
        var writers: [Store] = []
        for index in 0..<6 {
            let (store, writer) = try engine("writer\(index)")
            try store.set(RecordRef(collection: "notes", id: "w\(index)"), "title", .string("from writer \(index)"))
            _ = try await writer.sync(mode: .pushOnly)
            writers.append(store)
        }
        let (readerStore, reader) = try engine("reader")
        remote.reset()
        let pulled = try await reader.sync(mode: .pullOnly)
        #expect(pulled.applied == 6)
        let (opening, fetching) = (remote.mostHeads, remote.mostBatches)
        #expect(opening <= window && fetching <= window)
        #expect(window == 1 ? opening == 1 : opening > 1, "\(opening) heads opened at once")
        #expect(window == 1 ? fetching == 1 : fetching > 1, "\(fetching) batches of six origins fetched at once")
        for index in 0..<6 {
            #expect(try readerStore.record(RecordRef(collection: "notes", id: "w\(index)")) != nil)
        }
    }
}
