import ArgumentParser
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

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pull other replicas' changes and push this one's.",
        discussion: """
            A progress bar on a terminal, plain lines otherwise, only the JSON document with --json. \
            With --watch, keeps the replica live until interrupted (Ctrl-C finishes the current \
            sync, then stops): it pushes about 50 ms after every commit to the store, other \
            processes' included, and pulls as soon as a watched folder remote shows a new head \
            (inotify on Linux), or polls — from every second after activity, slowing to every \
            --interval seconds when idle — where the remote cannot be watched or with --poll. \
            It also runs the LAN peer channel (unless --no-peers): it listens on --peer-port \
            (default 7467, another free port if taken) and keeps a connection to each --peer, \
            replicas that prove they hold the store key; each sends the other its sealed batches \
            as soon as they are committed, also while the remote cannot be reached, and puts on \
            the remote any batch it received that the remote lacks. Unless --no-discovery, it \
            announces where it listens in a sealed object on the remote (withdrawn when it stops) \
            and connects to the replicas that announce themselves there, without any --peer. \
            With --json each sync then prints one JSON line.
            """)

    @Flag(name: .customLong("push-only"), help: "Only push local changes.") var pushOnly = false
    @Flag(name: .customLong("pull-only"), help: "Only apply remote changes.") var pullOnly = false
    @Flag(name: .long, help: "Keep syncing until interrupted.") var watch = false
    @Flag(name: .long, help: "With --watch, poll the remote even where its folder could be watched.") var poll = false
    @Option(name: .long, parsing: .unconditional, help: ArgumentHelp("With --watch, the slowest poll: seconds between listings when idle (default 300; 0.1 to a year).", valueName: "seconds")) var interval: Double?
    @Flag(name: .customLong("no-peers"), help: "With --watch, run no LAN peer channel.") var noPeers = false
    @Option(name: .customLong("peer"), help: ArgumentHelp("With --watch, a replica of the same store to connect to over the LAN (repeatable).", valueName: "ipv4:port")) var peerAddresses: [String] = []
    @Flag(name: .customLong("no-discovery"), help: "With --watch, neither announce the peer channel on the remote nor connect to the replicas announced there.") var noDiscovery = false
    @Option(name: .customLong("peer-port"), help: ArgumentHelp("With --watch, the TCP port the peer channel listens on (default 7467; 0: any free port).", valueName: "port")) var peerPort: UInt16?
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        guard !(pushOnly && pullOnly) else { throw ValidationError("--push-only and --pull-only exclude each other") }
        if let interval {
            guard watch else { throw ValidationError("--interval applies to --watch") }
            // Below a tenth of a second a watch only hammers the remote (1e-9 is a typo).
            guard interval >= 0.1, interval <= 86_400 * 365 else { throw ValidationError("--interval must be a number of seconds from 0.1 to a year, not \(interval)") }
        }
        guard !poll || watch else { throw ValidationError("--poll applies to --watch") }
        guard watch || (!noPeers && !noDiscovery && peerAddresses.isEmpty && peerPort == nil) else { throw ValidationError("--no-peers, --no-discovery, --peer and --peer-port apply to --watch") }
        guard !noPeers || (peerAddresses.isEmpty && peerPort == nil && !noDiscovery) else { throw ValidationError("--no-peers excludes --peer, --peer-port and --no-discovery") }
        for address in peerAddresses where Self.peerAddress(address) == nil {
            throw ValidationError("--peer takes an IPv4 address and a port, like 192.168.1.20:7467, not \(address)")
        }
    }

    var mode: SyncMode { pushOnly ? .pushOnly : pullOnly ? .pullOnly : .twoWay }

    /// `ipv4:port` split, or nil.
    static func peerAddress(_ text: String) -> (host: String, port: UInt16)? {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let port = UInt16(parts[1]), port > 0,
            parts[0].split(separator: ".").count == 4, parts[0].split(separator: ".").allSatisfy({ UInt8($0) != nil })
        else { return nil }
        return (String(parts[0]), port)
    }

    func run() async throws {
        let store = try options.openStore()
        if watch {
            let stop = StopSignal()
            guard let connection = try await firstContact(store, stop: stop) else {
                options.say("stopped before the remote could be reached")
                return
            }
            try await watchLoop(store, connection, stop: stop)
            return
        }
        let connection = try await RemoteConnection.open(store, options: options)
        let report = try await Self.syncOnce(store, connection, mode: mode, display: ProgressDisplay.make(json: options.json))
        Self.warn(report)
        options.emit(Self.document(report, connection), Self.summary(report, connection))
    }

    static func syncOnce(_ store: Store, _ connection: RemoteConnection, mode: SyncMode, display: ProgressDisplay?) async throws -> SyncReport {
        let report: SyncReport
        do {
            var progress: (@Sendable (SyncProgress) -> Void)?
            if let display { progress = { display.show($0) } }
            report = try await connection.engine.sync(mode: mode, progress: progress)
        } catch {
            display?.finish()
            throw error
        }
        display?.finish()
        try store.setSetting(CLIConfig.lastSync, String(Format.now()))
        return report
    }

    /// Opens the remote for `--watch`, retrying while it cannot be reached — the server down,
    /// a drive not mounted yet, a captive portal answering in its place — with a backoff
    /// from one second doubling up to the interval (at most 30 s). A wrong key, another
    /// store, or no remote at all stop at once. Nil when stopped (Ctrl-C) before the remote
    /// answered.
    func firstContact(_ store: Store, stop: StopSignal) async throws -> RemoteConnection? {
        let interval = min(self.interval ?? 30, 30)
        var wait = min(1.0, interval)
        while !stop.isSet {
            do {
                return try await RemoteConnection.open(store, options: options)
            } catch let error as ConcordError where Self.transientAtFirstContact.contains(error.code) {
                FileHandle.standardError.write(Data("concord: cannot reach the remote: \(Entry.oneLine(error.message)); retrying in \(wait) s\n".utf8))
                let deadline = Date().addingTimeInterval(wait)
                while !stop.isSet && Date() < deadline {
                    try? await Task.sleep(for: .milliseconds(100))
                }
                wait = min(wait * 2, interval)
            }
        }
        return nil
    }

    /// What a remote that is down, not mounted yet or behind a captive portal answers at
    /// first contact: worth trying again.
    static let transientAtFirstContact: Set<ConcordError.Code> = [.remote, .noFolder, .malformed, .noRemoteStore]

    static func counts(_ report: SyncReport) -> String {
        var parts = ["applied \(report.applied) change\(report.applied == 1 ? "" : "s") from other replicas", "pushed \(report.pushed)"]
        if report.filesFetched > 0 { parts.append("fetched \(report.filesFetched) file\(report.filesFetched == 1 ? "" : "s")") }
        if report.filesUploaded > 0 { parts.append("uploaded \(report.filesUploaded) file\(report.filesUploaded == 1 ? "" : "s")") }
        if report.waiting > 0 { parts.append("\(report.waiting) waiting") }
        if !report.rejected.isEmpty { parts.append("\(report.rejected.count) rejected") }
        return parts.joined(separator: ", ")
    }

    static func summary(_ report: SyncReport, _ connection: RemoteConnection) -> String {
        "synced with \(connection.location.url): \(counts(report))"
    }

    /// Problems worth a person's attention, on stderr (they do not fail the sync).
    static func warn(_ report: SyncReport) {
        var lines: [String] = []
        for rejected in report.rejected { lines.append("concord: warning: skipped \(Entry.oneLine(rejected))") }
        if let readOnly = report.readOnly { lines.append("concord: warning: pulled only: \(Entry.oneLine(readOnly))") }
        if report.waiting > 0 {
            lines.append("concord: warning: \(report.waiting) change batch\(report.waiting == 1 ? " waits" : "es wait") for objects not on the remote yet; sync again later (or run `concord doctor`)")
        }
        if !report.remoteRolledBack.isEmpty {
            lines.append("concord: warning: the remote had lost objects this replica knew were there (it was rolled back, restored from an older copy, or objects were deleted); published again from this replica: \(report.remoteRolledBack.joined(separator: ", "))")
        }
        if let change = report.restoredCopy {
            let forked = report.forks.contains { $0.replica == change.old && !$0.merged }
            lines.append("concord: warning: this store is an older copy of replica \(change.old) (restored from a backup: \(Entry.oneLine(change.evidence))); it continues as replica \(change.new), pulled the history it lacked, and pushed its newer changes under the new id — \(forked ? "but it had pushed batches under names the other copy had used (below)" : "nothing was lost or overwritten")")
        }
        if !report.announcedOrphans.isEmpty {
            lines.append("concord: warning: \(report.announcedOrphans.count) change batch\(report.announcedOrphans.count == 1 ? "" : "es") on the remote that no head announced (a lost store uploaded them, or their head was deleted); announced now, so every replica applies them: \(report.announcedOrphans.joined(separator: ", "))")
        }
        for fork in report.forks where fork.merged {
            lines.append("concord: replica \(fork.replica)'s forked history (at \(fork.batch)) is merged: \(Entry.oneLine(fork.evidence)); no write of either side is lost")
        }
        for fork in report.forks where !fork.merged {
            lines.append("concord: warning: replica \(fork.replica)'s history forked at \(fork.batch): \(Entry.oneLine(fork.evidence)); two copies of it wrote under one name (a device restored from a backup while the storage was rolled back), so its batches past that name are not applied here (run `concord doctor`)")
        }
        for skew in report.skews {
            lines.append("concord: warning: replica \(skew.replica)'s clock runs \(Format.duration(skew.aheadBy)) ahead of this device's; its changes were applied anyway")
        }
        if !lines.isEmpty { FileHandle.standardError.write(Data((lines.joined(separator: "\n") + "\n").utf8)) }
    }

    static func document(_ report: SyncReport, _ connection: RemoteConnection) -> JSON {
        .object([
            ("remote", .string(connection.location.url)),
            ("applied", .int(Int64(report.applied))),
            ("pushed", .int(Int64(report.pushed))),
            ("filesFetched", .int(Int64(report.filesFetched))),
            ("filesUploaded", .int(Int64(report.filesUploaded))),
            ("waiting", .int(Int64(report.waiting))),
            ("rejected", .array(report.rejected.map { .string($0) })),
            ("skews", .array(report.skews.map { .object([("replica", .string($0.replica.description)), ("aheadByMs", .uint($0.aheadBy))]) })),
            ("remoteRolledBack", .array(report.remoteRolledBack.map { .string($0) })),
            ("restoredCopy", report.restoredCopy.map {
                .object([("oldReplica", .string($0.old.description)), ("newReplica", .string($0.new.description)), ("evidence", .string($0.evidence))])
            } ?? .null),
            ("announcedOrphans", .array(report.announcedOrphans.map { .string($0) })),
            ("forks", .array(report.forks.map {
                .object([("replica", .string($0.replica.description)), ("batch", .string($0.batch)), ("evidence", .string($0.evidence)), ("merged", .bool($0.merged))])
            })),
        ])
    }
}

