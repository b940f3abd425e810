import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

struct Compact: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compact the remote and sweep unreferenced local files.",
        discussion: """
            With a remote: pushes, writes a snapshot when the newest one is behind, and deletes \
            this replica's batches that the snapshot covers and every replica has applied (or, \
            with --grace-days, that are older than that: a lagging replica then joins the \
            snapshot). Replicas silent past the retention period, or forgotten, are not waited \
            for. Then deletes remote files that no batch or snapshot references, that are \
            older than the grace period (7 days) and that this replica has found unreferenced \
            for that long. Locally: deletes superseded file versions \
            older than the history window and the files nothing references, and sweeps \
            temporaries older than an hour that interrupted uploads left in the remote folder.
            """)

    @Option(
        name: .customLong("grace-days"), parsing: .unconditional,
        help: ArgumentHelp("Also delete own batches older than this many days (covered by the snapshot): 0 to \(Self.maxGraceDays).", valueName: "days"))
    var graceDays: String?

    /// A century: more than any history a grace period could mean, and far from overflow.
    static let maxGraceDays: UInt64 = 36_500

    func validate() throws { _ = try graceMillis() }

    /// `--grace-days` in milliseconds, or nil; a negative, fractional, huge or non-numeric
    /// value is refused (exit 2) instead of trapping on overflow.
    func graceMillis() throws -> UInt64? {
        guard let graceDays else { return nil }
        guard let days = UInt64(graceDays), days <= Self.maxGraceDays else {
            throw ValidationError("--grace-days must be a whole number of days from 0 to \(Self.maxGraceDays), not '\(Entry.clip(graceDays))'")
        }
        return days * 86_400_000
    }

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        var sizes: [ContentHash: UInt64] = [:]
        for hash in try store.blobs.all() {
            let attributes = try? FileManager.default.attributesOfItem(atPath: store.blobs.path(for: hash))
            sizes[hash] = (attributes?[.size] as? NSNumber)?.uint64Value ?? 0
        }
        let deleted = try store.sweepFiles()
        let freed = deleted.reduce(UInt64(0)) { $0 + (sizes[$1] ?? 0) }
        var swept: Int?
        var sweepNote: String?
        var compaction: CompactionReport?
        if try RemoteLocation.configured(in: store) != nil {
            let connection = try await RemoteConnection.open(store, options: options)
            do {
                swept = try await connection.remote.sweepLeftovers(olderThan: 3_600_000, now: Format.now())
            } catch {
                sweepNote = "the remote's leftovers were not swept: \(error.message)"
            }
            compaction = try await connection.engine.compact(batchGracePeriod: try graceMillis())
        }
        var lines: [String] = []
        if let compaction {
            lines.append("remote: \(compaction.snapshot.map { "wrote \($0); " } ?? "")\(compaction.sharedSnapshot.map { "shared \($0) (another replica's, covering this one's batches); " } ?? "")deleted \(compaction.deletedBatches.count) own batch\(compaction.deletedBatches.count == 1 ? "" : "es") (applied everywhere up to seq \(compaction.appliedEverywhere))")
            if compaction.snapshotMissing { lines.append("remote: this replica's newest snapshot is missing or damaged, so no batch it alone covers was deleted; it is written again after the next push") }
            if !compaction.droppedSnapshots.isEmpty {
                lines.append("remote: deleted \(compaction.droppedSnapshots.count) own snapshot\(compaction.droppedSnapshots.count == 1 ? "" : "s") a newer one supersedes: \(compaction.droppedSnapshots.joined(separator: ", "))")
            }
            if !compaction.retiredReplicas.isEmpty {
                lines.append("remote: not waiting for \(compaction.retiredReplicas.count) retired replica\(compaction.retiredReplicas.count == 1 ? "" : "s"): \(compaction.retiredReplicas.map(\.description).joined(separator: ", "))")
            }
            let files = compaction.files
            lines.append("remote: deleted \(files.deletedFiles.count) unreferenced file\(files.deletedFiles.count == 1 ? "" : "s"); kept \(files.referencedFiles) referenced, \(files.youngFiles) younger than the grace period and \(files.awaitingFiles) not yet seen unreferenced that long")
            if let skipped = files.skipped { lines.append("remote: file sweep skipped: \(skipped)") }
            let metadata = compaction.metadata
            lines.append("purged the metadata of \(metadata.purged.count) deleted record\(metadata.purged.count == 1 ? "" : "s"); \(metadata.waiting) wait\(metadata.waiting == 1 ? "s" : "") for every active replica to see the deletion")
            if let skipped = metadata.skipped { lines.append("metadata purge skipped: \(skipped)") }
        }
        lines += [
            "deleted \(deleted.count) unreferenced local file\(deleted.count == 1 ? "" : "s") (\(freed) bytes) from \(store.blobs.directory)",
        ]
        if let swept, let location = try RemoteLocation.configured(in: store) {
            lines.append(type(of: location.backend).sweptLeftovers(swept))
        }
        if let sweepNote { lines.append(sweepNote) }
        options.emit(
            .object([
                ("localFilesDeleted", .int(Int64(deleted.count))), ("bytesFreed", .uint(freed)),
                ("remoteTemporariesDeleted", swept.map { .int(Int64($0)) } ?? .null),
                ("snapshotWritten", compaction?.snapshot.map { .string($0) } ?? .null),
                ("snapshotShared", compaction?.sharedSnapshot.map { .string($0) } ?? .null),
                ("snapshotsDropped", .array((compaction?.droppedSnapshots ?? []).map { .string($0) })),
                ("batchesDeleted", .int(Int64(compaction?.deletedBatches.count ?? 0))),
                ("snapshotMissing", .bool(compaction?.snapshotMissing ?? false)),
                ("retiredReplicas", .array((compaction?.retiredReplicas ?? []).map { .string($0.description) })),
                ("remoteFilesDeleted", .int(Int64(compaction?.files.deletedFiles.count ?? 0))),
                ("remoteFilesReferenced", .int(Int64(compaction?.files.referencedFiles ?? 0))),
                ("remoteFilesYoung", .int(Int64(compaction?.files.youngFiles ?? 0))),
                ("remoteFilesAwaiting", .int(Int64(compaction?.files.awaitingFiles ?? 0))),
                ("remoteFileSweepSkipped", .string(compaction?.files.skipped)),
                ("recordsPurged", .int(Int64(compaction?.metadata.purged.count ?? 0))),
                ("recordsAwaitingPurge", .int(Int64(compaction?.metadata.waiting ?? 0))),
                ("purgeSkipped", .string(compaction?.metadata.skipped)),
            ]),
            lines.joined(separator: "\n"))
    }
}

