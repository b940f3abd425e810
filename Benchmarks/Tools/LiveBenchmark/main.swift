// Live sync's latency and idle cost (see README.md, "Live sync").
//
//   LiveBenchmark DIR [WRITES] [MODES]
//
// Latency: two replicas on this machine share a folder remote under DIR, each kept live by
// an AutoSync loop with `Configuration.live` (push 50 ms after a commit). WRITES (default
// 100) writes on the first, one at a time, each after a pause of 50–150 ms; for each, the
// time from just before the write until the second replica's change stream reports it
// applied. Twice: with the folder watched (inotify; the poll only a 5-minute safety net),
// then with polling only (the adaptive poll, 1 s after activity doubling to 5 min), then
// over the LAN peer channel (loopback TCP) with the remote unreachable (every storage call
// fails from the first write on). Prints `latency mode=… writes=… median_ms=… p99_ms=…
// max_ms=…` for each. A third argument picks modes: e.g. `peers` or `watch,poll,peers`.
// Modes `webdav` and `s3` run the adaptive poll (as `poll`) with the two replicas on a real
// server started on loopback (Apache mod_dav, moto), as the backend tests start them.
//
// Idle cost: storage requests an idle replica makes in one hour, in virtual time (a
// scheduler whose sleeps jump the clock to their deadline, so the hour takes moments),
// counted by a counting remote: polling every minute (AutoSync's default), the adaptive
// poll from the moment activity stopped, the adaptive poll once settled, and a watched
// folder's safety net. Prints `idle mode=… requests_per_hour=…` for each.
//
// Coalescing: 1,000 writes in a burst, each its own transaction, on a live replica —
// through its own store, then through another `Store` of the same file, as another process
// writes (found by the commit probe). Prints `burst mode=… writes=1000 burst_ms=… batches=…`.
import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import Foundation
import Synchronization

let arguments = CommandLine.arguments
guard arguments.count >= 2 else {
    FileHandle.standardError.write(Data("usage: LiveBenchmark DIR [WRITES]\n".utf8))
    exit(2)
}
let directory = arguments[1]
let writes = arguments.count > 2 ? Int(arguments[2]) ?? 100 : 100
let modes = Set((arguments.count > 3 ? arguments[3] : "watch,poll,peers,burst,idle").split(separator: ",").map(String.init))

func milliseconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) * 1_000 + Double(duration.components.attoseconds) / 1e15
}

func percentile(_ sorted: [Double], _ fraction: Double) -> Double {
    sorted[min(sorted.count - 1, Int((Double(sorted.count - 1) * fraction).rounded()))]
}

/// Two live replicas over a fresh folder; `watched` gives each a watcher of the folder;
/// `peers` connects them over the peer channel and makes the remote fail every call.
/// `server`: the replicas share a fresh root on that loopback server instead of a folder
/// (polling only).
func latency(watched: Bool, peers: Bool = false, server: ServerKind? = nil, run: String) async throws -> [Double] {
    let root = directory + "/" + run
    try? FileManager.default.removeItem(atPath: root)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    let folder = try FolderRemote(root: root + "/remote", createIfMissing: true)
    let base: any Remote = if let server { try await Backends.fresh(server) } else { folder }
    let (key, storeID) = try await SyncEngine.createRemote(base, passphrase: "benchmark", limits: .minimum)
    let remote = FaultyRemote(wrapping: base, seed: 41)
    var stores: [Store] = []
    var loops: [AutoSync] = []
    var channels: [PeerChannel] = []
    for name in ["writer", "reader"] {
        let store = try Store(path: root + "/\(name).db")
        let engine = SyncEngine(store: store, remote: remote, key: key, storeID: storeID)
        var watcher: (any RemoteWatcher)?
        if watched { watcher = try RemoteWatch.watcher(for: folder, ignoring: store.replicaID).get() }
        let channel = peers ? engine.peerChannel(configuration: PeerChannel.Configuration(host: "127.0.0.1")) : nil
        if let channel { channels.append(channel) }
        let auto = AutoSync(engine: engine, configuration: .live(slowestPull: 300_000), watcher: watcher, peers: channel)
        await auto.start()
        _ = await auto.wait { $0.counters.succeeded >= 1 }
        stores.append(store)
        loops.append(auto)
    }
    if peers {
        try await channels[0].connect(host: "127.0.0.1", port: try channels[1].listen())
        remote.plan = FaultyRemote.Plan(failure: 1)
    }
    var arrivals = stores[1].changes().makeAsyncIterator()
    let clock = ContinuousClock()
    var generator = SeededGenerator(seed: 41)
    var latencies: [Double] = []
    for index in 0..<writes {
        try await Task.sleep(for: .milliseconds(Int.random(in: 50...150, using: &generator)))
        let ref = RecordRef(collection: "notes", id: "n\(index)")
        let start = clock.now
        try stores[0].set(ref, "title", .string("write \(index)"))
        while let change = await arrivals.next(), change.ref != ref {}
        latencies.append(milliseconds(clock.now - start))
    }
    for auto in loops { await auto.stop() }
    return latencies.sorted()
}

