import ConcordCore
import Logging

/// What the sync layer logs, through swift-log, so that an app routes it to its own backend
/// with `LoggingSystem.bootstrap` (and `concord --verbose` prints it on standard error).
///
/// | label | what |
/// |---|---|
/// | `concord.sync` | each sync's start and outcome, each object rejected (debug); storage that lost objects, a restored copy, batches of a lost store announced (warning) |
/// | `concord.compaction` | snapshots written or shared, batches deleted, records purged (debug) |
/// | `concord.sweep` | remote files swept, or why a sweep stopped (debug) |
/// | `concord.doctor` | each finding and repair, and the outcome (debug) |
/// | `concord.autosync` | syncs it starts and why, failures and the retry (debug) |
/// | `concord.peers` | peers connected and disconnected (info); a peer dropped, and why, in one line (notice) |
///
/// As swift-log asks of libraries, what every call also returns in its report is logged
/// at debug level; only the rare events an operator should hear of even when nobody reads
/// the reports are warnings.
///
/// Every entry carries the replica's id as `replica` metadata. Nothing secret is logged:
/// paths on the remote, counts and messages only — never a key, passphrase or value.
public enum ConcordLogLabel {
    public static let sync = "concord.sync"
    public static let compaction = "concord.compaction"
    public static let sweep = "concord.sweep"
    public static let doctor = "concord.doctor"
    public static let autoSync = "concord.autosync"
    public static let peers = "concord.peers"
}

extension SyncEngine {
    /// A logger for `label`, carrying this replica's id.
    nonisolated func logger(_ label: String) -> Logger {
        var logger = Logger(label: label)
        logger[metadataKey: "replica"] = "\(store.replicaID)"
        return logger
    }

    func log(_ report: SyncReport, mode: SyncMode) {
        let logger = logger(ConcordLogLabel.sync)
        logger.debug("sync done", metadata: [
            "mode": "\(mode)", "applied": "\(report.applied)", "pushed": "\(report.pushed)",
            "filesFetched": "\(report.filesFetched)", "filesUploaded": "\(report.filesUploaded)",
            "waiting": "\(report.waiting)", "rejected": "\(report.rejected.count)",
        ])
        for rejected in report.rejected { logger.debug("object rejected: \(rejected)") }
        if !report.remoteRolledBack.isEmpty {
            logger.warning("the remote lost objects; published again", metadata: ["objects": "\(report.remoteRolledBack)"])
        }
        if let change = report.restoredCopy {
            logger.warning("this store is an older copy of itself; it continues under a new id", metadata: ["old": "\(change.old)", "new": "\(change.new)"])
        }
        if !report.announcedOrphans.isEmpty {
            logger.warning("announced batches a lost store never announced", metadata: ["batches": "\(report.announcedOrphans)"])
        }
        for fork in report.forks where fork.merged {
            logger.notice("a replica's forked history was merged", metadata: ["replica": "\(fork.replica)", "batch": "\(fork.batch)"])
        }
        for fork in report.forks where !fork.merged {
            logger.error("a replica's history forked: its batches past the fork are not applied", metadata: ["replica": "\(fork.replica)", "batch": "\(fork.batch)", "evidence": "\(fork.evidence)"])
        }
        for skew in report.skews { logger.debug("a replica's clock runs ahead", metadata: ["other": "\(skew.replica)", "aheadByMs": "\(skew.aheadBy)"]) }
    }

    func log(_ report: CompactionReport) {
        let logger = logger(ConcordLogLabel.compaction)
        logger.debug("compaction done", metadata: [
            "snapshot": "\(report.snapshot ?? report.sharedSnapshot ?? "none")", "batchesDeleted": "\(report.deletedBatches.count)",
            "snapshotsDropped": "\(report.droppedSnapshots.count)", "retired": "\(report.retiredReplicas.count)",
            "recordsPurged": "\(report.metadata.purged.count)", "recordsAwaitingPurge": "\(report.metadata.waiting)",
        ])
        if let skipped = report.metadata.skipped { logger.debug("purge skipped: \(skipped)") }
    }

    func log(_ report: FileSweepReport) {
        let logger = logger(ConcordLogLabel.sweep)
        if let skipped = report.skipped {
            logger.debug("file sweep stopped before deleting anything: \(skipped)")
        } else {
            logger.debug("file sweep done", metadata: [
                "deleted": "\(report.deletedFiles.count)", "referenced": "\(report.referencedFiles)",
                "young": "\(report.youngFiles)", "awaiting": "\(report.awaitingFiles)",
            ])
        }
    }

    func log(_ report: DoctorReport) {
        let logger = logger(ConcordLogLabel.doctor)
        for finding in report.findings {
            let metadata: Logger.Metadata = ["kind": "\(finding.kind)", "path": "\(finding.path)"]
            if let repair = finding.repair { logger.debug("repair: \(repair)", metadata: metadata) }
            logger.debug("\(finding.message)", metadata: metadata)
        }
        logger.debug("doctor done", metadata: ["objects": "\(report.objects.total)", "healthy": "\(report.healthy)", "problems": "\(report.problems.count)"])
    }
}
