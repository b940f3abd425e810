import ConcordCore
import Foundation
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Synchronization
import Testing

/// Live sync: pulls that follow the remote's notifications, pushes that follow other
/// processes' commits, and the adaptive poll that stands in where nothing notifies. Tests in
/// real time only wait — with deadlines far beyond what the outcome needs — for something
/// observable; no duration decides a pass.
@Suite(.timeLimit(.minutes(2))) struct LiveSyncTests {
    static func note(_ index: Int) -> RecordRef { RecordRef(collection: "notes", id: "n\(index)") }

    /// Waits until `condition` holds of the loop, for at most `seconds`; whether it held.
    static func eventually(
        _ auto: AutoSync, within seconds: Int = 30, _ condition: @escaping @Sendable (AutoSync.Status) -> Bool
    ) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await auto.wait(until: condition) }
            group.addTask {
                try? await Task.sleep(for: .seconds(seconds))
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    /// Polls `check` every 20 ms for at most `seconds`; whether it came true.
    static func eventually(within seconds: Int = 30, _ check: () async throws -> Bool) async rethrows -> Bool {
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(seconds)
        while clock.now < deadline {
            if try await check() { return true }
            try? await Task.sleep(for: .milliseconds(20))
        }
        return try await check()
    }

    #if canImport(Glibc)
    /// Another replica's push — through its own store and engine, as another process's
    /// would be — writes a head the watcher signals; this replica's own heads do not.
    @Test func theWatcherSignalsHeadsAnotherReplicaWrites() async throws {
        let fleet = try await Fleet(count: 2)
        // Both replicas have announced themselves (a first sync writes a head of its own
        // before it pushes), so from here each push writes one head.
        try fleet.stores[0].set(Self.note(0), "title", .string("before the watch"))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        let watcher = try RemoteWatch.watcher(for: fleet.remote, ignoring: fleet.stores[0].replicaID, debounce: 10).get()
        defer { watcher.stop() }
        let signals = Mutex(0)
        let counting = Task {
            for await _ in watcher.signals() { signals.withLock { $0 += 1 } }
        }
        // Another replica's push is signalled.
        try fleet.stores[1].set(Self.note(1), "title", .string("theirs"))
        #expect(try await fleet.engines[1].sync().pushed == 1)
        #expect(await Self.eventually { signals.withLock { $0 } >= 1 }, "the other replica's head was signalled")
        // This replica's own pushes are not; the other's next one is.
        for index in 2..<5 {
            try fleet.stores[0].set(Self.note(index), "title", .string("mine \(index)"))
            #expect(try await fleet.engines[0].sync().pushed == 1)
        }
        try fleet.stores[1].set(Self.note(5), "title", .string("theirs again"))
        try await fleet.engines[1].sync()
        #expect(await Self.eventually { signals.withLock { $0 } >= 2 })
        // Had an own head been signalled, a signal more would be on its way: let it come.
        try await Task.sleep(for: .milliseconds(300))
        watcher.stop()
        await counting.value  // stop ends the stream
        #expect(signals.withLock { $0 } == 2, "one signal per push of the other replica, none for this replica's own")
    }

    /// A watcher started on a store no replica pushed to yet — its `heads/` not there — is
    /// watching once the first push creates it.
    @Test func theWatcherFollowsAHeadsFolderCreatedLater() async throws {
        let fleet = try await Fleet(count: 1)
        let root = try #require(fleet.remote as? FolderRemote).root
        try? FileManager.default.removeItem(atPath: root + "/heads")
        #expect(!FileManager.default.fileExists(atPath: root + "/heads"))
        let watcher = try RemoteWatch.watcher(for: fleet.remote, debounce: 10).get()
        defer { watcher.stop() }
        var signals = watcher.signals().makeAsyncIterator()
        try fleet.stores[0].set(Self.note(1), "title", .string("first push"))
        try await fleet.engines[0].sync()
        let signalled = await withTaskGroup(of: Bool.self) { group in
            group.addTask { [watcher] in
                try? await Task.sleep(for: .seconds(30))
                watcher.stop()  // ends the stream: no signal came
                return false
            }
            let got = await signals.next() != nil
            group.cancelAll()
            return got
        }
        #expect(signalled, "the push into the new heads/ was signalled")
    }

    /// With a watcher and an hour-long pull interval, a change another replica pushes is
    /// pulled at once: only the watcher can have started that sync.
    @Test func aWatchedLoopPullsAssoonAsAnotherReplicaPushes() async throws {
        let fleet = try await Fleet(count: 2)
        let watcher = try RemoteWatch.watcher(for: fleet.remote, ignoring: fleet.stores[0].replicaID).get()
        var configuration = AutoSync.Configuration.live(slowestPull: 3_600_000)
        configuration.syncOnStart = false
        let auto = AutoSync(engine: fleet.engines[0], configuration: configuration, watcher: watcher)
        await auto.start()
        #expect(await auto.status.isWatching)
        try fleet.stores[1].set(Self.note(1), "title", .string("from device1"))
        try await fleet.engines[1].sync()
        #expect(await Self.eventually(auto) { $0.counters.deltasApplied >= 1 }, "the watcher's signal pulled the change")
        let counters = await auto.status.counters
        #expect(counters.watchSyncs >= 1 && counters.intervalSyncs == 0, "\(counters)")
        #expect(try fleet.stores[0].record(Self.note(1))?.first { $0.name == "title" }?.value == .scalar(.string("from device1")))
        await auto.stop()
        #expect(await !auto.status.isWatching)
    }

    /// A watcher that stops (a folder deleted, a watch dropped) leaves the loop polling,
    /// adaptively, from the fastest interval.
    @Test func whenTheWatcherStopsTheLoopPolls() async throws {
        let fleet = try await Fleet(count: 1)
        let watcher = try RemoteWatch.watcher(for: fleet.remote).get()
        var configuration = AutoSync.Configuration.live(slowestPull: 600_000)
        configuration.syncOnStart = false
        let auto = AutoSync(engine: fleet.engines[0], configuration: configuration, watcher: watcher)
        await auto.start()
        #expect(await auto.status.pullInterval == 600_000, "while watching, the interval is only the safety net")
        watcher.stop()
        #expect(await Self.eventually(auto) { !$0.isWatching })
        // The poll starts from its fastest interval: a pull comes long before the ten
        // minutes the safety net would wait.
        #expect(await Self.eventually(auto) { $0.counters.intervalSyncs >= 1 }, "the loop polls")
        let interval = try #require(await auto.status.pullInterval)
        #expect(interval < 600_000, "an adaptive interval, not the safety net's")
        await auto.stop()
    }
    #endif

    /// What `sync --watch` says for a remote no platform can watch, and for a folder.
    @Test func onlyAFolderIsWatched() async throws {
        let fleet = try await Fleet(count: 1)
        let wrapped = GatedRemote(wrapping: fleet.remote, gate: Gate())
        guard case let .failure(unavailable) = RemoteWatch.watcher(for: wrapped) else {
            Issue.record("a remote that is not a folder was given a watcher")
            return
        }
        #expect(unavailable.reason.contains("WebDAV and S3 are polled"))
        #expect(RemoteWatch.plan(folder: nil) == .polling(reason: unavailable.reason))
        let folder = try #require(fleet.remote as? FolderRemote).root
        if case .failure = RemoteWatch.plan(folder: folder + "/missing").notificationsOrNil { } else {
            Issue.record("a missing folder cannot be watched")
        }
        #if canImport(Glibc)
        #expect(RemoteWatch.plan(folder: folder) == .notifications("the folder \(folder) (inotify)"))
        #endif
    }
}

extension WatchPlan {
    /// The description of the notifications, or the reason for polling as a failure.
    var notificationsOrNil: Result<String, WatchUnavailable> {
        switch self {
        case let .notifications(description): .success(description)
        case let .polling(reason): .failure(WatchUnavailable(reason: reason))
        }
    }
}
