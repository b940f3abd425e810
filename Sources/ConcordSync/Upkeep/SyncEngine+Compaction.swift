import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// What ``SyncEngine/compact(batchGracePeriod:)`` did.
public struct CompactionReport: Hashable, Sendable {
    /// The snapshot written first, if one was needed.
    public var snapshot: String?
    /// Another replica's snapshot that covered this replica's batches well enough (all but
    /// ``SyncEngine/snapshotSlack`` at most) that none was written.
    public var sharedSnapshot: String?
    /// This replica's snapshots deleted because another one on the remote supersedes them.
    public var droppedSnapshots: [String] = []
    /// The newest own seq every replica with a head had applied.
    public var appliedEverywhere: UInt64 = 0
    /// This replica's batches deleted.
    public var deletedBatches: [UInt64] = []
    /// The newest snapshot this replica wrote is not on the remote or does not open (a lost
    /// or torn upload): no batch was deleted. A snapshot is written again once this replica
    /// pushes its next batch.
    public var snapshotMissing = false
    /// Replicas not waited for: silent past the retention period, or forgotten.
    public var retiredReplicas: [ReplicaID] = []
    /// Remote files swept (``SyncEngine/sweepFiles()``).
    public var files = FileSweepReport()
    /// Deleted records whose metadata was purged, once every active replica had seen the
    /// deletion.
    public var metadata = PurgeReport()
    /// Peer announcements deleted: unchanged for twice their longest lifetime, their
    /// replicas gone without withdrawing them.
    public var staleAnnouncements: [String] = []
    public init() {}
}

extension SyncEngine {
    /// Purges the metadata of deleted records every active replica has seen deleted
    /// (``PurgeReport``), then deletes this replica's own batches that its newest snapshot
    /// covers and that every active replica has applied — or, with `batchGracePeriod`, that are older than it (a
    /// lagging replica then joins the snapshot instead) — then sweeps unreferenced remote
    /// files (``sweepFiles()``). Writes a snapshot first when the newest one is behind the
    /// pushed seq (docs/ARCHITECTURE.md §4, "Compaction"). Replicas silent for longer than
    /// ``retention``, or forgotten (``forget(_:)``), are not waited for.
    @discardableResult
    public func compact(batchGracePeriod: UInt64? = nil) async throws(ConcordError) -> CompactionReport {
        let report = try await compacting(batchGracePeriod: batchGracePeriod)
        log(report)
        log(report.files)
        return report
    }

    private func compacting(batchGracePeriod: UInt64?) async throws(ConcordError) -> CompactionReport {
        var report = CompactionReport()
        var sync = SyncReport()
        // Only batches sealed before this compaction are deleted by it: the bytes of what it
        // deletes are forgotten at once, and whoever keeps a copy of every sealed batch (an
        // audit, a backup) has seen each one before its compaction begins.
        try await checkStoreIdentityOnce()
        // A copied store, or one whose newest head the remote lost, seals nothing more under its id.
        _ = try await continueUnderANewIDIfFileCopied(oldHead: nil, into: &sync)
        _ = try await continueUnderANewIDAfterOwnLoss(into: &sync)
        let sealedBefore = try store.sealedSeq()
        try await push(into: &sync, progress: nil)
        // Every head is read once, for both steps.
        let standings = try await standings(try await listHeads())
        report.metadata = try purgeStableDeletions(standings: standings)
        if !report.metadata.purged.isEmpty {
            // Shipped now, so the snapshot below already leaves the records out.
            try await push(into: &sync, progress: nil)
        }
        if try pushedSeq() > 0 { try await compactBatches(batchGracePeriod: batchGracePeriod, standings: standings, sealedBefore: sealedBefore, into: &report) }
        // The listing just made shows the announcements: those left by replicas gone go.
        report.staleAnnouncements = try await expireStaleAnnouncements()
        report.files = try await sweepFiles(standings: standings)
        report.files.temporaryFiles = store.blobs.sweepTemporaryFiles()
        try forgetOldUploads()
        return report
    }

