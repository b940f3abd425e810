import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

extension SyncEngine {
    /// Pushes pending changes, then uploads this replica's full state as a snapshot
    /// (`snapshots/<replica>-<seq>`), keeping its two newest. A new replica joins the
    /// newest snapshot instead of replaying every batch. Nothing is written when the
    /// snapshot of the current pushed seq was already written: each name gets one set of
    /// bytes.
    @discardableResult
    public func writeSnapshot() async throws(ConcordError) -> String {
        try await checkStoreIdentityOnce()
        if let written = try await writeSnapshot(republish: false) { return written }
        return RemoteLayout.snapshot(store.replicaID, seq: try pushedSeq())
    }

    /// ``writeSnapshot()``; with `republish`, a snapshot under a name already taken is put
    /// again when its bytes come out the same (nil when they do not).
    func writeSnapshot(republish: Bool) async throws(ConcordError) -> String? {
        var report = SyncReport()
        try await push(into: &report, progress: nil)
        // The seqs before the state: a state read after them holds at least what they claim.
        var seqs = try store.appliedSeqs()
        let seq = try pushedSeq()
        seqs[store.replicaID] = seq
        let path = RemoteLayout.snapshot(store.replicaID, seq: seq)
        // One set of bytes per name: a snapshot is named by the pushed seq, and the state
        // may have changed since the last one under this name, so it is not written again
        // (Proofs/Spin: each snapshot name sealed once) — unless it is gone from the remote
        // and the state is unchanged: sealing is deterministic, so the same bytes come back.
        // A new one comes with the next push.
        let recorded = try store.syncState(.snapshotSeq) != nil
        let named = try snapshotSeq()
        let taken = recorded && named == seq
        if taken, !republish { return path }
        // Written as the store reads its records: the state is never held whole.
        let (plaintext, files) = try store.exportSnapshotObject(appliedSeqs: seqs)
        let sealed = writes.sealSnapshot(plaintext, at: path)
        let digest = ContentHasher.hash(sealed).bytes
        if taken, try store.syncState(.snapshotDigest) != digest { return nil }
        // Its files first, as a push does: a snapshot may reference a file whose batches are
        // gone, and a fresh snapshot may be missing from listings for a while; a file just
        // (re-)uploaded is young, so the sweep keeps it until listings show the snapshot.
        var started = try await refreshFiles(files)
        for _ in 0..<2 where clock.millisecondsSinceEpoch() - started > uploadDeadline {
            started = try await refreshFiles(files)
        }
        guard clock.millisecondsSinceEpoch() - started <= uploadDeadline else {
            throw ConcordError(.remote, "uploading the files of snapshot \(path) took longer than the upload deadline three times; nothing was lost — try again on a faster connection, or raise blobGracePeriod")
        }
        // A put under this name that failed may have landed all the same (its reply was
        // lost) with the state of then: that snapshot stands — one name, one content.
        if !taken, try store.syncState(.snapshotAttempt) == seq, let landed = try await objects.authenticBytes(at: path), !objects.same(landed, as: sealed, at: path) {
            try store.setSyncState(.snapshotSeq, seq)
            try store.setSyncState(.snapshotDigest, ContentHasher.hash(landed).bytes)
            _ = try await refreshHead()
            return path
        }
        try store.setSyncState(.snapshotAttempt, seq)
        try await writes.put(sealed, at: path)
        try store.setSyncState(.snapshotSeq, seq)
        try store.setSyncState(.snapshotDigest, digest)
        _ = try await refreshHead()  // the head names the newest snapshot
        let mine = try await listSnapshots().filter { $0.writer == store.replicaID }.map(\.seq).sorted()
        for old in mine.dropLast(2) where old < seq {
            try await writes.delete(RemoteLayout.snapshot(store.replicaID, seq: old))
        }
        return path
    }

    /// A snapshot on the remote: its writer, the seq in its name, when it was written, and
    /// per origin the seq of the newest delta it contains (nil: not there, or does not open).
    struct RemoteSnapshot: Sendable {
        let path: String
        let writer: ReplicaID
        let seq: UInt64
        let modified: UInt64?
        var covers: [ReplicaID: UInt64]?
    }

    /// The snapshots listed on the remote, newest first; what each covers is not read yet.
    func listSnapshots() async throws(ConcordError) -> [RemoteSnapshot] {
        var snapshots: [RemoteSnapshot] = []
        for object in try await remote.list(prefix: RemoteLayout.snapshotsPrefix) {
            guard case let .snapshot(writer, seq)? = RemoteLayout.parse(object.path) else { continue }
            snapshots.append(RemoteSnapshot(path: object.path, writer: writer, seq: seq, modified: object.modified, covers: nil))
        }
        return snapshots.sorted { ($0.modified ?? 0, $0.path) > ($1.modified ?? 0, $1.path) }
    }

    /// The snapshots listed on the remote, newest first, with what each covers.
    func snapshotsOnRemote(into report: inout SyncReport) async throws(ConcordError) -> [RemoteSnapshot] {
        var snapshots = try await listSnapshots()
        for index in snapshots.indices {
            snapshots[index].covers = try await coverage(of: snapshots[index].path, into: &report)
        }
        // What snapshots no longer listed covered is not needed any more.
        let listed = Set(snapshots.map(\.path))
        for path in try store.snapshotsOfKnownCoverage() where !listed.contains(path) {
            try store.setKnownCoverage(nil, of: path)
        }
        return snapshots
    }

    /// Per origin, the seq of the newest delta the snapshot at `path` contains; nil when it
    /// is not there, does not open, or a record of it does not read (then no replica could
    /// join it, so it covers nothing). A name never gets other bytes, so each snapshot is
    /// read once for this and the answer remembered.
    func coverage(of path: String, into report: inout SyncReport) async throws(ConcordError) -> [ReplicaID: UInt64]? {
        if let known = try knownCoverage(of: path) { return known }
        guard let snapshot = try await fetchSnapshot(path, into: &report) else { return nil }
        do {
            try snapshot.records.check()
        } catch {
            report.rejected.append("\(path): \(error.message)")
            return nil
        }
        try rememberCoverage(snapshot.appliedSeqs, of: path)
        return snapshot.appliedSeqs
    }

    /// What the snapshot at `path` covers, if it was read before (``rememberCoverage(_:of:)``).
    func knownCoverage(of path: String) throws(ConcordError) -> [ReplicaID: UInt64]? {
        try store.knownCoverage(of: path)
    }

    /// Remembers what the snapshot at `path` covers: a name never gets other bytes.
    func rememberCoverage(_ covers: [ReplicaID: UInt64], of path: String) throws(ConcordError) {
        try store.setKnownCoverage(covers, of: path)
    }

    /// A replica that has applied nothing joins the newest readable snapshot first.
    func bootstrapIfNew(into report: inout SyncReport) async throws(ConcordError) {
        guard try store.appliedSeqs().isEmpty, try store.sealedSeq() == 0 else { return }
        let candidates = try await listSnapshots()
        // The newest that can be joined: one whose file is gone is passed over.
        for candidate in candidates {
            guard let snapshot = try await fetchSnapshot(candidate.path, into: &report) else { continue }
            if try await join(snapshot, path: candidate.path, into: &report) {
                report.bootstrapped = candidate.path
                return
            }
        }
    }
}