/// Set when SIGINT or SIGTERM arrives, so `sync --watch` can finish its current sync.
final class StopSignal {
    final class Flag: Sendable {
        let value = Mutex(false)
    }

    private let flag = Flag()
    private var sources: [any DispatchSourceSignal] = []

    init() {
        let flag = self.flag
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { flag.value.withLock { $0 = true } }
            source.resume()
            sources.append(source)
        }
    }

    var isSet: Bool { flag.value.withLock { $0 } }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show this replica, what is pending, the remote's replicas, clock skews and conflicts.",
        discussion: "The remote is contacted only when it can be unlocked without asking (or on a terminal); --offline skips it.")

    @Flag(name: .long, help: "Do not contact the remote.") var offline = false
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let name = try store.name()
        let pending = try store.pendingChangeCount()
        let sealed = try store.sealedSeq()
        let pushed = try SyncEngine.pushedSeq(in: store)
        let unpushed = sealed > pushed ? sealed - pushed : 0
        let lastSync = try store.setting(CLIConfig.lastSync).flatMap { UInt64($0) }
        let location = try RemoteLocation.configured(in: store)
        let conflicts = try store.conflicts()
        let skews = try SyncEngine.clockSkews(in: store).map { ($0.replica, $0.aheadBy) }
        var removal = try SyncEngine.removal(in: store)
        var replicas: [ReplicaInfo]?
        var remoteError: String?
        if location != nil, !offline {
            do {
                replicas = try await RemoteConnection.open(store, options: options).engine.replicas()
            } catch let error as ConcordError {
                remoteError = "not contacted: \(error.message)"
            }
            removal = try SyncEngine.removal(in: store)
        }
        var lines = [
            "replica \(store.replicaID)\(name.map { " (\($0))" } ?? "")",
            "  store \(store.path)",
            "  pending: \(pending) local change\(pending == 1 ? "" : "s") not yet sealed, \(unpushed) batch\(unpushed == 1 ? "" : "es") not yet pushed",
            "  last sync: \(lastSync.map(Format.time) ?? "never")",
            "  remote: \(location?.url ?? "none (`concord remote set file:///path`)")",
        ]
        if let removal { lines.append("  removed: \(removal)") }
        let live = try location.map { try Self.live(store, folder: $0.folder) }
        if let live { lines.append(live.line) }
        if let replicas {
            lines.append("  remote replicas: \(replicas.count)")
            for info in replicas {
                let me = info.id == store.replicaID ? " (this replica)" : ""
                lines.append("    \(info.id) \(info.deviceName ?? "(unnamed)")\(me): last sync \(Format.time(info.lastSync)), \(info.seq) batch\(info.seq == 1 ? "" : "es")")
            }
        } else if let remoteError {
            lines.append("  remote replicas: \(remoteError)")
        }
        for (replica, ahead) in skews {
            lines.append("  warning: replica \(replica)'s clock ran \(Format.duration(ahead)) ahead of this device's")
        }
        // A reading past the end of a stamp's range is not a time: writes count on instead.
        let clockBeyondRange = SystemClock().millisecondsSinceEpoch() > HLC.maxPhysical
        if clockBeyondRange {
            lines.append("  warning: this device's clock reads past the year 10889, the end of a stamp's range: its writes are stamped by counting on from its last one; set the clock to update from network time")
        }
        lines.append("  open conflicts: \(conflicts.count)\(conflicts.isEmpty ? "" : " (`concord conflicts` lists them)")")
        let schema = try SchemaStatus(store)
        lines += schema.lines
        let files = try store.fileCacheStatus()
        lines += FilesStatus.lines(files).map { "  " + $0 }
        options.emit(
            .object([
                ("replica", .string(store.replicaID.description)), ("name", .string(name)), ("store", .string(store.path)),
                ("pendingChanges", .int(Int64(pending))), ("unpushedBatches", .uint(unpushed)),
                ("lastSync", .uint(lastSync)), ("remote", .string(location?.url)), ("live", live?.document ?? .null),
                ("remoteReplicas", replicas.map { .array($0.map { Replicas.document($0, self: store.replicaID) }) } ?? .null),
                ("remoteError", .string(remoteError)), ("removed", .string(removal)),
                ("clockSkews", .array(skews.map { .object([("replica", .string($0.0.description)), ("aheadByMs", .uint($0.1))]) })),
                ("clockBeyondRange", .bool(clockBeyondRange)),
                ("conflicts", .int(Int64(conflicts.count))),
                ("files", FilesStatus.document(files)),
            ] + schema.json),
            lines.joined(separator: "\n"))
    }
}