/// A scheduler whose sleeps jump its clock to their deadline, up to a horizon, where they
/// wait until cancelled. When its clock first passes `mark`, it takes `snapshot()`: what a
/// count stood at before anything planned from then on ran.
final class WarpScheduler: SyncScheduler {
    private struct State {
        var now: UInt64 = 0
        var atMark: Int?
    }

    private let state = Mutex(State())
    private let horizon: UInt64
    private let mark: UInt64
    private let snapshot: @Sendable () -> Int
    private let arrived = AsyncStream<Void>.makeStream()

    init(horizon: UInt64, mark: UInt64, snapshot: @escaping @Sendable () -> Int) {
        self.horizon = horizon
        self.mark = mark
        self.snapshot = snapshot
    }

    func now() -> UInt64 { state.withLock { $0.now } }

    /// The snapshot taken at the mark.
    var atMark: Int { state.withLock { $0.atMark } ?? snapshot() }

    func sleep(until deadline: UInt64) async throws {
        if deadline > horizon {
            arrived.continuation.yield(())
            try await Task.sleep(for: .seconds(86_400 * 365))
        }
        try Task.checkCancellation()
        let snapshot = self.snapshot
        let mark = self.mark
        state.withLock { state in
            if state.atMark == nil && deadline >= mark { state.atMark = snapshot() }
            state.now = max(state.now, deadline)
        }
    }

    /// Returns once a sleep reached past the horizon.
    func reached() async {
        var iterator = arrived.stream.makeAsyncIterator()
        _ = await iterator.next()
    }
}

/// Requests to the storage in the idle hour that starts `settle` ms after a loop configured
/// as `configuration` starts (its start sync and what it does until then are not counted).
func idleRequests(_ configuration: AutoSync.Configuration, settle: UInt64, watched: Bool, run: String) async throws -> Int {
    let root = directory + "/" + run
    try? FileManager.default.removeItem(atPath: root)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    let folder = try FolderRemote(root: root + "/remote", createIfMissing: true)
    let (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: "benchmark", limits: .minimum)
    let counting = FaultyRemote(wrapping: folder, seed: 1)
    let store = try Store(path: root + "/idle.db")
    let engine = SyncEngine(store: store, remote: counting, key: key, storeID: storeID)
    // A replica that holds something (an empty one also looks for a snapshot to start from).
    try store.set(RecordRef(collection: "notes", id: "n0"), "title", .string("before the hour"))
    try await engine.sync()
    var watcher: (any RemoteWatcher)?
    if watched { watcher = try RemoteWatch.watcher(for: folder, ignoring: store.replicaID).get() }
    // The mark is just after the start sync, so the hour counts only idle pulls.
    let scheduler = WarpScheduler(horizon: settle + 3_600_000, mark: max(1, settle)) { counting.counts.requests }
    let auto = AutoSync(engine: engine, configuration: configuration, scheduler: scheduler, watcher: watcher)
    await auto.start()
    await scheduler.reached()
    let counted = counting.counts.requests - scheduler.atMark
    await auto.stop()
    return counted
}

