import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

extension SyncEngine {
    /// Fetches every batch past what the store has applied, then applies them in causal
    /// order, one transaction each, fetching the files they hold back.
    func pull(_ heads: Heads, into report: inout SyncReport, progress: (@Sendable (SyncProgress) -> Void)?) async throws(ConcordError) {
        try await catchUpOnClaims(heads, into: &report)
        let applied = try store.appliedSeqs()
        // Per origin, the range of seqs past what is applied, up to its newest head (which
        // ``listHeads()`` authenticated: a planted name claims nothing here).
        var next: [ReplicaID: UInt64] = [:]
        var last: [ReplicaID: UInt64] = [:]
        // The progress total counts only what authenticated heads announce: a claim whose
        // head did not open is a bound to look up to, not a count, so it makes the total
        // unknown (nil).
        var total: Int? = 0
        for replica in Set(heads.latest.keys).union(heads.unconfirmed.keys) where replica != store.replicaID {
            let latest = heads.reach(replica)
            let have = applied[replica] ?? 0
            guard latest > have else { continue }
            next[replica] = have + 1
            last[replica] = latest
            let announced = heads.latest[replica] ?? 0
            if latest > announced { total = nil }
            if let sum = total {
                let (added, overflow) = sum.addingReportingOverflow(Int(clamping: latest - have))
                total = overflow ? nil : added
            }
        }
        guard !next.isEmpty else { return }
        // Per origin, fetch in seq order and apply as we go; an origin whose next batch cannot
        // apply yet (its dependencies are another origin's later batches) waits, holding just
        // that one batch, while the others advance. Memory stays at one batch per origin.
        var waiting: [ReplicaID: Delta] = [:]
        // The fingerprint of each origin's batch in hand (fetched, or waiting).
        var fingerprints: [ReplicaID: BatchFingerprint] = [:]
        var prefetch = BatchPrefetch(objects: objects, window: requestsInFlight)
        defer { prefetch.cancelAll() }
        var stopped: Set<ReplicaID> = []
        var caughtUp: Set<ReplicaID> = []
        // Forks whose two sides are known: a renamed side's batch is not applied under the
        // forked replica's name.
        let forks = try decidedForks()
        var bytes: UInt64 = 0
        var done = 0
        var progressMade = true
        var order = next.keys.sorted()
        // Origins no head leads to, walked by their batch names because a batch waits on them.
        var walkedUnannounced: Set<ReplicaID> = []
        while progressMade {
            progressMade = false
            for (position, replica) in order.enumerated() where !stopped.contains(replica) {
                while next[replica]! <= last[replica]! {
                    let delta: Delta
                    if let held = waiting[replica] {
                        delta = held
                    } else {
                        let seq = next[replica]!
                        progress?(SyncProgress(phase: .downloading, objectsDone: done, objectsTotal: total, bytesDone: bytes, bytesTotal: 0))
                        let path = RemoteLayout.batch(replica, seq: seq)
                        let fetched: [UInt8]?
                        do throws(ConcordError) {
                            // The origins after this one, as this pass will visit them: as many
                            // as the window can use (all of them would make a pull over n
                            // origins cost n² here).
                            let upcoming = Array(order[(position + 1)...].lazy.compactMap { other -> (replica: ReplicaID, seqs: ClosedRange<UInt64>)? in
                                guard !stopped.contains(other), waiting[other] == nil, let from = next[other], let to = last[other], from <= to else { return nil }
                                return (other, from...to)
                            }.prefix(requestsInFlight))
                            fetched = try await prefetch.batch(replica, seq, last: last[replica]!, upcoming: upcoming)
                        } catch where Self.isDamage(error) {
                            // Not a readable object (too large, not a file): skipped, reported.
                            report.rejected.append("\(path): \(error.message)")
                            stopped.insert(replica)
                            break
                        }
                        // A batch that does not open (torn or tampered) counts as not there.
                        var opened: Delta?
                        if let sealed = fetched {
                            bytes += UInt64(sealed.count)
                            do throws(ConcordError) {
                                let batch = try objects.openFingerprintedBatch(sealed, origin: replica, seq: seq)
                                if !Self.isRenamedSide(replica, seq: seq, digest: batch.fingerprint.digest, forks: forks) {
                                    opened = batch.delta
                                    fingerprints[replica] = batch.fingerprint
                                }
                            } catch {
                                report.rejected.append("\(path): \(error.message)")
                            }
                        }
                        guard let opened else {
                            // Not there yet — or compacted away: then a snapshot of its
                            // origin covers it, and joining that catches up. (Past what an
                            // authenticated head says, a missing batch just ends the walk.)
                            if seq <= heads.latest[replica] ?? 0, !caughtUp.contains(replica), try await catchUp(origin: replica, seq: seq, into: &report) {
                                caughtUp.insert(replica)
                                try advancePastSnapshot(&next, &waiting)
                                progressMade = true
                                continue
                            }
                            stopped.insert(replica)
                            break
                        }
                        delta = opened
                    }
                    progress?(SyncProgress(phase: .applying, objectsDone: done, objectsTotal: total, bytesDone: bytes, bytesTotal: 0))
                    let step = try await apply(delta, fingerprint: fingerprints[replica], into: &report)
                    if step == .forked {
                        // Its history forked before this batch: nothing past the fork applies.
                        waiting[replica] = nil
                        stopped.insert(replica)
                        break
                    }
                    // A file that is not there may be gone for good (swept once every
                    // reference but this old batch's was gone): a snapshot covering the
                    // batch has every file it references, and joining it catches up.
                    if step == .missingFile, !caughtUp.contains(replica), try await catchUp(origin: replica, seq: delta.seq, into: &report) {
                        caughtUp.insert(replica)
                        try advancePastSnapshot(&next, &waiting)
                        progressMade = true
                        continue
                    }
                    guard step == .applied else {
                        // Another replica saw changes of this replica that this store never
                        // made: it is an older copy of itself (restored from a backup), even
                        // when its own head is unreadable and it has nothing to push.
                        let own = delta.dependencies[store.replicaID]
                        if step == .notReady, own > (try store.versionVector())[store.replicaID] {
                            try noteOwnFork(dependedOn: own, by: delta, into: &report)
                            throw ConcordError(.storeRestored, "batch \(RemoteLayout.batch(replica, seq: delta.seq)) depends on changes of this replica (up to stamp \(own)) that this store never made: it is an older copy of itself")
                        }
                        waiting[replica] = delta
                        break
                    }
                    waiting[replica] = nil
                    next[replica]! += 1
                    done += 1
                    progressMade = true
                }
            }
            // Every origin is stuck, and some batch waits for another origin's changes that no
            // listed head leads to, or whose walk stopped (its writer is gone, or its head or
            // batch is unreadable): a snapshot that covers them lets it apply.
            if !progressMade, !waiting.isEmpty {
                let vector = try store.versionVector()
                let applied = try store.appliedSeqs()
                for (_, delta) in waiting.sorted(by: { $0.key < $1.key }) {
                    for (origin, hlc) in delta.dependencies.entries
                    where vector[origin] < hlc && (next[origin] == nil || stopped.contains(origin)) && !caughtUp.contains(origin) {
                        if try await catchUp(origin: origin, seq: (applied[origin] ?? 0) + 1, into: &report) {
                            caughtUp.insert(origin)
                            stopped.remove(origin)  // its walk goes on past the snapshot
                            try advancePastSnapshot(&next, &waiting)
                            progressMade = true
                        } else if next[origin] == nil, walkedUnannounced.insert(origin).inserted {
                            // No head leads to it — deleted, or its replica retired and the
                            // head lost — and no snapshot covers it: its batches may still be
                            // there under their names, each authenticated as it is opened.
                            next[origin] = (applied[origin] ?? 0) + 1
                            last[origin] = UInt64.max - 1
                            order = next.keys.sorted()
                            progressMade = true
                        }
                    }
                    if progressMade { break }
                }
            }
        }
        report.waiting = waiting.count
    }

