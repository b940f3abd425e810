import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// What ``SyncEngine/compact(batchGracePeriod:)`` did.
public struct CompactionReport: Hashable, Sendable {
    /// The snapshot written first, if one was needed.
    public var snapshot: String?
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
    /// Remote files collected (``SyncEngine/collectFiles()``).
    public var files = CollectionReport()
    /// Deleted records whose metadata was purged, once every active replica had seen the
    /// deletion.
    public var metadata = PurgeReport()
    public init() {}
}

extension SyncEngine {
    /// Purges the metadata of deleted records every active replica has seen deleted
    /// (``PurgeReport``), then deletes this replica's own batches that its newest snapshot
    /// covers and that every active replica has applied — or, with `batchGracePeriod`, that are older than it (a
    /// lagging replica then joins the snapshot instead) — then collects unreferenced remote
    /// files (``collectFiles()``). Writes a snapshot first when the newest one is behind the
    /// pushed seq (DESIGN.md §4, "Compaction"). Replicas silent for longer than
    /// ``retention``, or forgotten (``forget(_:)``), are not waited for.
    @discardableResult
    public func compact(batchGracePeriod: UInt64? = nil) async throws(ConcordError) -> CompactionReport {
        var report = CompactionReport()
        var sync = SyncReport()
        try await push(into: &sync, progress: nil)
        // Every head is read once, for both steps.
        let standings = try await standings(try await listHeads())
        report.metadata = try purgeStableDeletions(standings: standings)
        if !report.metadata.purged.isEmpty {
            // Shipped now, so the snapshot below already leaves the records out.
            try await push(into: &sync, progress: nil)
        }
        if try pushedSeq() > 0 { try await compactBatches(batchGracePeriod: batchGracePeriod, standings: standings, into: &report) }
        report.files = try await collectFiles(standings: standings)
        try forgetOldUploads()
        return report
    }

    func compactBatches(batchGracePeriod: UInt64?, standings: [ReplicaID: Standing], into report: inout CompactionReport) async throws(ConcordError) {
        let pushed = try pushedSeq()
        // 1. A snapshot covering every pushed batch (one set of bytes per name: written only
        //    when the seq moved past the last one).
        if try snapshotSeq() < pushed {
            report.snapshot = try await writeSnapshot()
        }
        let covered = try snapshotSeq()
        // Only a snapshot that is there and opens covers anything (a put may have been lost).
        var unused = SyncReport()
        guard covered > 0, try await fetchSnapshot(RemoteLayout.snapshot(store.replicaID, seq: covered), into: &unused) != nil else {
            report.snapshotMissing = true
            return
        }
        // 2. What every active replica has applied of ours (retired ones join a snapshot
        //    if they come back; an unreadable head counts as having applied nothing).
        var everywhere = covered
        for (replica, standing) in standings where replica != store.replicaID {
            switch standing.status {
            case .active: everywhere = min(everywhere, standing.head?.applied[store.replicaID.description] ?? 0)
            case .silent, .forgotten: report.retiredReplicas.append(replica)
            }
        }
        report.retiredReplicas.sort()
        report.appliedEverywhere = everywhere
        // 3. Delete: applied everywhere, or past the grace period; always within the snapshot.
        let now = clock.millisecondsSinceEpoch()
        for object in try await remote.list(prefix: RemoteLayout.deltasPrefix(store.replicaID)) {
            guard case let .delta(replica, seq)? = RemoteLayout.parse(object.path), replica == store.replicaID, seq <= covered else { continue }
            let old = batchGracePeriod.map { grace in (object.modified ?? now) + grace < now } ?? false
            guard seq <= everywhere || old else { continue }
            try await remote.delete(object.path)
            report.deletedBatches.append(seq)
        }
        report.deletedBatches.sort()
        // Their sealed bytes are not needed any more: the snapshot covers them. They are
        // forgotten at the next compaction, so whoever audits sealed deltas (the fuzz) can
        // still read each one after the compaction that deleted its batch.
        let previous = (try store.syncValue(SyncKey.sealedToForget) ?? "").split(separator: ",").compactMap { UInt64($0) }
        try store.forgetSealedDeltas(previous)
        try store.setSyncValue(SyncKey.sealedToForget, report.deletedBatches.map(String.init).joined(separator: ","))
        try await dropOlderSnapshot()
    }

