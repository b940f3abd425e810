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
    ///
    /// `listed`: the head names this sync's listing showed, nil when the caller did not
    /// list. An older head of this replica there (a push killed between writing its new head
    /// and deleting the old one) is deleted even when nothing else is pushed; with no such
    /// name, an idle push makes no request, and a push that only rewrote its head at the
    /// same seq (a replica that applied others' batches) does not list the heads again:
    /// every head of this replica it did not just write was in that listing.
    func push(
        into report: inout SyncReport, progress: (@Sendable (SyncProgress) -> Void)?, listed: [(replica: ReplicaID, seq: UInt64)]? = nil
    ) async throws(ConcordError) {
        // Bounded batches: a large backlog becomes several deltas, so neither this replica
        // nor any receiver holds more than one batch's worth of changes in memory.
        let sealedBefore = try store.sealedSeq()
        // What each batch sealed now references is kept from sealing; only a batch an
        // earlier, interrupted push sealed is read whole and decoded again. A batch sealed
        // alone is kept whole, bytes too; a backlog's bytes are read back one batch at a
        // time, so no more than one batch's worth is held.
        var filesSealed: [UInt64: Set<ContentHash>] = [:]
        var sealedAlone: SealedBatch?
        // The newest local write when the push began: everything up to it goes now.
        let writtenBefore = try store.versionVector()[store.replicaID]
        while let batch = try store.seal(maxSlots: Self.maxSlotsPerBatch) {
            filesSealed[batch.seq] = batch.files
            sealedAlone = nil
            if filesSealed.count == 1, try !store.hasPendingChanges() { sealedAlone = batch }
            // A batch under the bound that reached the writes made before the push began took
            // what was pending then: what was written since waits for the next push (its
            // commits planned one), rather than being sealed a few writes at a time while a
            // burst keeps writing. (A bounded seal may defer a field to a later batch, so a
            // batch under the bound can still leave older writes behind: those go on.)
            guard batch.delta.records.reduce(0, { $0 + max(1, $1.slots.count) }) >= Self.maxSlotsPerBatch
                || batch.delta.upTo < writtenBefore else { break }
        }
        try await finishReuploads(into: &report)
        let sealed = try store.sealedSeq()
        var pushed = try pushedSeq()
        if sealed > pushed {
            // Before a new batch name is used: no authentic head of this replica may name a
            // batch this store never sealed (it would be an older copy of itself). The sync's
            // own listing may have been stale; this one is fresh.
            for seq in try await listHeadNames().filter({ $0.replica == store.replicaID && $0.seq > sealedBefore }).map(\.seq).sorted(by: >) {
                if (try? await readHead(store.replicaID, seq: seq)) != nil {
                    throw ConcordError(.storeRestored, "the remote holds head \(RemoteLayout.head(store.replicaID, seq: seq)) of this replica, naming batch \(seq), but this store sealed only up to \(sealedBefore): it is an older copy of itself")
                }
            }
        }
        // Batches go up `requestsInFlight` at a time (their files first), then one head
        // names the last of them: a crash in between leaves batches no head names yet,
        // which the next push sends again with the same bytes.
        var window: [(seq: UInt64, path: String, bytes: [UInt8])] = []
        let start = pushed
        for seq in (pushed + 1)..<(sealed + 1) {
            progress?(SyncProgress(phase: .pushing, objectsDone: Int(seq - start - 1), objectsTotal: Int(sealed - start), bytesDone: 0, bytesTotal: 0))
            let (plaintext, files) = try sealedForPush(seq, alone: &sealedAlone, files: &filesSealed)
            // 1. The files it references (only those this replica wrote; others' files are
            //    uploaded by their writers), each uploaded within the deadline before the
            //    batch lands, so the sweep never takes one for garbage.
            try await uploadFiles(files, batch: seq, into: &report, progress: progress)
            // 2. The batch — never over another authentic batch of the same name (one name,
            //    one content): if the remote holds different, authentic bytes there, this
            //    store is an older copy of a replica that pushed on (restored from a backup).
            let (path, bytes) = writes.sealBatch(plaintext, of: store.replicaID, seq: seq)
            window.append((seq, path, bytes))
            // The first new name goes up alone: were this store an older copy of itself, the
            // name taken shows it before any later batch of the backlog lands beside it.
            guard window.count >= requestsInFlight || seq == sealed || seq == start + 1 else { continue }
            try await putBatches(window)
            // 3. The head naming the last of them.
            try await putHead(seq: seq)
            pushed = seq
            try store.setSyncState(.pushedSeq, seq)
            report.pushed += window.count
            window.removeAll()
        }
        // A head also when what it says changed without a batch (a reader that never
        // writes still tells compaction what it has), or when it is getting old: nothing
        // when idle.
        let wrote = try await refreshHead() || report.pushed > 0
        let olderListed = listed?.contains(where: { $0.replica == store.replicaID && $0.seq < pushed }) ?? false
        guard wrote || olderListed else { return }
        // Every head this sync wrote is at `pushed` unless it pushed a batch; any older one was listed.
        if listed != nil, report.pushed == 0, !olderListed { return }
        // 4. Older heads of this replica — once its newest is there to take their place.
        let names = try await listHeadNames()
        guard wrote || names.contains(where: { $0.replica == store.replicaID && $0.seq == pushed }) else { return }
        for head in names where head.replica == store.replicaID && head.seq < pushed {
            try await writes.deleteHead(of: head.replica, seq: head.seq)
        }
    }

    /// Sealed batch `seq`'s bytes and the files its push uploads: from the batch this push
    /// sealed alone, or its bytes read back with the files kept from sealing, or — a batch
    /// an earlier, interrupted push sealed — read back whole.
    private func sealedForPush(
        _ seq: UInt64, alone: inout SealedBatch?, files kept: inout [UInt64: Set<ContentHash>]
    ) throws(ConcordError) -> (bytes: [UInt8], files: Set<ContentHash>) {
        if let files = kept.removeValue(forKey: seq) {
            if let batch = alone, batch.seq == seq {
                alone = nil
                return (batch.bytes, files)
            }
            if let bytes = try store.sealedBytes(seq: seq) { return (bytes, files) }
        }
        guard let batch = try store.sealedBatch(seq: seq) else {
            throw ConcordError(.corrupt, "sealed delta \(seq) is missing from the local store")
        }
        return (batch.bytes, batch.files)
    }

    /// Puts `batches`, each once its name is shown free, all at once; throws the first
    /// failure after every put has ended.
    private func putBatches(_ batches: [(seq: UInt64, path: String, bytes: [UInt8])]) async throws(ConcordError) {
        let failures = try await inFlight(batches) { (engine, batch) throws(ConcordError) -> ConcordError? in
            do throws(ConcordError) {
                try await engine.checkNameIsFree(batch.path, for: batch.bytes, seq: batch.seq)
                try await engine.writes.put(batch.bytes, at: batch.path)
                return nil
            } catch {
                return error
            }
        }.compactMap { $0 }
        // A restored store is the finding that matters most; any other failure will do.
        if let failure = failures.first(where: { $0.code == .storeRestored }) ?? failures.first { throw failure }
    }

    /// Throws ``ConcordCore/ConcordError/Code/storeRestored`` if the remote holds other
    /// authentic bytes at `path`, this replica's batch `seq`. The same bytes (a push that
    /// crashed after the put) or a torn, unreadable object there are fine to (re)write.
    private func checkNameIsFree(_ path: String, for bytes: [UInt8], seq: UInt64) async throws(ConcordError) {
        guard let existing = try await objects.authenticBytes(at: path), !objects.same(existing, as: bytes, at: path) else { return }
        throw ConcordError(.storeRestored, "the remote batch \(path) holds other changes than this store sealed under that name: this store is an older copy of itself")
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
            var due: [ContentHash] = []
            let now = clock.millisecondsSinceEpoch()
            for hash in files.sorted() {
                let uploadedAt = try store.uploadedAt(hash) ?? 0
                if uploadedAt <= now, now - uploadedAt <= uploadDeadline {
                    oldest = min(oldest, uploadedAt)
                } else {
                    due.append(hash)
                }
            }
            // A window of uploads at a time; each is remembered with the time it began.
            for window in due.chunked(by: requestsInFlight) {
                progress?(SyncProgress(phase: .uploadingFiles, objectsDone: report.filesUploaded, objectsTotal: due.count, bytesDone: 0, bytesTotal: 0))
                let began = clock.millisecondsSinceEpoch()
                _ = try await inFlight(window) { (engine, hash) throws(ConcordError) in
                    try await engine.uploadFile(hash)
                    try engine.store.setUploadedAt(hash, began)
                }
                oldest = min(oldest, began)
                report.filesUploaded += window.count
            }
            let end = clock.millisecondsSinceEpoch()
            if end < oldest || end - oldest <= uploadDeadline { return }
        }
        throw ConcordError(
            .remote,
            "uploading the files of batch \(seq) took longer than the upload deadline (\(uploadDeadline / 1000) s) three times; nothing was lost — sync again on a faster connection, or raise blobGracePeriod")
    }

}
