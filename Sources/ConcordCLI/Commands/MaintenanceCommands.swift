import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compact the remote and collect local garbage.",
        discussion: """
            With a remote: pushes, writes a snapshot when the newest one is behind, and deletes \
            this replica's batches that the snapshot covers and every replica has applied (or, \
            with --grace-days, that are older than that: a lagging replica then joins the \
            snapshot). Locally: deletes superseded file versions older than the history window \
            and the files nothing references, and sweeps temporaries older than an hour that \
            interrupted uploads left in the remote folder. Collecting unreferenced remote files \
            is not available yet, and the output says so.
            """)

    @Option(name: .customLong("grace-days"), help: "Also delete own batches older than this many days (covered by the snapshot).")
    var graceDays: UInt64?

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        var sizes: [ContentHash: UInt64] = [:]
        for hash in try store.blobs.all() {
            let attributes = try? FileManager.default.attributesOfItem(atPath: store.blobs.path(for: hash))
            sizes[hash] = (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
        }
        let deleted = try store.collectGarbage()
        let freed = deleted.reduce(UInt64(0)) { $0 + (sizes[$1] ?? 0) }
        var swept: Int?
        var sweepNote: String?
        if let location = try RemoteLocation.configured(in: store) {
            do {
                swept = try FolderRemote(root: location.folder).sweepTemporaryFiles(olderThan: 3_600_000, now: Format.now())
            } catch {
                sweepNote = "the remote folder was not swept: \(error.message)"
            }
        }
        var compaction: CompactionReport?
        if try RemoteLocation.configured(in: store) != nil {
            let connection = try await RemoteConnection.open(store, options: options)
            compaction = try await connection.engine.compact(batchGracePeriod: graceDays.map { $0 * 86_400_000 })
        }
        let notDone = ["collecting unreferenced files on the remote is not available yet"]
        var lines: [String] = []
        if let compaction {
            lines.append("remote: \(compaction.snapshot.map { "wrote \($0); " } ?? "")deleted \(compaction.deletedBatches.count) own batch\(compaction.deletedBatches.count == 1 ? "" : "es") (applied everywhere up to seq \(compaction.appliedEverywhere))")
        }
        lines += [
            "deleted \(deleted.count) unreferenced local file\(deleted.count == 1 ? "" : "s") (\(freed) bytes) from \(store.blobs.directory)",
        ]
        if let swept { lines.append("deleted \(swept) stale temporary file\(swept == 1 ? "" : "s") from the remote folder") }
        if let sweepNote { lines.append(sweepNote) }
        for item in notDone { lines.append("not done: \(item)") }
        options.emit(
            .object([
                ("localFilesDeleted", .int(Int64(deleted.count))), ("bytesFreed", .uint(freed)),
                ("remoteTemporariesDeleted", swept.map { .int(Int64($0)) } ?? .null),
                ("snapshotWritten", compaction?.snapshot.map { .string($0) } ?? .null),
                ("batchesDeleted", .int(Int64(compaction?.deletedBatches.count ?? 0))),
                ("notDone", .array(notDone.map { .string($0) })),
            ]),
            lines.joined(separator: "\n"))
    }
}

struct ReplicasForget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Retire a replica that will not sync again (checks only; not available yet).",
        discussion: """
            Reports whether every other replica has applied all of REPLICA's batches. Deleting its \
            objects is not available yet: without snapshots (issue 6), a replica that joins later \
            still needs every batch, so nothing is changed and the command exits 1.
            """)

    @Argument(help: "The replica's id (32 hex digits) or device name.") var replica: String
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let infos = try await connection.engine.replicas()
        let matches = infos.filter { $0.id.description == replica.lowercased() || $0.deviceName == replica }
        guard matches.count == 1, let target = matches.first else {
            throw CLIError(
                "notFound",
                matches.isEmpty
                    ? "the remote knows no replica \(replica): `concord replicas` lists them"
                    : "\(matches.count) replicas are named \(replica): give the id (`concord replicas` lists them)")
        }
        guard target.id != store.replicaID else {
            throw CLIError("invalidOperation", "\(replica) is this replica: forget it from another device")
        }
        let objects = RemoteObjects(remote: connection.remote, key: connection.key)
        var behind: [String] = []
        for info in infos where info.id != target.id {
            let applied: UInt64
            if info.id == store.replicaID {
                applied = try store.appliedSeqs()[target.id] ?? 0
            } else {
                applied = (try? await objects.head(info.id, seq: info.seq))??.applied[target.id.description] ?? 0
            }
            if applied < target.seq { behind.append("\(info.deviceName ?? info.id.description) (at \(applied) of \(target.seq))") }
        }
        let who = target.deviceName.map { "\"\($0)\" (\(target.id))" } ?? target.id.description
        let state = behind.isEmpty
            ? "every other replica has applied all \(target.seq) of its batches"
            : "not every replica has applied its batches yet: \(behind.joined(separator: ", "))"
        throw CLIError.notAvailable(
            "forgetting replica \(who) is not available yet: deleting its batches needs snapshots (issue 6) so replicas that join later can still catch up; \(state); nothing was changed")
    }
}
