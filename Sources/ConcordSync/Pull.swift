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
        // Per origin, fetch in seq order; a batch not there yet (or unreadable) stops that
        // origin for this sync — later batches could not be applied before it anyway.
        var pending: [ReplicaID: [Delta]] = [:]
        var blocked: Set<ReplicaID> = []
        var bytes: UInt64 = 0
        for (index, item) in wanted.enumerated() where !blocked.contains(item.replica) {
            progress?(SyncProgress(phase: .downloading, objectsDone: index, objectsTotal: wanted.count, bytesDone: bytes, bytesTotal: 0))
            let path = RemoteLayout.delta(item.replica, seq: item.seq)
            guard let sealed = try await remote.get(path) else {
                blocked.insert(item.replica)
                continue
            }
            bytes += UInt64(sealed.count)
            do throws(ConcordError) {
                let delta = try DeltaCodec.decode(try SealedObject.open(sealed, path: path, key: keys.batches))
                guard delta.origin == item.replica, delta.seq == item.seq else {
                    throw ConcordError(.malformed, "remote object \(path) holds delta \(delta.seq) of \(delta.origin): it was moved or swapped; run `concord doctor`")
                }
                pending[item.replica, default: []].append(delta)
            } catch {
                report.rejected.append("\(path): \(error.message)")
                blocked.insert(item.replica)
            }
        }
        // Apply in causal order: repeat over the origins until nothing more applies.
        var progressMade = true
        let total = pending.values.reduce(0) { $0 + $1.count }
        while progressMade {
            progressMade = false
            for replica in pending.keys.sorted() {
                while let delta = pending[replica]?.first {
                    progress?(SyncProgress(phase: .applying, objectsDone: report.applied, objectsTotal: total, bytesDone: bytes, bytesTotal: bytes))
                    guard try await apply(delta, into: &report) else { break }
                    pending[replica]!.removeFirst()
                    progressMade = true
                }
            }
        }
        report.waiting = pending.values.reduce(0) { $0 + $1.count }
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
