import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote

extension SyncEngine {
    /// Continues this store under a fresh replica id (``Store/adoptIdentity(_:sharedThrough:)``),
    /// keeping what the remote held of the old id through the pushed seq this copy
    /// remembers, and retires the old id as if forgotten: it will never write again. The
    /// old id's batches that no head announced are announced by the next sync
    /// (``announceOrphanedBatches(_:into:)``).
    func recoverRestoredCopy(evidence: String, oldHead: Head?) throws(ConcordError) -> IdentityChange {
        let fresh = store.configuration.newReplicaID()
        let old = try store.adoptIdentity(fresh, sharedThrough: try pushedSeq())
        // What this engine remembered of pushing under the old id no longer applies.
        try store.setSyncState(.pushedSeq, 0)
        try store.setSyncState(.snapshotSeq, nil)
        try store.setSyncState(.snapshotCovered, 0)
        try store.setSyncState(.headAdvertised, nil)
        try store.setSyncState(.headWrittenAt, 0)
        try store.clearSealedLeftToForget()
        try store.setSyncState(.snapshotDigest, nil)
        try store.setSyncState(.snapshotAttempt, nil)
        try store.setSyncState(.ownLoss, nil)
        // Retired up to its newest head's time, like `forget`: it never writes again.
        try store.setReplicaFact(.retired, of: old, oldHead?.syncedAt ?? clock.millisecondsSinceEpoch())
        try store.setSyncState(.orphansOf, old)
        // The file as it is now is this replica's (a copy of it made from now on is one).
        try store.recordFileIdentity()
        return IdentityChange(old: old, new: fresh, evidence: evidence)
    }

    /// This store's file is a copy of the file its replica wrote (``Store/fileReplacement()``):
    /// a restore from a backup, or a store carried to another device. Another copy of the
    /// replica may have sealed batches under the names this one would use next — and the
    /// remote, rolled back to the same moment, need not show them — so it continues under a
    /// new id before it seals anything (``recoverRestoredCopy(evidence:oldHead:into:)``).
    /// Returns whether it did.
    func continueUnderANewIDIfFileCopied(oldHead: Head?, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        guard report.restoredCopy == nil, let replaced = try store.fileReplacement() else { return false }
        report.restoredCopy = try await recoverRestoredCopy(
            evidence: "its file is a copy (restored from a backup, or carried from another device): \(replaced)", oldHead: oldHead, into: &report)
        return true
    }

    /// ``recoverRestoredCopy(evidence:oldHead:)``, once every batch of the old id through
    /// the pushed seq is whole on the remote (``putBackTornOwnBatches(into:)``).
    func recoverRestoredCopy(evidence: String, oldHead: Head?, into report: inout SyncReport) async throws(ConcordError) -> IdentityChange {
        try await putBackTornOwnBatches(into: &report)
        return try recoverRestoredCopy(evidence: evidence, oldHead: oldHead)
    }

    /// Puts back, byte for byte, every batch of this replica through its pushed seq that the
    /// remote holds torn (storage that reported the put as done), and checks again, before
    /// the id is retired: once it is, nobody could ever put them back, and every later
    /// batch of the id would wait on a torn one for ever. They are the very bytes pushed
    /// under those names (a restored copy sealed them before its backup was taken). Three
    /// rounds at most; past them the sync stops with nothing changed, and the next one
    /// tries again.
    func putBackTornOwnBatches(into report: inout SyncReport) async throws(ConcordError) {
        let me = store.replicaID
        let pushed = try pushedSeq()
        guard pushed > 0 else { return }
        var torn: [String] = []
        for _ in 0..<3 {
            torn = []
            for object in try await remote.list(prefix: RemoteLayout.batchesPrefix(me)) {
                guard case let .batch(origin, seq)? = RemoteLayout.parse(object.path), origin == me, seq <= pushed,
                    let plaintext = try store.sealedBytes(seq: seq),
                    !(object.size.map { writes.isSealedBatchSize($0, ofPlaintext: plaintext.count, of: me, seq: seq) } ?? false)
                else { continue }
                let sealed = writes.sealBatch(plaintext, of: me, seq: seq).bytes
                // A listing without sizes: read back, and put again only if it differs.
                if object.size == nil, let there = try await objects.authenticBytes(at: object.path), objects.same(there, as: sealed, at: object.path) { continue }
                torn.append(object.path)
                for hash in Self.files(in: try DeltaCodec.decode(plaintext)).sorted() where store.blobs.contains(hash) {
                    try await reupload(hash, path: BlobName.remotePath(for: hash, key: keys.blobNames))
                    report.filesUploaded += 1
                }
                try await writes.put(sealed, at: object.path)
                if !report.remoteRolledBack.contains(object.path) { report.remoteRolledBack.append(object.path) }
            }
            if torn.isEmpty { return }
        }
        throw ConcordError(.remote, "the remote still holds \(torn.joined(separator: ", ")) torn after this replica put \(torn.count == 1 ? "it" : "them") back three times; this replica keeps its id until they are whole — the next sync tries again (nothing was lost)")
    }

