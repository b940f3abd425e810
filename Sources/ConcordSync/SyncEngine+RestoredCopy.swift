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
        var generator = SystemRandomNumberGenerator()
        let fresh = ReplicaID.random(using: &generator)
        let old = try store.adoptIdentity(fresh, sharedThrough: try pushedSeq())
        // What this engine remembered of pushing under the old id no longer applies.
        for key in [SyncKey.pushedSeq, SyncKey.snapshotSeq, SyncKey.snapshotCovered, SyncKey.headAdvertised, SyncKey.headWrittenAt, SyncKey.sealedToForget, SyncKey.snapshotDigest, SyncKey.snapshotAttempt, SyncKey.ownLoss] {
            try store.setSyncValue(key, nil)
        }
        // Retired up to its newest head's time, like `forget`: it never writes again.
        try store.setSyncNumber(SyncKey.retiredPrefix + old.description, oldHead?.syncedAt ?? clock.millisecondsSinceEpoch())
        try store.setSyncValue(SyncKey.orphansOf, old.description)
        return IdentityChange(old: old, new: fresh, evidence: evidence)
    }

    /// Announces the batches the old id of a restored copy uploaded but no head names: its
    /// store was lost between a batch's upload and its head's (the device was restored from
    /// a backup before the next sync), so no replica would ever apply them. They are
    /// authentic batches of the old id, so announcing them is what its store would have done
    /// at its next sync: a head of the old id at the newest of them, dated no later than the
    /// old id's retirement (so it stays retired) and claiming no stability. Every replica,
    /// this one included, then pulls them like any other batch.
    ///
    /// The unbroken run past the newest head is announced, up to the first batch that does
    /// not open or whose file is not whole on the remote and not here to upload again (its
    /// only copy was in the lost store: that batch, and those after it, are gone).
    ///
    /// Runs from the sync that found the copy until one finds nothing left to announce: a
    /// listing of the old id's batches, and a `get` of each one past its newest head.
    /// Returns the batches announced.
    func announceOrphanedBatches(_ heads: Heads, into report: inout SyncReport) async throws(ConcordError) -> [String] {
        guard let value = try store.syncValue(SyncKey.orphansOf), let old = ReplicaID(hex: value) else { return [] }
        let announced = heads.latest[old] ?? 0
        var listed: Set<UInt64> = []
        for object in try await remote.list(prefix: RemoteLayout.batchesPrefix(old)) {
            if case let .batch(origin, seq)? = RemoteLayout.parse(object.path), origin == old, seq > announced { listed.insert(seq) }
        }
        var orphans: [String] = []
        var blobs: [String: UInt64?]?
        var last = announced
        runs: while listed.contains(last + 1) {
            let path = RemoteLayout.batch(old, seq: last + 1)
            guard let delta = try await objects.authenticBatch(old, seq: last + 1) else { break }
            for reference in delta.fileReferences {
                if blobs == nil {  // one listing of the files, when a batch first references one
                    blobs = [:]
                    for object in try await remote.list(prefix: RemoteLayout.blobsPrefix) { blobs![object.path] = .some(object.size) }
                }
                let blob = BlobName.remotePath(for: reference.file.hash, key: keys.blobNames)
                let whole = BlobStream.sealedByteCount(plaintextByteCount: reference.file.size)
                guard Self.mayBeLost(blobs![blob], whole) else { continue }
                guard store.blobs.contains(reference.file.hash) else { break runs }
                try await reupload(reference.file.hash, path: blob)
                blobs![blob] = .some(whole)
                report.filesUploaded += 1
            }
            orphans.append(path)
            last += 1
        }
        guard last > announced else {
            try store.setSyncValue(SyncKey.orphansOf, nil)
            return []
        }
        let before = announced > 0 ? ((try? await readHead(old, seq: announced)) ?? nil) : nil
        let retiredAt = try store.syncNumber(SyncKey.retiredPrefix + old.description)
        var head = Head(
            replica: old.description, seq: last, device: before?.device, syncedAt: min(before?.syncedAt ?? retiredAt, retiredAt),
            applied: before?.applied ?? [:], vector: before?.vector ?? [:])
        head.retired = before?.retired
        head.snapshot = before?.snapshot
        let path = RemoteLayout.head(old, seq: last)
        try await remote.put(path, EncryptedObject.encrypt(head.json(), path: path, key: keys.manifests))
        for listedHead in heads.all where listedHead.replica == old && listedHead.seq < last {
            try await remote.delete(RemoteLayout.head(old, seq: listedHead.seq))
        }
        // Kept until a sync finds nothing left to announce: the head's put may not have landed.
        report.announcedOrphans = orphans
        return orphans
    }
}