    /// Batches another replica's head says it applied, past any head of their origin: the
    /// remote lost them (rolled back, or the origin's head deleted) and a replica that held
    /// them published them again as a snapshot. Joining one that covers them catches up, so
    /// no replica waits for a batch only a head it cannot read would announce.
    func catchUpOnClaims(_ heads: Heads, into report: inout SyncReport) async throws(ConcordError) {
        let applied = try store.appliedSeqs()
        var claimed: [ReplicaID: UInt64] = [:]
        for (reader, head) in heads.read where reader != store.replicaID {
            for (origin, seq) in Head.replicaKeyed(head.applied) where origin != store.replicaID && origin != reader {
                if seq > max(applied[origin] ?? 0, heads.reach(origin)) { claimed[origin] = max(claimed[origin] ?? 0, seq) }
            }
        }
        var joined = false
        for (origin, _) in claimed.sorted(by: { $0.key < $1.key }) {
            // One join may cover several origins: only those still behind try again.
            if joined, (try store.appliedSeqs()[origin] ?? 0) >= claimed[origin]! { continue }
            if try await catchUp(origin: origin, seq: (applied[origin] ?? 0) + 1, into: &report) { joined = true }
        }
    }

    /// After joining a snapshot: every origin continues after what is now applied, and
    /// batches held that the snapshot covers are dropped.
    private func advancePastSnapshot(_ next: inout [ReplicaID: UInt64], _ waiting: inout [ReplicaID: Delta]) throws(ConcordError) {
        let applied = try store.appliedSeqs()
        for origin in next.keys { next[origin] = max(next[origin]!, (applied[origin] ?? 0) + 1) }
        waiting = waiting.filter { $0.value.seq >= next[$0.key]! }
    }