struct ReplicasForget: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "forget",
        abstract: "Retire a replica that will not sync again.",
        discussion: """
            Records in this replica's head that REPLICA is retired, so compaction on every \
            replica stops waiting for it to apply batches. Nothing is deleted. If REPLICA \
            syncs again it is active again: where batches it needs were compacted it joins a \
            snapshot, and its own unpushed changes are pushed as usual. Replicas silent for \
            longer than the retention period (90 days) are retired without this command. A \
            replica whose head does not open (`concord doctor` names it) is forgotten by its id.
            """)

    @Argument(help: "The replica's id (32 hex digits) or device name.") var replica: String
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let infos = try await connection.engine.replicas()
        let matches = infos.filter { $0.id.description == replica.lowercased() || $0.deviceName == replica }
        if matches.isEmpty, let id = ReplicaID(hex: replica.lowercased()), id != store.replicaID {
            // A replica whose heads do not open is not listed, but can be forgotten by its id
            // (`concord doctor` names it).
            let info = try await connection.engine.forget(id)
            options.emit(
                Replicas.document(info, self: store.replicaID),
                "retired replica \(info.id), whose head does not open: compaction and the purge no longer wait for it; if it syncs again it is active again and loses nothing")
            return
        }
        guard matches.count == 1, let target = matches.first else {
            throw ConcordError(.notFound, matches.isEmpty
                    ? "the remote knows no replica \(replica): `concord replicas` lists them"
                    : "\(matches.count) replicas are named \(replica): give the id (`concord replicas` lists them)")
        }
        guard target.id != store.replicaID else {
            throw ConcordError(.invalidOperation, "\(replica) is this replica: forget it from another device")
        }
        let info = try await connection.engine.forget(target.id)
        let who = info.deviceName.map { "\"\($0)\" (\(info.id))" } ?? info.id.description
        options.emit(
            Replicas.document(info, self: store.replicaID),
            "retired replica \(who), last synced \(Format.time(info.lastSync)): compaction no longer waits for it; if it syncs again it is active again and loses nothing")
    }
}