    func compactBatches(batchGracePeriod: UInt64?, standings: [ReplicaID: Standing], sealedBefore: UInt64 = .max, into report: inout CompactionReport) async throws(ConcordError) {
        let me = store.replicaID
        let pushed = try pushedSeq()
        var unused = SyncReport()
        var snapshots = try await snapshotsOnRemote(into: &unused)
        var covered = snapshots.compactMap { $0.covers?[me] }.max() ?? 0
        // 1. A snapshot covering every pushed batch — unless another replica's already
        //    leaves at most `snapshotSlack` of them out: then it is shared, and the fleet
        //    keeps a copy or two of the state rather than two per replica. One set of bytes
        //    per name: written only when the seq moved past the last one.
        let shared = snapshots.first { $0.writer != me && $0.covers != nil && pushed - min(pushed, $0.covers?[me] ?? 0) <= snapshotSlack }
        if try snapshotSeq() < pushed {
            if let shared {
                report.sharedSnapshot = shared.path
            } else if covered < pushed {
                report.snapshot = try await writeSnapshot()
            }
        }
        let own = try snapshotSeq()
        if own > covered {
            // Only a snapshot that is there and opens covers anything (a put may have been lost).
            let path = RemoteLayout.snapshot(me, seq: own)
            if let covers = try await coverage(of: path, into: &unused) {
                snapshots.removeAll { $0.path == path }
                snapshots.append(RemoteSnapshot(path: path, writer: me, seq: own, modified: clock.millisecondsSinceEpoch(), covers: covers))
                covered = max(covered, covers[me] ?? 0)
            } else if own == pushed {
                report.snapshotMissing = true
            }
        }
        try store.setSyncState(.snapshotCovered, covered)
        report.droppedSnapshots = try await dropSupersededSnapshots(snapshots)
        guard covered > 0 else { return }
        // 2. What every active replica has applied of ours (retired ones join a snapshot
        //    if they come back; an unreadable head counts as having applied nothing).
        var everywhere = covered
        for (replica, standing) in standings where replica != me {
            switch standing.status {
            case .active: everywhere = min(everywhere, standing.head?.applied[me.description] ?? 0)
            case .silent, .forgotten: report.retiredReplicas.append(replica)
            }
        }
        report.retiredReplicas.sort()
        report.appliedEverywhere = everywhere
        // 3. Delete: applied everywhere, or past the grace period; always within a snapshot.
        let now = clock.millisecondsSinceEpoch()
        for object in try await remote.list(prefix: RemoteLayout.batchesPrefix(me)) {
            guard case let .batch(replica, seq)? = RemoteLayout.parse(object.path), replica == me, seq <= covered, seq <= sealedBefore else { continue }
            let old = batchGracePeriod.map { grace in (object.modified ?? now) + grace < now } ?? false
            guard seq <= everywhere || old else { continue }
            try await writes.delete(object.path)
            report.deletedBatches.append(seq)
        }
        report.deletedBatches.sort()
        // Their sealed bytes are not needed any more: the snapshot covers them. (A store of
        // the previous release kept them one compaction longer, listed under
        // ``ConcordStore/Store/sealedLeftToForget()``: those go now too.)
        let previous = try store.sealedLeftToForget()
        try store.forgetSealedDeltas(previous + report.deletedBatches)
        if !previous.isEmpty { try store.clearSealedLeftToForget() }
    }

    /// Deletes this replica's snapshots that another one on the remote supersedes: a
    /// readable snapshot covering at least as much of every origin (between equal ones, the
    /// greater name wins), old enough that every listing shows it (two upload deadlines).
    /// Whatever a lagging replica could catch up on from the deleted one, it can from the
    /// superseding one, so the batches deleted because of it stay covered: a snapshot is
    /// only ever deleted for one that outranks it, so a chain of such deletions ends at one
    /// that is there. A reader that listed the deleted one tries the next. So the remote
    /// keeps a snapshot or two in all, plus those of replicas that stopped compacting.
    func dropSupersededSnapshots(_ snapshots: [RemoteSnapshot]) async throws(ConcordError) -> [String] {
        var dropped: [String] = []
        let me = store.replicaID
        let now = clock.millisecondsSinceEpoch()
        let settled = snapshots.compactMap { snapshot -> (path: String, writer: ReplicaID, seq: UInt64, covers: [ReplicaID: UInt64])? in
            guard let covers = snapshot.covers, let modified = snapshot.modified, modified <= now, now - modified >= 2 * uploadDeadline else { return nil }
            return (snapshot.path, snapshot.writer, snapshot.seq, covers)
        }
        for candidate in snapshots where candidate.writer == me {
            let superseded: Bool
            if let covers = candidate.covers {
                superseded = settled.contains { $0.path != candidate.path && Self.outranks($0.covers, $0.path, covers, candidate.path) }
            } else {
                // One that did not open here (torn, or a bad read): what it covers is unknown,
                // so only a newer own one — whose applied seqs can only be greater — replaces it.
                superseded = settled.contains { $0.writer == me && $0.seq > candidate.seq }
            }
            if superseded {
                try await writes.delete(candidate.path)
                dropped.append(candidate.path)
            }
        }
        return dropped.sorted()
    }

