import ConcordCore
import ConcordStore

/// What one metadata purge did (part of ``SyncEngine/compact(batchGracePeriod:)``).
public struct PurgeReport: Hashable, Sendable {
    /// Dead records whose metadata was purged here.
    public var purged: [RecordRef] = []
    /// Dead records still waiting for every active replica to have seen their deletion.
    public var waiting = 0
    /// Why nothing was purged, when the heads could not tell stability: a replica whose
    /// changes this one applied has no readable head, or an active one's head does not
    /// say what it had sealed, or says more than this replica has applied.
    public var skipped: String?
    public init() {}
}

extension SyncEngine {
    /// How long a deletion must have been found causally stable before its metadata is
    /// purged: twice the listing staleness bound, a fifth of ``blobGracePeriod`` (2.8 days
    /// with the default 7-day grace).
    public nonisolated var purgeDelay: UInt64 { 2 * (blobGracePeriod / 5) }

    /// Purges the metadata of deleted records once the deletion is causally stable
    /// (docs/ARCHITECTURE.md §4, "Compaction"): every active replica's head says it had seen every
    /// entry of the record with nothing of its own left unsealed, and this replica has
    /// applied everything those heads had. No write that has not seen the deletion can
    /// then arrive from an active replica, so the purge changes nothing a user can see;
    /// it is shipped in the next batch (the record whole, with nothing in it), so every
    /// replica drops the same entries, and snapshots leave the record out. Retired
    /// replicas are not waited for, nor can a replica be that this one never heard of (one
    /// that only pulled, or whose first head was lost): one that returns with an update it
    /// made before it saw the deletion keeps every field it held — its store writes back
    /// what the purge took (``ConcordStore/Store/apply(_:)``), as if there had been no purge.
    ///
    /// A replica's head is not listed at once: a listing may be stale by up to
    /// ``uploadDeadline`` (a fifth of the grace period). So a deletion found stable is
    /// purged only once it has been found stable for twice that: a replica that pulled
    /// before the deletion reached the remote wrote its head before that pull (its first
    /// sync announces it first), so its head is listed by then, and holds the purge back.
    func purgeStableDeletions(standings: [ReplicaID: Standing]) throws(ConcordError) -> PurgeReport {
        var report = PurgeReport()
        let applied = try store.versionVector()
        var bound = applied
        for replica in applied.entries.keys where replica != store.replicaID && standings[replica] == nil {
            report.skipped = "replica \(replica) has changes here but no head on the remote"
            return report
        }
        // Every replica ever seen counts, listed now or not — a reader that wrote nothing
        // included — unless it is retired: forgotten, or silent past the retention as a head
        // listed now shows. A head not listed proves nothing, however old the sync time last
        // read from it: the listing may have missed a newer one (the sync fuzz found a purge
        // that dropped the fields of a record a replica was updating concurrently, with
        // every head missing from one listing).
        var retiredAt = try store.replicaFacts(.retired)
        for standing in standings.values { retiredAt.merge(Head.replicaKeyed(standing.head?.retired ?? [:]), uniquingKeysWith: max) }
        for (replica, seen) in try store.replicaFacts(.seen).sorted(by: { $0.key < $1.key }) {
            guard replica != store.replicaID, standings[replica] == nil else { continue }
            if let at = retiredAt[replica], seen <= at { continue }
            report.skipped = "the head of replica \(replica) is not listed (a listing missed it, or it was deleted): stability cannot be shown without it"
            return report
        }
        for (replica, standing) in standings where replica != store.replicaID && standing.status == .active {
            guard let head = standing.head else {
                report.skipped = "the head of replica \(replica), seen before, does not open: it may be a real replica, damaged, so the purge waits for it (`concord doctor` names the file; if it is gone for good, `concord replicas forget \(replica)`)"
                return report
            }
            guard let stable = head.stable else {
                report.skipped = "the head of replica \(replica) does not say what it had sealed"
                return report
            }
            let vector = VersionVector(Head.replicaKeyed(stable))
            guard applied.dominates(vector) else {
                report.skipped = "replica \(replica) had applied changes this replica has not yet"
                return report
            }
            bound = bound.meeting(vector)
        }
        let dead = try store.deadRecords()
        let stable = dead.filter { bound.dominates($0.newest) }
        // When each was first found stable; records no longer stable are forgotten (one
        // deleted again later waits again).
        let now = clock.millisecondsSinceEpoch()
        var found = try store.stableSince()
        var settled: [RecordRef] = []
        for record in stable {
            if let since = found.removeValue(forKey: record.ref), since <= now {
                if now - since >= purgeDelay { settled.append(record.ref) }
            } else {
                try store.setStableSince(record.ref, now)
            }
        }
        for stale in found.keys { try store.setStableSince(stale, nil) }
        report.waiting = dead.count - settled.count
        report.purged = try store.purge(settled, within: bound)
        for ref in report.purged { try store.setStableSince(ref, nil) }
        return report
    }
}