    /// Announces the batches the old id of a restored copy uploaded but no head names: its
    /// store was lost between a batch's upload and its head's (the device was restored from
    /// a backup before the next sync), so no replica would ever apply them. They are
    /// authentic batches of the old id, so announcing them is what its store would have done
    /// at its next sync: a head of the old id at the newest of them, dated no later than the
    /// old id's retirement (so it stays retired) and claiming no stability. Every replica,
    /// this one included, then pulls them like any other batch.
    ///
    /// Runs from the sync that found the copy until one finds nothing left to announce.
    /// Returns the batches announced.
    func announceOrphanedBatches(_ heads: Heads, into report: inout SyncReport) async throws(ConcordError) -> [String] {
        guard let old = try store.syncState(.orphansOf) else { return [] }
        let retiredAt = try store.replicaFact(.retired, of: old) ?? 0
        let orphans = try await announceUnannouncedBatches(of: old, heads: heads, datedNoLaterThan: retiredAt, into: &report)
        // Kept until a sync finds nothing left to announce: the head's put may not have landed.
        if orphans.isEmpty { try store.setSyncState(.orphansOf, nil) }
        return orphans
    }

    /// Announces `origin`'s authentic batches past the newest its heads announce: a head of
    /// `origin` at the newest of them, dated no later than `cap` (nor than its previous
    /// head), with what its previous head said it had applied, and claiming no stability.
    /// Every replica, this one included, then pulls them like any other batch.
    ///
    /// The unbroken run past the newest head is announced, up to the first batch that does
    /// not open or whose file is not whole on the remote and not here to upload again (its
    /// only copy was in the lost store: that batch, and those after it, are gone). A
    /// listing of the origin's batches, and a `get` of each one past its newest head.
    /// Returns the batches announced.
    func announceUnannouncedBatches(of origin: ReplicaID, heads: Heads, datedNoLaterThan cap: UInt64, into report: inout SyncReport) async throws(ConcordError) -> [String] {
        let announced = heads.latest[origin] ?? 0
        var listed: Set<UInt64> = []
        for object in try await remote.list(prefix: RemoteLayout.batchesPrefix(origin)) {
            if case let .batch(batchOrigin, seq)? = RemoteLayout.parse(object.path), batchOrigin == origin, seq > announced { listed.insert(seq) }
        }
        var orphans: [String] = []
        var blobs: [String: UInt64?]?
        var last = announced
        runs: while listed.contains(last + 1) {
            let path = RemoteLayout.batch(origin, seq: last + 1)
            guard let delta = try await objects.authenticBatch(origin, seq: last + 1) else { break }
            for reference in delta.fileReferences {
                if blobs == nil {  // one listing of the files, when a batch first references one
                    blobs = [:]
                    for object in try await remote.list(prefix: RemoteLayout.blobsPrefix) { blobs![object.path] = .some(object.size) }
                }
                let blob = BlobName.remotePath(for: reference.file.hash, key: keys.blobNames)
                guard Self.mayBeLost(blobs![blob], plaintext: reference.file.size) else { continue }
                guard store.blobs.contains(reference.file.hash) else { break runs }
                try await reupload(reference.file.hash, path: blob)
                blobs![blob] = .some(BlobStream.sealedByteCount(plaintextByteCount: reference.file.size, generation: keys.blobContents.generation))
                report.filesUploaded += 1
            }
            orphans.append(path)
            last += 1
        }
        guard last > announced else { return [] }
        try await announceHead(of: origin, at: last, datedNoLaterThan: cap, heads: heads)
        report.announcedOrphans += orphans
        return orphans
    }

    /// Writes a head of `origin` — a replica that is not this one and will not write it
    /// (gone, or retired) — at `seq`: what its newest listed head said it had applied, dated
    /// no later than `cap` (nor than that head), claiming no stability; then deletes its
    /// older heads, as its own push would have.
    func announceHead(of origin: ReplicaID, at seq: UInt64, datedNoLaterThan cap: UInt64, heads: Heads) async throws(ConcordError) {
        let announced = heads.latest[origin] ?? 0
        let before = announced > 0 ? ((try? await readHead(origin, seq: announced)) ?? nil) : nil
        var head = Head(
            replica: origin.description, seq: seq, device: before?.device, syncedAt: min(before?.syncedAt ?? cap, cap),
            applied: before?.applied ?? [:], vector: before?.vector ?? [:])
        head.retired = before?.retired
        head.snapshot = before?.snapshot
        try await writes.putHead(head, of: origin)
        for listedHead in heads.all where listedHead.replica == origin && listedHead.seq < seq {
            try await writes.deleteHead(of: origin, seq: listedHead.seq)
        }
    }
}
