import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SyncEngine {
    /// Checks, from the heads listing the sync already made, that the remote still holds
    /// what this replica knows was there — its own newest head and batches, and the
    /// batches of others it applied — and publishes again from local state whatever is
    /// gone: a remote restored from an older copy, rolled back by a sync client or by
    /// bucket versioning, or objects deleted behind the replicas' backs.
    ///
    /// Costs no request when the listing shows every replica at or past what this one
    /// knows. A listing may be stale, so a head that looks behind is confirmed with one
    /// `get` before anything is republished. A batch that vanished while its head stayed
    /// shows in no heads listing: once per ``lossCheckInterval`` the sync also lists every
    /// replica's batches (one listing; the snapshots' too when a batch is not listed).
    /// Returns the objects published again.
    func republishWhatTheRemoteLost(_ heads: Heads, into report: inout SyncReport) async throws(ConcordError) -> [String] {
        let me = store.replicaID
        var republished: [String] = []
        // 1. This replica's own head and batches: the exact bytes it sealed.
        let pushed = try pushedSeq()
        if pushed > 0, (heads.latest[me] ?? 0) < pushed, try await objects.authenticBytes(at: RemoteLayout.head(me, seq: pushed)) == nil {
            // The remote lost the head of the newest batch this store sealed (when it sealed
            // more, the head may be a newer one the listing missed): remembered before
            // anything is put, for ``continueUnderANewIDAfterOwnLoss(into:)``.
            if try store.sealedSeq() == pushed, try store.syncState(.ownLoss) == nil {
                try store.setSyncState(.ownLoss, pushed)
            }
            republished += try await republishOwn(through: pushed, into: &report)
        }
        // 2. Others' batches it applied: gone, and covered by no snapshot, they live on
        //    here — a snapshot of this replica publishes them again. Retired replicas' too
        //    (forgotten ones, the old id of a restored copy): nobody else will publish
        //    them, and a replica that had not applied them would wait for ever.
        var lost: [ReplicaID: UInt64] = [:]
        for (origin, seq) in try store.appliedSeqs().sorted(by: { $0.key < $1.key })
        where origin != me && seq > 0 && (heads.latest[origin] ?? 0) < seq {
            // A batch no readable head announces is out of reach for a replica that lacks
            // it, even if it is there: its head is confirmed (the listing may be stale).
            if (try? await readHead(origin, seq: seq)) ?? nil == nil { lost[origin] = seq }
        }
        // Of those, retired replicas' (the old id of a restored copy, a forgotten replica):
        // nobody will ever write their head again, so once a snapshot covers what their
        // head lost, this replica announces it (below).
        // (Per origin: the seq, and the newest time its heads may carry.)
        var retiredBehind: [ReplicaID: (seq: UInt64, cap: UInt64)] = [:]
        if !lost.isEmpty {
            let standings = try await standings(heads)
            for (origin, seq) in lost {
                if let standing = standings[origin] {
                    if standing.status == .forgotten { retiredBehind[origin] = (seq, standing.head?.syncedAt ?? 0) }
                } else if let at = try store.replicaFact(.retired, of: origin) {
                    retiredBehind[origin] = (seq, at)
                }
            }
        }
        if !lost.isEmpty {
            let snapshots = try await snapshotsOnRemote(into: &report)
            lost = lost.filter { origin, seq in !snapshots.contains { ($0.covers?[origin] ?? 0) >= seq } }
        }
        // 3. Batches that vanished while their heads stayed: found by a listing of every
        //    replica's batches, made once per `lossCheckInterval`.
        var ownGaps = false
        var ownListed: Set<UInt64> = []
        if try lossCheckIsDue() {
            report.lossChecked = true
            // `concord.json` too: deleted or damaged (torn, truncated), every replica that
            // opens the remote anew stops; another store's, this engine must not go on
            // writing beside it.
            let bytes = try await remote.getManifest()
            if let bytes, let found = try? StoreManifest(json: bytes) {
                guard found.storeID == storeID else {
                    throw ConcordError(.storeMismatch, Self.storeChangedMessage(found: found.storeID.hex, recorded: storeID.hex, at: "the remote"))
                }
                // The copy kept follows the remote's (a new passphrase wraps the key anew).
                try Self.keepManifest(found, in: store)
            }
            if bytes.map(Self.isDamagedManifest) ?? true, try Self.keptManifest(in: store)?.storeID == storeID,
               try await Self.restoreManifest(remote, from: store) != nil {
                republished.append(RemoteLayout.manifestPath)
            }
            // The names of the batches applied last of each origin, to see them listed at
            // another size than they were applied at (a fork of that replica's history).
            let applied = try store.appliedBatches()
            let watched = Set(applied.compactMap { $0.value.fingerprint == nil ? nil : RemoteLayout.batch($0.key, seq: $0.value.seq) })
            let gaps = try await vanishedBatches(heads, watching: watched, into: &report)
            ownGaps = gaps.own
            ownListed = gaps.ownListed
            for fork in try await forksAtAppliedNames(listed: gaps.watched) where !report.forks.contains(fork) {
                report.forks.append(fork)
            }
            for (origin, seq) in gaps.others where lost[origin] == nil { lost[origin] = seq }
            // 4. Batches no head announces, their writer silent since: its head was deleted,
            //    or its store lost between a batch's upload and its head's. Nobody else
            //    would ever apply them, nor would a replica that depends on them.
            for (origin, uploaded) in gaps.unannounced.sorted(by: { $0.key < $1.key }) {
                _ = try await announceUnannouncedBatches(of: origin, heads: heads, datedNoLaterThan: uploaded, into: &report)
            }
            try store.setSyncState(.lossCheckedAt, clock.millisecondsSinceEpoch())
        }
        if ownGaps, republished.isEmpty {
            republished += try await republishOwn(through: pushed, into: &report)
        }
        if report.lossChecked {
            republished += try await reuploadLostFilesOfOwnBatches(listed: ownListed, into: &report)
        }
        let pending = try store.syncState(.republishPending)
        var covered = lost.isEmpty
        if !lost.isEmpty || pending {
            if let path = try await snapshotUnderANewName() {
                republished.append(path)
                try store.setSyncState(.republishPending, false)
                covered = true
            } else {
                // Its snapshot at the current seq was written before it applied what was
                // lost: a name never gets other bytes, so the next own batch gives the new
                // snapshot its name.
                try store.setSyncState(.republishPending, true)
            }
        }
        // A retired replica's batches that a snapshot now covers, announced by a head of it
        // at the newest of them: a replica that never applied them learns of them from that
        // head — heads are read when their name moves on — and joins the snapshot.
        if covered {
            for (origin, behind) in retiredBehind.sorted(by: { $0.key < $1.key }) {
                try await announceHead(of: origin, at: behind.seq, datedNoLaterThan: behind.cap, heads: heads)
                republished.append(RemoteLayout.head(origin, seq: behind.seq))
            }
        }
        return republished
    }

    /// The files of this replica's batches that are still on the remote, and whose upload
    /// the remote lost (a rollback that fell between a file's upload and its batch's):
    /// uploaded again from the local blob directory. `listed`: the own batches the periodic
    /// listing found (those it found torn were put again since). Any other file held here
    /// whose remote copy is torn (storage that reported a torn upload as done — of a file a
    /// snapshot of this replica references, say) is put again too. One listing of `blobs/`.
    private func reuploadLostFilesOfOwnBatches(listed present: Set<UInt64>, into report: inout SyncReport) async throws(ConcordError) -> [String] {
        // Per file, its size (its encrypted stream's follows, under some key generation).
        var wanted: [ContentHash: UInt64] = [:]
        for seq in present {
            guard let batch = try store.sealedBatch(seq: seq) else { continue }
            for reference in batch.delta.fileReferences {
                wanted[reference.file.hash] = reference.file.size
            }
        }
        let held = try store.blobs.all()
        guard !wanted.isEmpty || !held.isEmpty else { return [] }
        // Every listed file, with its size where the listing gives one: a size it leaves out
        // (`getcontentlength` is optional in WebDAV) is unknown, and a file listed at an
        // unknown size counts as there — never as torn, never put again.
        var listed: [String: UInt64?] = [:]
        for object in try await remote.list(prefix: RemoteLayout.blobsPrefix) { listed[object.path] = .some(object.size) }
        // Files held here that are on the remote at the wrong size: torn, whoever put them.
        for hash in held where wanted[hash] == nil {
            guard case let size?? = listed[BlobName.remotePath(for: hash, key: keys.blobNames)], let local = Self.fileSize(store.blobs.path(for: hash)) else { continue }
            if !BlobStream.isSealedSize(size, ofPlaintext: local) { wanted[hash] = local }
        }
        var uploaded: [String] = []
        for (hash, size) in wanted.sorted(by: { $0.key < $1.key }) where store.blobs.contains(hash) {
            let path = BlobName.remotePath(for: hash, key: keys.blobNames)
            // Gone, or torn (a put that reported success but stored a prefix: the size
            // shows it). A listing may be stale: the file is looked for once more on its own.
            guard Self.mayBeLost(listed[path], plaintext: size),
                  Self.mayBeLost(try await remote.list(prefix: path).first(where: { $0.path == path }).map(\.size), plaintext: size) else { continue }
            // A folder planted at the name cannot be replaced: reported, and the other files
            // and the rest of the sync go on (tried again at the next push).
            guard try await reuploadUnlessBlocked(hash, path: path, into: &report) else { continue }
            report.filesUploaded += 1
            uploaded.append(path)
        }
        return uploaded
    }

    /// Whether a file of `plaintext` bytes may be lost or torn, by what a listing said of it:
    /// nil, not listed; `.some(nil)`, listed without a size (unknown, so not taken for torn);
    /// else the listed size, which is whole when it is the file's encrypted size under some
    /// key generation (`BlobStream.isSealedSize(_:ofPlaintext:)`).
    static func mayBeLost(_ listed: UInt64??, plaintext: UInt64) -> Bool {
        switch listed {
        case nil: true
        case .some(nil): false
        case let .some(.some(listedSize)): !BlobStream.isSealedSize(listedSize, ofPlaintext: plaintext)
        }
    }

    /// The size of the local file at `path`, or nil if it cannot be read.
    static func fileSize(_ path: String) -> UInt64? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        return UInt64(info.st_size)
    }

    /// Whether the periodic listing of every replica's batches is due.
    private func lossCheckIsDue() throws(ConcordError) -> Bool {
        let last = try store.syncState(.lossCheckedAt)
        let now = clock.millisecondsSinceEpoch()
        return now < last || now - last >= lossCheckInterval
    }

    /// Lists every replica's batches and finds those that vanished: one of this replica's
    /// pushed batches, or another replica's batch it applied, missing from the listing and
    /// covered by no snapshot on the remote (compaction deletes only covered batches). A
    /// batch of another replica is confirmed missing with a `get` (a listing may be stale).
    /// Returns whether own batches are missing, and per other origin the newest applied seq.
    private func vanishedBatches(_ heads: Heads, watching watched: Set<String>, into report: inout SyncReport) async throws(ConcordError) -> VanishedBatches {
        let me = store.replicaID
        var expected = try store.appliedSeqs().filter { $0.key != me && $0.value > 0 }
        let pushed = try pushedSeq()
        if pushed > 0 { expected[me] = pushed }
        var present: [ReplicaID: Set<UInt64>] = [:]
        var ownTorn = false
        var ownListed: Set<UInt64> = []
        let sealed = try store.sealedSeq()
        // Per other origin, when the batch right after its newest head was uploaded.
        var unannounced: [ReplicaID: UInt64] = [:]
        let now = clock.millisecondsSinceEpoch()
        var watchedSizes: [String: UInt64?] = [:]
        for object in try await remote.list(prefix: RemoteLayout.replicasPrefix) {
            guard case let .batch(origin, seq)? = RemoteLayout.parse(object.path) else { continue }
            if watched.contains(object.path) { watchedSizes[object.path] = .some(object.size) }
            // The batch after the newest any head announces (or claims, torn), old enough
            // that its writer would have put its head long since (two upload deadlines).
            if origin != me, seq > 0, seq - 1 == heads.reach(origin), let modified = object.modified, modified <= now, now - modified >= 2 * uploadDeadline {
                unannounced[origin] = modified
            }
            // An authentic batch of this replica past anything it sealed: this store is an
            // older copy of itself, whose lost store uploaded the batch and was gone before
            // its head (the only evidence when the copy has nothing to push).
            if origin == me, seq > sealed, try await objects.authenticBatch(me, seq: seq) != nil {
                throw ConcordError(.storeRestored, "batch \(object.path) of this replica is on the remote, but this store sealed only up to \(sealed): it is an older copy of itself")
            }
            guard let newest = expected[origin], seq <= newest else { continue }
            if origin == me { ownListed.insert(seq) }
            // An own batch of the wrong size was torn by a put that reported success: it is
            // put again, covered or not (publishing again checks it byte for byte first).
            // (A size the listing does not give is unknown: no evidence of a tear.)
            if origin == me, let size = object.size, let plaintext = try store.sealedBytes(seq: seq),
               !writes.isSealedBatchSize(size, ofPlaintext: plaintext.count, of: me, seq: seq) {
                ownTorn = true
                continue
            }
            present[origin, default: []].insert(seq)
        }
        // Only when some expected batch is not listed are the snapshots consulted (what
        // each covers is remembered, so that is one listing).
        guard expected.contains(where: { UInt64(present[$0.key]?.count ?? 0) < $0.value }) else {
            return VanishedBatches(own: ownTorn, ownListed: ownListed, others: [:], unannounced: unannounced, watched: watchedSizes)
        }
        var covered: [ReplicaID: UInt64] = [:]
        for snapshot in try await snapshotsOnRemote(into: &report) {
            for (origin, seq) in snapshot.covers ?? [:] { covered[origin] = max(covered[origin] ?? 0, seq) }
        }
        var own = ownTorn
        var others: [ReplicaID: UInt64] = [:]
        for (origin, newest) in expected.sorted(by: { $0.key < $1.key }) {
            let floor = min(covered[origin] ?? 0, newest)
            let listed = present[origin]?.filter { $0 > floor }.count ?? 0
            guard UInt64(listed) < newest - floor else { continue }
            if origin == me {
                own = true
            } else if let gap = (floor + 1...newest).first(where: { !(present[origin]?.contains($0) ?? false) }),
                      try await objects.fetch(RemoteLayout.batch(origin, seq: gap)) == nil {
                others[origin] = newest
            }
        }
        return VanishedBatches(own: own, ownListed: ownListed, others: others, unannounced: unannounced, watched: watchedSizes)
    }

    /// What the periodic listing of every batch found.
    private struct VanishedBatches {
        /// Own batches are missing or torn.
        var own: Bool
        /// The own batches listed.
        var ownListed: Set<UInt64>
        /// Per other origin whose applied batches are gone and covered by no snapshot, the
        /// newest applied seq.
        var others: [ReplicaID: UInt64]
        /// Per other origin with a batch past every head, long enough ago that its writer is
        /// gone, when that batch was uploaded.
        var unannounced: [ReplicaID: UInt64]
        /// The watched batch names listed, with the size the listing gave (nil: none).
        var watched: [String: UInt64?]
    }

    /// Uploads again this replica's batches through `pushed` that the remote no longer
    /// holds (their files first), then its head. A batch whose sealed bytes were
    /// forgotten (compacted long ago) is covered by a snapshot; if that is gone too, a
    /// snapshot of the current state replaces it.
    private func republishOwn(through pushed: UInt64, into report: inout SyncReport) async throws(ConcordError) -> [String] {
        let me = store.replicaID
        var present: Set<UInt64> = []
        for object in try await remote.list(prefix: RemoteLayout.batchesPrefix(me)) {
            if case let .batch(_, seq)? = RemoteLayout.parse(object.path) { present.insert(seq) }
        }
        var republished: [String] = []
        var uncovered = false
        let ownSnapshot = try snapshotSeq()
        var snapshotThere = false
        if ownSnapshot > 0 { snapshotThere = try await objects.authenticBytes(at: RemoteLayout.snapshot(me, seq: ownSnapshot)) != nil }
        for seq in 1...pushed {
            guard let plaintext = try store.sealedBytes(seq: seq) else {
                if !present.contains(seq) && (!snapshotThere || seq > ownSnapshot) { uncovered = true }
                continue
            }
            let (path, sealed) = writes.sealBatch(plaintext, of: me, seq: seq)
            // An older copy may hold a batch torn by an upload that was retried later: one
            // that is there is checked byte for byte (this runs only after a rollback).
            if present.contains(seq), let there = try await objects.authenticBytes(at: path), objects.same(there, as: sealed, at: path) { continue }
            let delta = try DeltaCodec.decode(plaintext)
            for hash in Self.files(in: delta).sorted() where store.blobs.contains(hash) {
                try await reupload(hash, path: BlobName.remotePath(for: hash, key: keys.blobNames))
                report.filesUploaded += 1
            }
            try await writes.put(sealed, at: path)
            republished.append(path)
        }
        try await putHead(seq: pushed)
        republished.append(RemoteLayout.head(me, seq: pushed))
        // The older heads the old copy brought back, as a push deletes them.
        for head in try await listHeadNames() where head.replica == me && head.seq < pushed {
            try await writes.deleteHead(of: me, seq: head.seq)
        }
        if uncovered {
            if let path = try await snapshotUnderANewName() { republished.append(path) } else { try store.setSyncState(.republishPending, true) }
        }
        return republished
    }

    /// Writes a snapshot of the current state, unless this replica already wrote one under
    /// the name its pushed seq gives and the state changed since (nil then): a name never
    /// gets other bytes, but the same bytes may be put again. A replica that never pushed
    /// (a reader) writes its one snapshot under seq 0.
    func snapshotUnderANewName() async throws(ConcordError) -> String? {
        let pushed = try pushedSeq()
        let written = try store.syncState(.snapshotSeq) != nil
        let current = try snapshotSeq()
        return try await writeSnapshot(republish: written && current == pushed)
    }

    /// A store whose remote lost the head of its newest batch (rolled back, restored from a
    /// backup, or the head deleted) cannot tell whether it is itself an older copy — its
    /// device restored from a backup too — whose next batch name another replica already
    /// applied with other contents: no remote object says so any more. So once its lost
    /// objects are back (the exact bytes it sealed), its next new batch goes under a new
    /// replica id, as a restored copy's does: no `(replica, seq)` any replica applied is
    /// written with other bytes, whatever the remote shows. Its unsealed writes are
    /// re-stamped under the new id; nothing it sealed is (it sealed nothing past the lost
    /// head). Nothing happens while it has nothing new to write.
    func continueUnderANewIDAfterOwnLoss(into report: inout SyncReport) async throws(ConcordError) -> Bool {
        guard report.restoredCopy == nil, let lost = try store.syncState(.ownLoss) else { return false }
        guard try store.sealedSeq() == pushedSeq(), try store.pendingChangeCount() > 0 else { return false }
        report.restoredCopy = try await recoverRestoredCopy(
            evidence: "the remote lost this replica's head at seq \(lost) (rolled back, restored, or deleted): this store cannot tell whether it is an older copy too, whose next batch name another replica already applied",
            oldHead: nil, into: &report)
        return true
    }
}