struct Replicas: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the replicas the remote knows, or forget a retired one.",
        subcommands: [ReplicasList.self, ReplicasForget.self],
        defaultSubcommand: ReplicasList.self)

    static func document(_ info: ReplicaInfo, self own: ReplicaID) -> JSON {
        .object([
            ("id", .string(info.id.description)), ("name", .string(info.deviceName)), ("lastSync", .uint(info.lastSync)),
            ("schema", info.schema.map { .object(SchemaStatus.document($0)) } ?? .null),
            ("seq", .uint(info.seq)), ("self", .bool(info.id == own)), ("status", .string(info.status.rawValue)),
        ])
    }
}

struct ReplicasList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the replicas the remote knows.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let replicas = try await connection.engine.replicas()
        let applied = try store.appliedSeqs()
        var lines = ["\(replicas.count) replica\(replicas.count == 1 ? "" : "s") on \(connection.location.url)"]
        for info in replicas {
            let me = info.id == store.replicaID ? " (this replica)" : ", applied here up to \(applied[info.id] ?? 0)"
            let status = info.status == .active ? "" : info.status == .silent ? " — retired: silent past the retention period" : " — retired: forgotten"
            lines.append("  \(info.id) \(info.deviceName ?? "(unnamed)"): last sync \(Format.time(info.lastSync)), \(info.seq) batch\(info.seq == 1 ? "" : "es")\(me)\(status)")
        }
        options.emit(.object([("replicas", .array(replicas.map { Replicas.document($0, self: store.replicaID) }))]), lines.joined(separator: "\n"))
    }
}
