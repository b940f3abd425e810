import Concord
import ConcordRemote
import ConcordSync
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `sync --watch`: an ``AutoSync`` loop with the live configuration, a watcher of the
/// folder remote unless `--poll`, and one printed line per sync.
extension Sync {
    func watchLoop(_ store: Store, _ connection: RemoteConnection, stop: StopSignal) async throws {
        let slowest = interval ?? LiveMode.defaultSlowest
        var configuration = AutoSync.Configuration.live(mode: mode, slowestPull: UInt64((slowest * 1_000).rounded()))
        configuration.discovery = !noDiscovery
        var watcher: (any RemoteWatcher)?
        let live: LiveMode
        if poll {
            live = LiveMode(plan: .polling(reason: "--poll"), slowest: slowest)
        } else {
            switch RemoteWatch.watcher(for: connection.remote, ignoring: store.replicaID) {
            case let .success(found):
                watcher = found
                live = LiveMode(plan: .notifications(found.description), slowest: slowest)
            case let .failure(unavailable):
                live = LiveMode(plan: .polling(reason: unavailable.reason), slowest: slowest)
            }
        }
        options.say("live sync with \(connection.location.url): \(live.text); press Ctrl-C to stop")
        try? store.setSetting(CLIConfig.watch, "\(getpid())\t\(live.plan.mode)\t\(live.text)")
        defer { try? store.setSetting(CLIConfig.watch, "") }

        let peers = noPeers ? nil : try startPeers(connection)
        defer { try? store.setSetting(CLIConfig.peers, "") }
        let auto = AutoSync(engine: connection.engine, configuration: configuration, watcher: watcher, peers: peers)
        let fatal = FatalError()
        let printer = Task { [options, events = auto.events()] in
            var count = 0
            for await event in events {
                switch event {
                case let .synced(report):
                    count += 1
                    try? store.setSetting(CLIConfig.lastSync, String(Format.now()))
                    Self.warn(report)
                    if options.json {
                        print(Self.document(report, connection).text)
                    } else {
                        print("[\(Format.time(Format.now()))] \(Self.counts(report))")
                    }
                    fflush(nil)  // one line per sync, even into a pipe or a log file
                case let .failed(error, retryIn):
                    if Self.needsAPerson.contains(error.code) {
                        fatal.set(error)
                    } else {
                        FileHandle.standardError.write(Data("concord: sync failed: \(Entry.oneLine(error.message)); retrying in \(Format.seconds(retryIn)) s\n".utf8))
                    }
                case .paused, .resumed:
                    break
                }
            }
            return count
        }
        await auto.start()
        var reportedFallback = false
        var peersSaid = ""
        while !stop.isSet && fatal.error == nil {
            try? await Task.sleep(for: .milliseconds(100))
            if let peers {
                // What `concord status` shows: the port, each peer connected, and each announced.
                var announced = "off"
                if !noDiscovery { announced = await auto.status.announcedPeers.map(\.description).joined(separator: "; ") }
                let said = "\(peers.port)\t" + peers.peers.map { "\($0.replica) at \($0.address)" }.joined(separator: ", ") + "\t" + announced
                if said != peersSaid {
                    peersSaid = said
                    try? store.setSetting(CLIConfig.peers, said)
                }
            }
            if watcher != nil, !reportedFallback, await !auto.status.isWatching {
                reportedFallback = true
                FileHandle.standardError.write(Data("concord: the folder's notifications stopped; polling instead\n".utf8))
            }
        }
        await auto.stop()
        let count = await printer.value
        if let error = fatal.error { throw error }
        options.say("stopped after \(count) sync\(count == 1 ? "" : "s")")
    }

    /// The peer channel of a watch: listening on `--peer-port` (or any free port when the
    /// default one is taken), and connected to every `--peer`.
    func startPeers(_ connection: RemoteConnection) throws -> PeerChannel {
        var configuration = PeerChannel.Configuration(port: peerPort ?? Self.defaultPeerPort)
        let preferred = connection.engine.peerChannel(configuration: configuration)
        let channel: PeerChannel
        if peerPort == nil, (try? preferred.listen()) == nil {
            configuration.port = 0
            channel = connection.engine.peerChannel(configuration: configuration)
        } else {
            channel = preferred
        }
        try channel.listen()  // the port it listens on already, or the error
        for address in peerAddresses {
            if let (host, port) = Self.peerAddress(address) { channel.keepConnected(host: host, port: port) }
        }
        let dialling = peerAddresses.isEmpty ? "" : "; connecting to \(peerAddresses.joined(separator: ", "))"
        let discovery = noDiscovery ? "" : "; announcing it on the remote and connecting to the replicas announced there (--no-discovery to turn off)"
        options.say("peers: listening on port \(channel.port)\(dialling) (--no-peers to turn off)\(discovery)")
        return channel
    }

