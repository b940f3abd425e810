import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// Merging a fork of a replica's history (docs/ARCHITECTURE.md §4, "Merging a fork"): once
/// a replica knows the fingerprints of both sides' batches at the seq `k` where they part,
/// the side with the smaller one keeps the replica's name and the other's dots past the
/// common prefix move to a fresh id (`ForkName`). A replica holding the renamed side renames
/// its stored state in one transaction (`Store.renameForkedSide`); one holding the kept
/// side, or neither, applies the renamed side's batches on the remote through
/// `Delta.renaming`; the side that is no longer on the remote reaches the others through a
/// snapshot of a replica that holds it. Heads carry what each replica knows (`HeadFork`).
extension SyncEngine {
    // MARK: What heads say

    /// The forks this replica knows, as its head tells them.
    func headForks() throws(ConcordError) -> [HeadFork]? {
        let forks = try store.historyForks()
        guard !forks.isEmpty else { return nil }
        return forks.map { record in
            HeadFork(
                replica: record.replica.description, seq: record.seq, after: record.after, sides: record.sides.sorted().map { Hex.encode($0) },
                held: record.merged ? record.held.map { Hex.encode($0) } : nil, through: record.merged && record.held != nil ? record.through : nil)
        }
    }

    /// The fingerprint of own batch `seq` as this store sealed it, while it keeps its bytes.
    func ownBatchFingerprint(seq: UInt64) throws(ConcordError) -> UInt64? {
        guard let plaintext = try store.sealedBytes(seq: seq) else { return nil }
        let me = store.replicaID
        return try? objects.openFingerprintedBatch(writes.sealBatch(plaintext, of: me, seq: seq).bytes, origin: me, seq: seq).fingerprint.digest
    }

    /// Whether this store merged the fork of `replica` at `seq`: it is not reported again.
    func mergedFork(_ replica: ReplicaID, seq: UInt64) throws(ConcordError) -> Bool {
        try store.historyForks().contains { $0.replica == replica && $0.seq == seq && $0.merged }
    }

    /// The rename that merges `record` (both sides known).
    func forkRename(_ record: HistoryForkRecord) throws(ConcordError) -> DotRename {
        guard let renamed = record.renamed else {
            throw ConcordError(.invalidOperation, "the fork of \(record.replica) at \(record.seq) has one side known")
        }
        let to = ForkName.renamedReplica(record.replica, seq: record.seq, fingerprint: renamed, key: keys.forkNames)
        return try DotRename(replica: record.replica, to: to, after: record.after)
    }

    // MARK: Learning both sides

    /// Records the fork shown by `origin`'s batch `known` (applied here) and the other batch
    /// the remote holds under its name now, `there`.
    func recordForkAtAppliedBatch(_ origin: ReplicaID, known: AppliedBatch, there: (delta: Delta, fingerprint: BatchFingerprint)) throws(ConcordError) {
        guard let held = known.fingerprint?.digest, held != there.fingerprint.digest, there.delta.seq == known.seq else { return }
        try store.recordHistoryFork(HistoryForkRecord(
            replica: origin, seq: known.seq, after: there.delta.dependencies[origin], sides: [held, there.fingerprint.digest], held: held,
            remoteSide: there.fingerprint.digest))
    }

    /// After `forkBefore` named a fork of `origin` just past the batch applied here: the
    /// remote's batch under that batch's name, read to learn the other side.
    func recordForkAfterAppliedBatch(_ origin: ReplicaID) async throws(ConcordError) {
        guard let known = try store.appliedBatch(of: origin), known.fingerprint != nil,
            let sealed = try await objects.authenticBytes(at: RemoteLayout.batch(origin, seq: known.seq)),
            let there = try? objects.openFingerprintedBatch(sealed, origin: origin, seq: known.seq)
        else { return }
        try recordForkAtAppliedBatch(origin, known: known, there: there)
    }

