import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

extension SyncEngine {
    /// The most slots one pushed batch carries (more only when one write touched more).
    static let maxSlotsPerBatch = 50_000

    /// Seals the outbox, then pushes every sealed batch not yet confirmed on the remote:
    /// its files, the batch, then the head; then deletes this replica's older heads. Each
    /// step re-sends identical bytes after a crash.
    func push(into report: inout SyncReport, progress: (@Sendable (SyncProgress) -> Void)?) async throws(ConcordError) {
        // Bounded batches: a large backlog becomes several deltas, so neither this replica
        // nor any receiver holds more than one batch's worth of changes in memory.
        while try store.seal(maxSlots: Self.maxSlotsPerBatch) != nil {}
        try await finishReuploads()
        let sealed = try store.sealedSeq()
        var pushed = try pushedSeq()
        for seq in (pushed + 1)..<(sealed + 1) {
            progress?(SyncProgress(phase: .pushing, objectsDone: Int(seq - pushed - 1), objectsTotal: Int(sealed - pushed), bytesDone: 0, bytesTotal: 0))
            guard let plaintext = try store.sealedDelta(seq: seq) else {
                throw ConcordError(.corrupt, "sealed delta \(seq) is missing from the local store")
            }
            let delta = try DeltaCodec.decode(plaintext)
            // 1. The files it references (only those this replica wrote; others' files are
            //    uploaded by their writers), each uploaded within the deadline before the
            //    batch lands, so collection never takes one for garbage.
            let files = Set(delta.records.flatMap { $0.slots.flatMap(\.entries) }.compactMap { entry -> ContentHash? in
                if case let .file(file) = entry.payload, entry.dot.replica == store.replicaID { file.hash } else { nil }
            })
            try await uploadFiles(files, batch: seq, into: &report, progress: progress)
            // 2. The batch.
            let path = RemoteLayout.delta(store.replicaID, seq: seq)
            try await remote.put(path, SealedObject.sealDeterministically(plaintext, path: path, key: keys.batches))
            // 3. The head naming it.
            try await putHead(seq: seq)
            pushed = seq
            try store.setSyncValue("push.seq", String(seq))
            report.pushed += 1
        }
        // A head also when only what this replica has applied changed (a reader that never
        // writes still tells compaction what it has), and when the last one is getting old
        // (so a replica that syncs is never taken for a silent, retired one): otherwise
        // nothing when idle.
        let applied = try store.appliedSeqs().sorted { $0.key < $1.key }.map { "\($0.key):\($0.value)" }.joined(separator: ",")
        let advertised = "\(pushed)|\(applied)"
        let now = clock.millisecondsSinceEpoch()
        let written = UInt64(try store.syncValue("head.writtenAt") ?? "0") ?? 0
        let ageing = written > now || now - written > retention / 8
        if try store.syncValue("head.advertised") != advertised || ageing {
            if report.pushed == 0 { try await putHead(seq: pushed) }
            try store.setSyncValue("head.advertised", advertised)
        } else if report.pushed == 0 {
            return
        }
        // 4. Older heads of this replica.
        for head in try await listHeads().all where head.replica == store.replicaID && head.seq < pushed {
            try await remote.delete(RemoteLayout.head(head.replica, seq: head.seq))
        }
    }

    /// Uploads `files` unless this replica uploaded them within ``uploadDeadline``, and
    /// returns once every one was uploaded within the deadline (re-uploading those whose
    /// upload grew too old while others were sent).
    func uploadFiles(
        _ files: Set<ContentHash>, batch seq: UInt64, into report: inout SyncReport, progress: (@Sendable (SyncProgress) -> Void)?
    ) async throws(ConcordError) {
        guard !files.isEmpty else { return }
        for _ in 0..<3 {
            var oldest = clock.millisecondsSinceEpoch()
            for hash in files.sorted() {
                let now = clock.millisecondsSinceEpoch()
                let uploadedAt = UInt64(try store.syncValue("uploaded.\(hash.hex)") ?? "") ?? 0
                if uploadedAt <= now, now - uploadedAt <= uploadDeadline {
                    oldest = min(oldest, uploadedAt)
                    continue
                }
                progress?(SyncProgress(phase: .uploadingFiles, objectsDone: report.filesUploaded, objectsTotal: 0, bytesDone: 0, bytesTotal: 0))
                let path = BlobName.remotePath(for: hash, key: keys.blobNames)
                _ = try await BlobTransfer.upload(hash, from: store.blobs, to: remote, path: path, key: keys.blobContents)
                try store.setSyncValue("uploaded.\(hash.hex)", String(now))
                oldest = min(oldest, now)
                report.filesUploaded += 1
            }
            let end = clock.millisecondsSinceEpoch()
            if end < oldest || end - oldest <= uploadDeadline { return }
        }
        throw ConcordError(
            .remote,
            "uploading the files of batch \(seq) took longer than the upload deadline (\(uploadDeadline / 1000) s) three times; nothing was lost — sync again on a faster connection, or raise blobGracePeriod")
    }

    func putHead(seq: UInt64) async throws(ConcordError) {
        var applied: [String: UInt64] = [:]
        for (replica, appliedSeq) in try store.appliedSeqs() { applied[replica.description] = appliedSeq }
        var vector: [String: UInt64] = [:]
        for (replica, hlc) in try store.versionVector().entries { vector[replica.description] = hlc }
        var head = Head(
            replica: store.replicaID.description, seq: seq, device: try store.name(),
            syncedAt: clock.millisecondsSinceEpoch(), applied: applied, vector: vector)
        let retired = try store.syncValues(prefix: Self.retiredKey).compactMapValues { UInt64($0) }
        if !retired.isEmpty { head.retired = retired }
        if let snapshot = UInt64(try store.syncValue("snapshot.seq") ?? ""), snapshot > 0 { head.snapshot = snapshot }
        let path = RemoteLayout.head(store.replicaID, seq: seq)
        do {
            try await remote.put(path, SealedObject.seal(head.json(), path: path, key: keys.manifests))
        } catch {
            // It may have torn the head that was there: the next push writes it again.
            try store.setSyncValue("head.advertised", nil)
            throw error
        }
        try store.setSyncValue("head.writtenAt", String(head.syncedAt))
    }
}
