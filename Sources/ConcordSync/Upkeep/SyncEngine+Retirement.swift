import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// Whether a replica counts when compaction asks "has every active replica applied this?"
/// (docs/ARCHITECTURE.md §4).
public enum ReplicaStatus: String, Hashable, Sendable {
    /// It synced within the retention period: compaction waits for it.
    case active
    /// Its newest head is older than the retention period: treated as retired.
    case silent
    /// A replica retired it (``SyncEngine/forget(_:)``) and it has not synced since.
    case forgotten
}

extension SyncEngine {
    /// One replica as the heads show it.
    struct Standing {
        /// The seq of its newest listed head.
        var seq: UInt64
        /// That head; nil when it cannot be read (treated as having applied nothing).
        var head: Head?
        var status: ReplicaStatus
    }

    /// The newest head of every listed replica, this one included, and its status: forgotten
    /// when some replica retired it and it has not written a head since; silent when its
    /// newest head is older than ``retention``; active otherwise.
    ///
    /// A head that does not open is no head (docs/ARCHITECTURE.md §2, "A head nobody can
    /// read"): of a replica this one never saw — no head of it ever authenticated here,
    /// none of its changes applied here — it is left out, as a replica nobody knows of
    /// (a junk `heads/<id>-0000000000000000` holds nothing back); of a replica seen before,
    /// it stands, holding compaction and the purge back as one that applied nothing, until
    /// the last sync time read from it is older than ``retention`` or it is forgotten.
    func standings(_ heads: Heads) async throws(ConcordError) -> [ReplicaID: Standing] {
        var read = heads.read
        for (replica, seq) in heads.latest where read[replica] == nil && !heads.unopened.contains(replica) {
            if let head = try? await readHead(replica, seq: seq) { read[replica] = head }
        }
        // Retirements are kept in heads, so they reach every replica; the latest one wins.
        var retiredAt = try store.replicaFacts(.retired)
        for head in read.values { retiredAt.merge(Head.replicaKeyed(head.retired ?? [:]), uniquingKeysWith: max) }
        let now = clock.millisecondsSinceEpoch()
        let applied = try store.appliedSeqs()
        var standings: [ReplicaID: Standing] = [:]
        for (replica, seq) in heads.latest {
            let head = read[replica]
            // A head is rewritten in place under its name, so an older copy of it still
            // authenticates (a rolled-back remote): its time counts no less than the newest
            // this replica saw of it, so a rollback cannot make an active replica look
            // silent or forgotten.
            let seen = try store.replicaFact(.seen, of: replica) ?? 0
            if head == nil, replica != store.replicaID, seen == 0, applied[replica] == nil { continue }
            let syncedAt = head.map { max($0.syncedAt, seen) } ?? (seen > 0 ? seen : nil)
            let status: ReplicaStatus
            if replica == store.replicaID {
                status = .active
            } else if let at = retiredAt[replica], (syncedAt ?? 0) <= at {
                status = .forgotten
            } else if let syncedAt, syncedAt < now, now - syncedAt > retention {
                status = .silent
            } else {
                status = .active
            }
            standings[replica] = Standing(seq: seq, head: head, status: status)
            // Remembered, so a later listing that misses its head cannot make it unknown.
            if let head, replica != store.replicaID {
                if try store.replicaFact(.seen, of: replica) ?? 0 < head.syncedAt { try store.setReplicaFact(.seen, of: replica, head.syncedAt) }
            }
        }
        return standings
    }

    /// Retires `replica` now, without waiting for ``retention``: compaction stops waiting
    /// for it to apply batches. Recorded in this replica's head, so every replica honours
    /// it. Nothing is deleted and nothing of `replica` is lost: if it syncs again it is
    /// active again, joins snapshots where batches it needs were compacted, and pushes its
    /// own unpushed changes as usual.
    ///
    /// A replica whose heads do not open (damaged, or planted) can be forgotten too: it
    /// is the way to stop compaction and the purge waiting for one that was seen before and
    /// will not come back (`doctor` names its heads).
    ///
    /// - Throws: ``/ConcordCore/ConcordError/Code/invalidOperation`` for this replica itself;
    ///   ``/ConcordStore/ConcordCore/ConcordError/Code/notFound`` if the remote lists no head name of `replica`.
    @discardableResult
    public func forget(_ replica: ReplicaID) async throws(ConcordError) -> ReplicaInfo {
        guard replica != store.replicaID else {
            throw ConcordError(.invalidOperation, "\(replica) is this replica: forget it from another device")
        }
        let heads = try await listHeads()
        guard let seq = heads.latest[replica] ?? heads.all.filter({ $0.replica == replica }).map(\.seq).max() else {
            throw ConcordError(.notFound, "the remote has no head of replica \(replica): `concord replicas` lists the replicas it knows")
        }
        var head = heads.read[replica]
        if head == nil, heads.latest[replica] != nil { head = try? await readHead(replica, seq: seq) }
        // Retired up to its newest head's time: a head written after it means it is back.
        let at = head?.syncedAt ?? clock.millisecondsSinceEpoch()
        try store.setReplicaFact(.retired, of: replica, at)
        var report = SyncReport()
        try await push(into: &report, progress: nil)  // writes the head: what it says changed
        return ReplicaInfo(id: replica, deviceName: head?.device, lastSync: head?.syncedAt ?? 0, seq: seq, status: .forgotten)
    }
}