    /// What heads say of forks: each side they know, and the side each head's replica held
    /// when it merged. While a fork known here lacks a side, every other replica's head is
    /// read (one `get` each): a replica holding the other side says it in its head, whose
    /// name need not have moved. A fork this store did not know is recorded when it holds a
    /// side (the batch it applied last of that replica is the one at the fork's seq, or it
    /// sealed it itself), or holds neither and the head knows both.
    func learnForks(_ heads: inout Heads) async throws(ConcordError) {
        if try store.historyForks().contains(where: { !$0.merged && $0.sides.count < 2 }) {
            for (replica, seq) in heads.latest.sorted(by: { $0.key < $1.key })
            where replica != store.replicaID && heads.read[replica] == nil && !heads.unopened.contains(replica) {
                do throws(ConcordError) {
                    if let head = try await readHead(replica, seq: seq) { heads.read[replica] = head }
                } catch where Self.isDamage(error) {
                    continue
                }
            }
        }
        for (reader, head) in heads.read.sorted(by: { $0.key < $1.key }) where reader != store.replicaID {
            for note in head.forks ?? [] {
                guard let replica = ReplicaID(hex: note.replica), note.seq > 0 else { continue }
                let sides = Set(note.sides.compactMap { UInt64($0, radix: 16) })
                guard (1...2).contains(sides.count) else { continue }
                if let held = note.held.flatMap({ UInt64($0, radix: 16) }), let through = note.through, sides.count == 2, sides.contains(held) {
                    try store.recordHistoryForkHolder(HistoryForkHolder(holder: reader, held: held, through: through), of: replica, seq: note.seq)
                }
                if var record = try store.historyForks().first(where: { $0.replica == replica && $0.seq == note.seq }) {
                    guard !record.sides.isSuperset(of: sides), record.sides.union(sides).count <= 2 else { continue }
                    record.sides.formUnion(sides)
                    try store.recordHistoryFork(record)
                    continue
                }
                var held: UInt64?
                if replica == store.replicaID {
                    // This store is the forked replica itself: its own batch at that seq.
                    guard note.seq <= (try pushedSeq()), let own = try ownBatchFingerprint(seq: note.seq) else { continue }
                    held = own
                } else if let known = try store.appliedBatch(of: replica), known.seq == note.seq, let digest = known.fingerprint?.digest {
                    held = digest
                } else if (try store.appliedSeqs()[replica] ?? 0) < note.seq, sides.count == 2 {
                    held = nil
                } else {
                    continue  // applied past it, or through a snapshot: which side is not known here
                }
                var all = sides
                if let held { all.insert(held) }
                guard all.count <= 2 else { continue }
                try store.recordHistoryFork(HistoryForkRecord(replica: replica, seq: note.seq, after: note.after, sides: all, held: held))
            }
        }
        // The remote's batch at each fork's seq, read once: it tells the other side of a fork
        // named from an applied batch alone, and which side later batches of the replica on
        // the remote continue.
        for record in try store.historyForks() where record.remoteSide == nil && record.replica != store.replicaID {
            var updated = record
            let name = RemoteLayout.batch(record.replica, seq: record.seq)
            if let sealed = try await objects.authenticBytes(at: name), let there = try? objects.openFingerprintedBatch(sealed, origin: record.replica, seq: record.seq) {
                let digest = there.fingerprint.digest
                if record.sides.count == 1, !record.sides.contains(digest), record.held != nil { updated.sides.insert(digest) }
                updated.remoteSide = updated.sides.contains(digest) ? digest : 0
            } else {
                updated.remoteSide = 0
            }
            try store.recordHistoryFork(updated)
        }
    }

    // MARK: Merging

    /// Merges every fork whose two sides are known and that this store has not merged: a
    /// store holding the renamed side renames its state (once its own changes are sealed:
    /// returns true while one waits for that); the forked replica itself continues under a
    /// new id first. Each merge is reported once, `merged`.
    func mergeForks(into report: inout SyncReport) async throws(ConcordError) -> (merged: [HistoryForkRecord], waiting: Bool) {
        var merged: [HistoryForkRecord] = []
        var waiting = false
        for var record in try store.historyForks() where !record.merged {
            guard let renamed = record.renamed else { continue }
            let name = RemoteLayout.batch(record.replica, seq: record.seq)
            if record.replica == store.replicaID {
                throw ConcordError(.storeRestored, "the history of this replica forked at \(name): another copy of it sealed other contents under that name, so this store is an older copy of itself")
            }
            let rename = try forkRename(record)
            if record.held == renamed {
                guard !(try store.hasPendingChanges()) else {
                    waiting = true
                    continue
                }
                try store.renameForkedSide(rename, forkSeq: record.seq)
            }
            // The fresh id never writes: retired, like a restored copy's old id, so a snapshot
            // covering its batches is all anyone needs of it, and a head of it is announced
            // once one does (``republishWhatTheRemoteLost(_:into:)``).
            if try store.replicaFact(.retired, of: rename.to) == nil {
                try store.setReplicaFact(.retired, of: rename.to, clock.millisecondsSinceEpoch())
            }
            record.merged = true
            record.through = record.held == nil ? nil : try store.sealedSeq()
            try store.recordHistoryFork(record)
            merged.append(record)
            report.forks.removeAll { $0.replica == record.replica && $0.batch == name }
            let side = record.held == nil ? "this replica held neither side" : record.held == renamed ? "this replica held the renamed side and renamed what it holds" : "this replica held the side that keeps the name"
            report.forks.append(HistoryFork(
                replica: record.replica, batch: name,
                evidence: "merged: the side whose batch \(name) has the greater fingerprint continues as replica \(rename.to) past stamp \(record.after), the other keeps the name; \(side)",
                merged: true))
        }
        return (merged, waiting)
    }

