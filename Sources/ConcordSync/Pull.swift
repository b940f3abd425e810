import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

extension SyncEngine {
    /// Fetches every batch past what the store has applied, then applies them in causal
    /// order, one transaction each, fetching the files they hold back.
    func pull(_ heads: Heads, into report: inout SyncReport, progress: (@Sendable (SyncProgress) -> Void)?) async throws(ConcordError) {
        let applied = try store.appliedSeqs()
        var wanted: [(replica: ReplicaID, seq: UInt64)] = []
        for (replica, latest) in heads.latest.sorted(by: { $0.key < $1.key }) where replica != store.replicaID {
            let have = applied[replica] ?? 0
            if latest > have { wanted += (have + 1...latest).map { (replica, $0) } }
        }
        guard !wanted.isEmpty else { return }
        // Per origin, fetch in seq order and apply as we go; an origin whose next batch cannot
        // apply yet (its dependencies are another origin's later batches) waits, holding just
        // that one batch, while the others advance. Memory stays at one batch per origin.
        var next: [ReplicaID: UInt64] = [:]
        var last: [ReplicaID: UInt64] = [:]
        for item in wanted {
            next[item.replica] = min(next[item.replica] ?? .max, item.seq)
            last[item.replica] = max(last[item.replica] ?? 0, item.seq)
        }
        var waiting: [ReplicaID: Delta] = [:]
        var stopped: Set<ReplicaID> = []
        var caughtUp: Set<ReplicaID> = []
        var bytes: UInt64 = 0
        var done = 0
        var progressMade = true
        while progressMade {
            progressMade = false
            for replica in next.keys.sorted() where !stopped.contains(replica) {
                while next[replica]! <= last[replica]! {
                    let delta: Delta
                    if let held = waiting[replica] {
                        delta = held
                    } else {
                        let seq = next[replica]!
                        progress?(SyncProgress(phase: .downloading, objectsDone: done, objectsTotal: wanted.count, bytesDone: bytes, bytesTotal: 0))
                        let path = RemoteLayout.delta(replica, seq: seq)
                        guard let sealed = try await remote.get(path) else {
                            // Not there yet — or compacted away: then a snapshot of its
                            // origin covers it, and joining that catches up.
                            if !caughtUp.contains(replica), try await catchUp(origin: replica, seq: seq, into: &report) {
                                caughtUp.insert(replica)
                                let applied = try store.appliedSeqs()
                                for origin in next.keys { next[origin] = max(next[origin]!, (applied[origin] ?? 0) + 1) }
                                waiting = waiting.filter { $0.value.seq >= next[$0.key]! }
                                progressMade = true
                                continue
                            }
                            stopped.insert(replica)
                            break
                        }
                        bytes += UInt64(sealed.count)
                        do throws(ConcordError) {
                            delta = try DeltaCodec.decode(try SealedObject.open(sealed, path: path, key: keys.batches))
                            guard delta.origin == replica, delta.seq == seq else {
                                throw ConcordError(.malformed, "remote object \(path) holds delta \(delta.seq) of \(delta.origin): it was moved or swapped; run `concord doctor`")
                            }
                        } catch {
                            report.rejected.append("\(path): \(error.message)")
                            stopped.insert(replica)
                            break
                        }
                    }
                    progress?(SyncProgress(phase: .applying, objectsDone: done, objectsTotal: wanted.count, bytesDone: bytes, bytesTotal: 0))
                    guard try await apply(delta, into: &report) else {
                        waiting[replica] = delta
                        break
                    }
                    waiting[replica] = nil
                    next[replica]! += 1
                    done += 1
                    progressMade = true
                }
            }
        }
        report.waiting = waiting.count
    }

    /// Applies one delta, fetching the files it needs first. False when it must wait.
    func apply(_ delta: Delta, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        var result: StoreApplyResult
        do {
            result = try store.apply(delta)
        } catch where error.code == .notReady {
            return false
        }
        if case let .heldBack(missing) = result {
            for hash in missing {
                let path = BlobName.remotePath(for: hash, key: keys.blobNames)
                do {
                    guard try await BlobTransfer.download(hash, into: store.blobs, from: remote, path: path, key: keys.blobContents) else {
                        return false  // not uploaded yet
                    }
                    report.filesFetched += 1
                } catch where error.code == .authenticationFailed || error.code == .hashMismatch || error.code == .unsupportedVersion {
                    report.rejected.append("\(path): \(error.message)")
                    return false
                }
            }
            result = try store.apply(delta)
            if case .heldBack = result { return false }
        }
        if result == .applied {
            report.applied += 1
            let now = clock.millisecondsSinceEpoch()
            if let ahead = HybridLogicalClock.skew(of: delta.upTo, physicalMillis: now, maxDrift: maxClockDrift) {
                report.skews.append(ClockSkew(replica: delta.origin, aheadBy: ahead))
                let previous = UInt64(try store.syncValue("skew.\(delta.origin)") ?? "0") ?? 0
                try store.setSyncValue("skew.\(delta.origin)", String(max(previous, ahead)))
            }
        }
        return true
    }
}