    enum ApplyStep { case applied, notReady, missingFile, forked }

    /// Applies one delta, fetching the files it needs first; or says why it must wait, or
    /// that it belongs to another history of its origin than the batches applied here
    /// (``HistoryFork``, reported, not applied).
    func apply(_ delta: Delta, fingerprint: BatchFingerprint? = nil, into report: inout SyncReport) async throws(ConcordError) -> ApplyStep {
        if let fork = try forkBefore(delta) {
            // Named once: a fork merged here stops the batches past it without a report.
            if let known = try store.appliedBatch(of: delta.origin), !(try mergedFork(delta.origin, seq: known.seq)) {
                if !report.forks.contains(fork) { report.forks.append(fork) }
                try await recordForkAfterAppliedBatch(delta.origin)
            }
            return .forked
        }
        // A batch that saw one side of a forked history, applied as that side is named here.
        guard let delta = try forkSided(delta) else { return .notReady }
        // Another replica depends on this one up to the end of a batch this one sealed. Any
        // other stamp is the end of a batch this store never sealed: it is an older copy of
        // itself, even where its own later writes put its stamp past that end (applying
        // would let it think it had seen changes it never applied).
        let own = delta.dependencies[store.replicaID]
        if delta.origin != store.replicaID, !(try store.sealedABatchEnding(at: own)) {
            try noteOwnFork(dependedOn: own, by: delta, into: &report)
            throw ConcordError(.storeRestored, "batch \(RemoteLayout.batch(delta.origin, seq: delta.seq)) depends on a batch of this replica ending at stamp \(own), which this store never sealed: it is an older copy of itself")
        }
        var result: StoreApplyResult
        do {
            result = try store.apply(delta, fingerprint: fingerprint)
        } catch where error.code == .notReady {
            return .notReady
        }
        if case let .heldBack(missing) = result {
            if try await fetchFiles(missing, of: delta.fileReferences, into: &report) != nil { return .missingFile }
            result = try store.apply(delta, fingerprint: fingerprint)
            if case .heldBack = result { return .missingFile }
        }
        if result == .applied {
            report.applied += 1
            let now = clock.millisecondsSinceEpoch()
            if let ahead = HybridLogicalClock.skew(of: delta.upTo, physicalMillis: now, maxDrift: maxClockDrift) {
                report.skews.append(ClockSkew(replica: delta.origin, aheadBy: ahead))
                let previous = try store.replicaFact(.clockSkew, of: delta.origin) ?? 0
                try store.setReplicaFact(.clockSkew, of: delta.origin, max(previous, ahead))
            }
        }
        return .applied
    }

    /// Joins the newest snapshot — of any replica — that covers batch `seq` of `origin`, for
    /// a replica whose next batch of it was compacted away. Returns whether it joined one.
    func catchUp(origin: ReplicaID, seq: UInt64, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        for listed in try await listSnapshots() {
            // What a snapshot read before covers is known without fetching it again.
            if let known = try knownCoverage(of: listed.path), (known[origin] ?? 0) < seq { continue }
            guard let snapshot = try await fetchSnapshot(listed.path, into: &report), (snapshot.appliedSeqs[origin] ?? 0) >= seq else { continue }
            if try await join(snapshot, path: listed.path, into: &report) { return true }
        }
        return false
    }
}