    /// Applies, through `Delta.renaming`, the renamed side's batches the remote holds under
    /// the forked replica's names (from the fork's seq on), for each merged fork whose
    /// renamed side this store does not hold itself.
    func applyRenamedSides(_ heads: Heads, into report: inout SyncReport) async throws(ConcordError) {
        for record in try store.historyForks() where record.merged {
            guard let renamed = record.renamed, record.held != renamed, record.remoteSide == renamed else { continue }
            let rename = try forkRename(record)
            var seq = record.seq + (try store.appliedSeqs()[rename.to] ?? 0)
            while seq <= heads.reach(record.replica) {
                guard let sealed = try await objects.authenticBytes(at: RemoteLayout.batch(record.replica, seq: seq)),
                    let batch = try? objects.openFingerprintedBatch(sealed, origin: record.replica, seq: seq)
                else { break }
                if seq == record.seq {
                    guard batch.fingerprint.digest == renamed else { break }
                } else {
                    guard let previous = try store.appliedBatch(of: rename.to), previous.seq == seq - record.seq,
                        batch.delta.dependencies[record.replica] == previous.upTo
                    else { break }
                }
                guard try await apply(try batch.delta.renaming(rename, forkSeq: record.seq), fingerprint: batch.fingerprint, into: &report) == .applied else { break }
                seq += 1
            }
        }
    }

    /// The merged or decided forks (both sides known), for the pull to route by.
    func decidedForks() throws(ConcordError) -> [HistoryForkRecord] {
        try store.historyForks().filter { $0.sides.count == 2 }
    }

    /// Whether batch `seq` of `origin`, fingerprint `digest`, belongs to the renamed side of
    /// a decided fork: it is not applied under the forked replica's name (the renamed side
    /// reaches this store through `applyRenamedSides`, or a snapshot).
    static func isRenamedSide(_ origin: ReplicaID, seq: UInt64, digest: UInt64, forks: [HistoryForkRecord]) -> Bool {
        forks.contains { record in
            guard record.replica == origin, seq >= record.seq, let renamed = record.renamed else { return false }
            return seq == record.seq ? digest == renamed : record.remoteSide == renamed
        }
    }

    /// `delta` as this store applies it given the forks decided here: a batch of a third
    /// replica that depends on a forked replica past the common prefix, written before its
    /// writer merged (it names nothing of the fresh id), saw its writer's side — renamed when
    /// that was the renamed side. Nil while no head of its writer said which side it held:
    /// it waits, never applied over the wrong side.
    func forkSided(_ delta: Delta) throws(ConcordError) -> Delta? {
        var result = delta
        for record in try decidedForks() where delta.origin != record.replica && delta.origin != store.replicaID {
            let rename = try forkRename(record)
            guard delta.origin != rename.to, delta.dependencies[record.replica] > record.after, delta.dependencies[rename.to] == 0 else { continue }
            guard let holder = try store.historyForkHolders(of: record.replica, seq: record.seq).first(where: { $0.holder == delta.origin }) else { return nil }
            if holder.held == record.renamed, delta.seq <= holder.through { result = try result.renaming(rename, forkSeq: record.seq) }
        }
        return result
    }

    /// After merging: a snapshot, when this store holds a side the remote's batches no
    /// longer show (the others get it by joining the snapshot), and its head, which says
    /// which side it held.
    func publishMergedForks(_ merged: [HistoryForkRecord], mode: SyncMode, into report: inout SyncReport) async throws(ConcordError) {
        guard !merged.isEmpty, mode != .pullOnly else { return }
        if merged.contains(where: { $0.held != nil && $0.held != $0.remoteSide }) {
            var written = false
            if !(try store.hasPendingChanges()) { written = try await snapshotUnderANewName() != nil }
            if !written { try store.setSyncState(.republishPending, true) }
        }
        _ = try await refreshHead()
    }
}