    /// Deletes this replica's snapshots older than its newest once the newest is old enough
    /// that every listing shows it (two upload deadlines): the older one only served readers
    /// that listed it before the newest appeared, and a reader that misses it tries the
    /// next. So a store keeps one snapshot per replica, two for a while after each new one.
    func dropOlderSnapshot() async throws(ConcordError) {
        let mine = try await remote.list(prefix: RemoteLayout.snapshotsPrefix).compactMap { object -> (seq: UInt64, modified: UInt64?)? in
            if case let .snapshot(replica, seq)? = RemoteLayout.parse(object.path), replica == store.replicaID { (seq, object.modified) } else { nil }
        }.sorted { $0.seq < $1.seq }
        guard let newest = mine.last, let modified = newest.modified else { return }
        let now = clock.millisecondsSinceEpoch()
        guard modified <= now, now - modified >= 2 * uploadDeadline else { return }
        for older in mine.dropLast() { try await remote.delete(RemoteLayout.snapshot(store.replicaID, seq: older.seq)) }
    }

    /// Forgets when files were uploaded once that is older than the upload deadline: such a
    /// time only ever let a push skip a recent upload.
    func forgetOldUploads() throws(ConcordError) {
        let now = clock.millisecondsSinceEpoch()
        for (hex, value) in try store.syncValues(prefix: SyncKey.uploadedPrefix) {
            if let at = UInt64(value), at <= now, now - at <= uploadDeadline { continue }
            try store.setSyncValue(SyncKey.uploadedPrefix + hex, nil)
        }
    }

    /// Joins the newest snapshot of `origin` that covers its batch `seq`, for a replica
    /// whose next batch was compacted away. Returns whether it joined one.
    func catchUp(origin: ReplicaID, seq: UInt64, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        let candidates = try await remote.list(prefix: RemoteLayout.snapshotsPrefix).compactMap { object -> UInt64? in
            if case let .snapshot(replica, snapshotSeq)? = RemoteLayout.parse(object.path), replica == origin, snapshotSeq >= seq { snapshotSeq } else { nil }
        }.sorted(by: >)
        for candidate in candidates {
            let path = RemoteLayout.snapshot(origin, seq: candidate)
            guard let snapshot = try await fetchSnapshot(path, into: &report),
                  (snapshot.appliedSeqs[origin] ?? 0) >= seq else { continue }
            if try await join(snapshot, path: path, into: &report) { return true }
        }
        return false
    }

    /// Fetches, authenticates and decodes the snapshot at `path`; nil when it is not there or
    /// fails to open (recorded in the report: it is treated as not there).
    func fetchSnapshot(_ path: String, into report: inout SyncReport) async throws(ConcordError) -> (state: StoreState, appliedSeqs: [ReplicaID: UInt64])? {
        guard let sealed = try await remote.get(path) else { return nil }
        do {
            return try SnapshotObject.decode(try SealedObject.open(sealed, path: path, key: keys.snapshots), path: path)
        } catch {
            report.rejected.append("\(path): \(error.message)")
            return nil
        }
    }

    /// Joins a snapshot, fetching the files it holds back. False if a file is not there yet.
    func join(_ snapshot: (state: StoreState, appliedSeqs: [ReplicaID: UInt64]), path: String, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        var result = try store.join(snapshot: snapshot.state, appliedSeqs: snapshot.appliedSeqs)
        if case let .heldBack(missing) = result {
            for hash in missing {
                guard try await fetchFile(hash, into: &report) else {
                    report.rejected.append("\(path): not joined yet: its file \(hash.hex) is not on the remote")
                    return false
                }
            }
            result = try store.join(snapshot: snapshot.state, appliedSeqs: snapshot.appliedSeqs)
        }
        if case .heldBack = result { return false }
        report.joinedSnapshots.append(path)
        return true
    }
}