    /// Whether snapshot `a` supersedes snapshot `b`: it covers at least as much of every
    /// origin, and more of one — or, covering the same, has the greater name. A strict order,
    /// so two snapshots never supersede each other.
    static func outranks(_ a: [ReplicaID: UInt64], _ aPath: String, _ b: [ReplicaID: UInt64], _ bPath: String) -> Bool {
        guard b.allSatisfy({ (a[$0.key] ?? 0) >= $0.value }) else { return false }
        let more = a.contains { (b[$0.key] ?? 0) < $0.value }
        return more || aPath > bPath
    }

    /// Forgets when files were uploaded once that is older than the upload deadline: such a
    /// time only ever let a push skip a recent upload.
    func forgetOldUploads() throws(ConcordError) {
        let now = clock.millisecondsSinceEpoch()
        for (hash, at) in try store.uploadTimes() {
            if at <= now, now - at <= uploadDeadline { continue }
            try store.setUploadedAt(hash, nil)
        }
    }

    /// Fetches and authenticates the snapshot at `path`, and reads it as far as its first
    /// record; nil when it is not there or fails to open (recorded in the report: it is
    /// treated as not there). Its records are checked as they are read: what it covers counts
    /// only once they all read (``coverage(of:into:)``, ``join(_:path:into:)``).
    func fetchSnapshot(_ path: String, into report: inout SyncReport) async throws(ConcordError) -> SnapshotObjectReader? {
        guard let sealed = try await objects.fetch(path) else { return nil }
        do {
            return try objects.openSnapshotReader(sealed, at: path)
        } catch {
            report.rejected.append("\(path): \(error.message)")
            return nil
        }
    }

    /// Joins a snapshot, fetching the files it holds back. False if a file is not there yet,
    /// or if its records turn out malformed (the snapshot is rejected in `report`).
    ///
    /// - Throws: ``ConcordCore/ConcordError/Code/storeRestored`` if the snapshot holds more
    ///   of this replica's batches than the store sealed: it is an older copy of itself,
    ///   and joining would let it seal a batch name that others applied with other contents.
    func join(_ snapshot: SnapshotObjectReader, path: String, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        let sealed = try store.sealedSeq()
        if let own = snapshot.appliedSeqs[store.replicaID], own > sealed {
            throw ConcordError(.storeRestored, "snapshot \(path) holds batch \(own) of this replica, but this store sealed only up to \(sealed): it is an older copy of itself")
        }
        if let end = snapshot.records.context.versionVector?[store.replicaID], !(try store.sealedABatchEnding(at: end)) {
            throw ConcordError(.storeRestored, "snapshot \(path) holds this replica's changes up to stamp \(end), where no batch this store sealed ended: it is an older copy of itself")
        }
        guard var result = try storeJoin(snapshot, path: path, into: &report) else { return false }
        if case let .heldBack(missing) = result {
            if let absent = try await fetchFiles(missing, of: try objects.fileReferences(in: snapshot), into: &report) {
                report.rejected.append("\(path): not joined yet: its file \(absent.hex) is not on the remote")
                return false
            }
            guard let second = try storeJoin(snapshot, path: path, into: &report) else { return false }
            result = second
        }
        if case .heldBack = result { return false }
        report.joinedSnapshots.append(path)
        return true
    }

    /// The store's join of `snapshot`; nil when a record of it is malformed (nothing was
    /// written, and the snapshot is rejected in `report`). Any answer means every record
    /// read, so what the snapshot covers is remembered.
    private func storeJoin(_ snapshot: SnapshotObjectReader, path: String, into report: inout SyncReport) throws(ConcordError) -> StoreApplyResult? {
        do {
            let result = try store.join(snapshot: snapshot.records, appliedSeqs: snapshot.appliedSeqs)
            try rememberCoverage(snapshot.appliedSeqs, of: path)
            return result
        } catch where Self.isDamage(error) {
            report.rejected.append("\(path): \(error.message)")
            return nil
        }
    }
}