    /// The peer channel's port when `--peer-port` is not given.
    static let defaultPeerPort: UInt16 = 7467

    /// Errors a retry cannot fix: the watch stops and says so.
    static let needsAPerson: Set<ConcordError.Code> = [.wrongKey, .storeMismatch, .newerSchema, .corrupt]

    /// The first error that ends the watch.
    final class FatalError: Sendable {
        private let value = Mutex<ConcordError?>(nil)
        var error: ConcordError? { value.withLock { $0 } }
        func set(_ error: ConcordError) { value.withLock { $0 = $0 ?? error } }
    }
}

/// How `sync --watch` learns of other replicas' changes, in the words `sync --watch` and
/// `concord status` print.
struct LiveMode {
    /// `--interval`'s default: the slowest poll, in seconds.
    static let defaultSlowest = 300.0

    let plan: WatchPlan
    /// The slowest poll, in seconds.
    let slowest: Double

    var text: String {
        let slowestText = Format.seconds(UInt64((slowest * 1_000).rounded()))
        switch plan {
        case let .notifications(description):
            return "watching \(description), and polling every \(slowestText) s in case a notification is missed"
        case let .polling(reason):
            let fastest = Format.seconds(UInt64((min(1, slowest) * 1_000).rounded()))
            return "polling every \(fastest) s after activity, slowing to every \(slowestText) s when idle (\(reason))"
        }
    }
}

extension WatchPlan {
    /// `watch` or `poll`, for documents.
    var mode: String {
        if case .notifications = self { return "watch" }
        return "poll"
    }
}

extension CLIConfig {
    /// What a running `sync --watch` does: `<pid>\t<watch|poll>\t<description>`; empty
    /// when none runs.
    static let watch = "watch"
    /// The peer channel of a running `sync --watch`: `<port>\t<peers connected, by ", ">\t<peers
    /// announced on the remote, by "; ", or `off`>`; empty when none runs.
    static let peers = "peers"
}

extension Status {
    /// The `live:` line and document: what a running `sync --watch` does, or what one would do.
    static func live(_ store: Store, folder: String?) throws -> (line: String, document: JSON) {
        let fields = (try store.setting(CLIConfig.watch) ?? "").split(separator: "\t", maxSplits: 2).map(String.init)
        if fields.count == 3, let pid = Int32(fields[0]), kill(pid, 0) == 0 || errno == EPERM {
            let peers = (try store.setting(CLIConfig.peers) ?? "").split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            var line = "  live: `sync --watch` (process \(pid)) is \(fields[2])"
            var peersDocument = JSON.null
            if peers.count >= 2, let port = UInt64(peers[0]) {
                let connected = peers[1].isEmpty ? [] : peers[1].components(separatedBy: ", ")
                line += "\n  peers: listening on port \(port); \(connected.isEmpty ? "none connected" : "connected: " + connected.joined(separator: ", "))"
                // Discovery: the replicas the remote announces (`off` with --no-discovery).
                let announcedText = peers.count == 3 ? peers[2] : "off"
                let announced = announcedText == "off" || announcedText.isEmpty ? [] : announcedText.components(separatedBy: "; ")
                line += "\n  announced peers: " + (announcedText == "off" ? "discovery off" : announced.isEmpty ? "none" : announced.joined(separator: "; "))
                peersDocument = .object([
                    ("port", .uint(port)), ("connected", .array(connected.map { .string($0) })),
                    ("discovery", .bool(announcedText != "off")), ("announced", .array(announced.map { .string($0) })),
                ])
            } else {
                line += "\n  peers: off"
            }
            return (line, .object([
                ("running", .bool(true)), ("pid", .int(Int64(pid))), ("mode", .string(fields[1])), ("description", .string(fields[2])),
                ("peers", peersDocument),
            ]))
        }
        let would = LiveMode(plan: RemoteWatch.plan(folder: folder), slowest: LiveMode.defaultSlowest)
        return ("  live: no `sync --watch` running; it would be \(would.text)", .object([
            ("running", .bool(false)), ("pid", .null), ("mode", .string(would.plan.mode)), ("description", .string(would.text)),
        ]))
    }
}

extension Format {
    /// `millis` as seconds for people: `0.2`, `1`, `300`.
    static func seconds(_ millis: UInt64) -> String {
        millis % 1_000 == 0 ? "\(millis / 1_000)" : String(format: "%g", Double(millis) / 1_000)
    }
}