for (mode, watched, peers, name) in [
    ("watch", true, false, "watched folder (inotify)"), ("poll", false, false, "polling only (adaptive)"),
    ("peers", false, true, "peer channel, remote unreachable"),
] where modes.contains(mode) {
    let sorted = try await latency(watched: watched, peers: peers, run: mode)
    let summary = String(
        format: "latency mode=%@ writes=%d median_ms=%.1f p99_ms=%.1f max_ms=%.1f",
        mode, sorted.count, percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? 0)
    print(summary + "   # \(name)")
}

for (mode, server, name) in [
    ("webdav", ServerKind.apache, "polling only (adaptive), WebDAV (Apache mod_dav, loopback)"),
    ("s3", ServerKind.moto, "polling only (adaptive), S3 (moto, loopback)"),
] where modes.contains(mode) {
    let sorted = try await latency(watched: false, server: server, run: mode)
    let summary = String(
        format: "latency mode=%@ writes=%d median_ms=%.1f p99_ms=%.1f max_ms=%.1f",
        mode, sorted.count, percentile(sorted, 0.5), percentile(sorted, 0.99), sorted.last ?? 0)
    print(summary + "   # \(name)")
}

/// A burst of `count` writes, each its own transaction, on a live replica — through its own
/// store, or through another `Store` of the same file as another process would — and the
/// batches its loop pushed for them; with the burst's own duration.
func burst(count: Int, fromAnotherWriter: Bool, run: String) async throws -> (batches: Int, milliseconds: Double) {
    let root = directory + "/" + run
    try? FileManager.default.removeItem(atPath: root)
    try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: root) }
    let folder = try FolderRemote(root: root + "/remote", createIfMissing: true)
    let (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: "benchmark", limits: .minimum)
    let store = try Store(path: root + "/burst.db")
    let engine = SyncEngine(store: store, remote: folder, key: key, storeID: storeID)
    let auto = AutoSync(engine: engine, configuration: .live())
    await auto.start()
    _ = await auto.wait { $0.counters.succeeded >= 1 }
    let writer = fromAnotherWriter ? try Store(path: root + "/burst.db") : store
    let clock = ContinuousClock()
    let start = clock.now
    for index in 0..<count {
        try writer.set(RecordRef(collection: "notes", id: "n\(index)"), "title", .string("burst \(index)"))
    }
    let elapsed = milliseconds(clock.now - start)
    while try store.hasPendingChanges() || store.sealedSeq() > (try SyncEngine.pushedSeq(in: store)) {
        try await Task.sleep(for: .milliseconds(20))
    }
    let batches = await auto.status.counters.batchesPushed
    await auto.stop()
    return (batches, elapsed)
}

for (other, mode) in [(false, "same-store"), (true, "another-writer")] where modes.contains("burst") {
    let (batches, elapsed) = try await burst(count: 1_000, fromAnotherWriter: other, run: "burst-\(mode)")
    print(String(format: "burst mode=%@ writes=1000 burst_ms=%.0f batches=%d", mode, elapsed, batches))
}

var everyMinute = AutoSync.Configuration(pullInterval: 60_000)
everyMinute.syncOnStart = true
var adaptive = AutoSync.Configuration.live(slowestPull: 300_000)
adaptive.commitProbeInterval = nil  // not a storage request; kept out of the warp's timers
for (mode, configuration, settle, watched) in [
    ("every-minute", everyMinute, UInt64(0), false),
    ("adaptive-first-hour", adaptive, UInt64(0), false),
    ("adaptive-settled", adaptive, UInt64(3_600_000), false),
    ("watched-folder", adaptive, UInt64(0), true),
] where modes.contains("idle") {
    let requests = try await idleRequests(configuration, settle: settle, watched: watched, run: "idle-\(mode)")
    print("idle mode=\(mode) requests_per_hour=\(requests)")
}
