import ConcordCore
import ConcordRemote
import ConcordStore

/// Forks of a replica's history (``HistoryFork``): two copies of one replica id that wrote
/// different batches under one name. Nothing but the remote could have told the second
/// copy — a device restored from a backup while the storage was rolled back to the same
/// moment — that the name was used, and the storage forgot. The replicas that applied the
/// first copy's batch hold what it says, and a name is applied once: so the sync names the
/// fork instead of applying either history over the other (docs/ARCHITECTURE.md §4).
extension SyncEngine {
    /// A fork of `delta`'s origin's history just before it: the batch applied here as the
    /// origin's previous batch ended at another stamp than the one `delta` follows (a batch
    /// depends on its origin up to exactly the end of the batch before it).
    func forkBefore(_ delta: Delta) throws(ConcordError) -> HistoryFork? {
        guard delta.origin != store.replicaID, delta.seq > 1, let known = try store.appliedBatch(of: delta.origin),
            known.seq == delta.seq - 1, delta.dependencies[delta.origin] != known.upTo
        else { return nil }
        let name = RemoteLayout.batch(delta.origin, seq: known.seq)
        return HistoryFork(
            replica: delta.origin, batch: name,
            evidence: "batch \(RemoteLayout.batch(delta.origin, seq: delta.seq)) follows a batch of its replica ending at stamp \(delta.dependencies[delta.origin]), but the batch this replica applied as \(name) ended at stamp \(known.upTo)")
    }

    /// The forks shown by the batches this replica applied last of each origin: the batch
    /// under that name now holds other contents. `listed`: per batch name, the size a
    /// listing gave (nil: look at every such batch, as doctor does); a batch listed at its
    /// recorded size is taken for the same one, so only a changed size costs a `get`.
    func forksAtAppliedNames(listed: [String: UInt64?]? = nil) async throws(ConcordError) -> [HistoryFork] {
        var forks: [HistoryFork] = []
        for (origin, known) in try store.appliedBatches().sorted(by: { $0.key < $1.key }) where origin != store.replicaID {
            guard let recorded = known.fingerprint else { continue }
            let name = RemoteLayout.batch(origin, seq: known.seq)
            if let listed {
                // Not listed (compacted, or lost: the loss checks see to it), or listed
                // without a size or at the recorded one: no evidence of other contents.
                guard case let .some(.some(size)) = listed[name], size != recorded.size else { continue }
            }
            guard let sealed = try await objects.authenticBytes(at: name),
                let there = try? objects.openFingerprintedBatch(sealed, origin: origin, seq: known.seq),
                there.fingerprint.digest != recorded.digest, !(try mergedFork(origin, seq: known.seq))
            else { continue }
            // The sync's listing: both sides are known now, and the merge can begin.
            if listed != nil { try recordForkAtAppliedBatch(origin, known: known, there: there) }
            forks.append(HistoryFork(
                replica: origin, batch: name,
                evidence: "\(name) holds another batch than the one this replica applied under that name (\(there.delta.records.count) record\(there.delta.records.count == 1 ? "" : "s") ending at stamp \(there.delta.upTo), not at \(known.upTo))"))
        }
        return forks
    }

    /// This store is an older copy of itself (`delta` depends on this replica up to a stamp
    /// `stamp` none of its batches ended at): if it pushed batches past the last one that
    /// ended before that stamp, the other copy used those names too, and the fork is noted
    /// in `report` (its writes past the fork do not reach the replicas that applied the
    /// other copy's batches).
    func noteOwnFork(dependedOn stamp: UInt64, by delta: Delta, into report: inout SyncReport) throws(ConcordError) {
        let common = try store.lastOwnBatch(endingBefore: stamp)
        let pushed = try pushedSeq()
        guard pushed > common else { return }
        let me = store.replicaID
        // Its own side, recorded while it keeps the bytes it sealed: a replica holding the
        // other side learns it from this replica's head, and the fork can be merged.
        if let own = try ownBatchFingerprint(seq: common + 1), let after = try store.ownBatchEnd(seq: common) {
            try store.recordHistoryFork(HistoryForkRecord(replica: me, seq: common + 1, after: after, sides: [own], held: own))
        }
        if try mergedFork(me, seq: common + 1) { return }
        let fork = HistoryFork(
            replica: me, batch: RemoteLayout.batch(me, seq: common + 1),
            evidence: "batch \(RemoteLayout.batch(delta.origin, seq: delta.seq)) depends on this replica up to stamp \(stamp), where none of its batches ended: another copy of it sealed batches from \(common + 1) on, and this store pushed its own batches \(common + 1)…\(pushed) under the same names")
        if !report.forks.contains(fork) { report.forks.append(fork) }
    }
}
