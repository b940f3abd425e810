import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

extension SyncEngine {
    // MARK: Repair

    /// Repairs, from this replica, what is safe: files it holds, its own batches (the bytes
    /// it sealed), its head, its superseded heads. Each repair is checked before it counts.
    func repairFindings(_ scan: inout DoctorScan) async throws(ConcordError) {
        let me = store.replicaID
        var local: [String: ContentHash] = [:]
        for hash in try store.blobs.all() { local[BlobName.keyedName(for: hash, key: keys.blobNames)] = hash }
        var intact = scan.blobs.subtracting(scan.damagedBlobs.keys)

        // 1. Files it holds, missing or damaged.
        for index in scan.report.findings.indices {
            let finding = scan.report.findings[index]
            guard case let .blob(keyed)? = RemoteLayout.parse(finding.path),
                  finding.kind == .missingFile || (finding.isProblem && scan.damagedBlobs[keyed] != nil) else { continue }
            guard let hash = local[keyed] else {
                scan.report.findings[index].repair = "cannot repair here: this replica does not hold the file; \(finding.action)"
                continue
            }
            await attempt(&scan, index) { () async throws(ConcordError) -> String? in
                _ = try await BlobTransfer.upload(hash, from: store.blobs, to: remote, path: finding.path, key: keys.blobContents)
                guard case .intact = try await Self.checkBlob(remote, keyedName: keyed, keys: keys) else { return nil }
                return "re-uploaded file \(hash.hex) from this replica's files"
            }
            if scan.report.findings[index].repaired { intact.insert(keyed) }
        }

        // 2. Its own batches: the exact bytes it sealed, after the files they reference. A
        //    batch whose bytes it forgot (compacted) is published again in a snapshot.
        var forgotten: [Int] = []
        for index in scan.report.findings.indices {
            let finding = scan.report.findings[index]
            guard finding.isProblem, finding.kind != .unannouncedBatch, finding.kind != .planted,
                  case let .batch(replica, seq)? = RemoteLayout.parse(finding.path), replica == me else { continue }
            guard let plaintext = try store.sealedBytes(seq: seq) else {
                forgotten.append(index)
                continue
            }
            let present = intact
            await attempt(&scan, index) { () async throws(ConcordError) -> String? in
                let delta = try DeltaCodec.decode(plaintext)
                for (hash, _) in Self.distinctFiles(delta.fileReferences) where store.blobs.contains(hash) {
                    let keyed = BlobName.keyedName(for: hash, key: keys.blobNames)
                    if present.contains(keyed) { continue }
                    if case .intact = try await Self.checkBlob(remote, keyedName: keyed, keys: keys) { continue }
                    try await uploadFile(hash)
                }
                try await writes.putBatch(plaintext, of: me, seq: seq)
                guard try await objects.batch(me, seq: seq) != nil else { return nil }
                return "re-uploaded the bytes this replica sealed"
            }
            if scan.report.findings[index].repaired {
                scan.deltas[me, default: []].insert(seq)
                scan.readDeltas[me, default: []].insert(seq)
            }
        }

        if !forgotten.isEmpty {
            // Read back, as every repair is.
            var unused = SyncReport()
            if let path = try await snapshotUnderANewName(), let snapshot = try await fetchSnapshot(path, into: &unused), (try? snapshot.records.check()) != nil {
                for index in forgotten {
                    scan.report.findings[index].repair = "published again in snapshot \(path) (this replica no longer holds the batch's bytes)"
                    scan.report.findings[index].repaired = true
                }
            } else {
                try store.setSyncState(.republishPending, true)
                for index in forgotten {
                    scan.report.findings[index].repair = "this replica no longer holds the batch's bytes; the snapshot that publishes it again comes with its next batch (its snapshot name for this seq is taken)"
                }
            }
        }

        // 3. Its head: rewritten when missing, unreadable, behind its batches, or stale.
        let sealed = try store.sealedSeq()
        let target = max(try pushedSeq(), scan.readDeltas[me]?.filter { $0 <= sealed }.max() ?? 0)
        let own = scan.heads[me]?.max()
        let seq = max(target, own.map { $0 <= sealed ? $0 : 0 } ?? 0)
        let path = RemoteLayout.head(me, seq: seq)
        let ownPath = own.map { RemoteLayout.head(me, seq: $0) }
        var fixedByHead: [Int] = []
        var needed = (own ?? 0) < target
        for (index, finding) in scan.report.findings.enumerated() where !finding.repaired {
            if finding.kind == .remoteEmptied && finding.path.isEmpty {
                needed = true
            } else if finding.kind == .missingHead || finding.kind == .staleReplica || finding.kind == .remoteRolledBack, finding.replica == me {
                needed = true
                fixedByHead.append(index)
            } else if finding.kind == .unannouncedBatch, finding.replica == me {
                needed = true
                if case let .batch(_, batch)? = RemoteLayout.parse(finding.path), batch <= seq { fixedByHead.append(index) }
            } else if finding.isProblem, finding.path == ownPath || finding.path == path {
                // A damaged head at the name about to be written is replaced by it.
                needed = true
                if finding.path == path { fixedByHead.append(index) }
            }
        }
        var newest = own.flatMap { scan.readHeads[me]?[$0] != nil ? $0 : nil }
        if needed {
            var outcome = "repair failed: the head was written but did not read back intact"
            do throws(ConcordError) {
                try await putHead(seq: seq)
                if try await readHead(me, seq: seq) != nil {
                    outcome = "wrote this replica's head for batch \(seq)"
                    newest = seq
                    scan.heads[me, default: []].insert(seq)
                    for index in fixedByHead { scan.report.findings[index].repaired = true }
                }
            } catch {
                outcome = "repair failed: \(Self.clean(error.message))"
            }
            for index in fixedByHead { scan.report.findings[index].repair = outcome }
        }

        // 4. Its superseded heads, once its newest one is readable.
        if let newest {
            for old in (scan.heads[me] ?? []).sorted() where old < newest {
                let path = RemoteLayout.head(me, seq: old)
                var outcome = "repair failed: the delete did not take effect"
                var deleted = false
                do throws(ConcordError) {
                    try await writes.delete(path)
                    if try await objects.fetch(path) == nil {
                        deleted = true
                        outcome = "deleted this replica's superseded head (its newest is \(newest))"
                        scan.heads[me]?.remove(old)
                    }
                } catch {
                    outcome = "repair failed: \(Self.clean(error.message))"
                }
                for index in scan.report.findings.indices where scan.report.findings[index].path == path {
                    scan.report.findings[index].repaired = deleted
                    scan.report.findings[index].repair = outcome
                }
            }
        }

        // 5. Others' batches it applied that the remote lost: a snapshot holds them again.
        let lostOthers = scan.report.findings.indices.filter {
            scan.report.findings[$0].kind == .remoteRolledBack && scan.report.findings[$0].replica != me && !scan.report.findings[$0].repaired
        }
        if !lostOthers.isEmpty {
            var outcome: String
            var done = false
            do throws(ConcordError) {
                if let path = try await snapshotUnderANewName() {
                    outcome = "published snapshot \(path), which holds them"
                    done = true
                } else {
                    try store.setSyncState(.republishPending, true)
                    outcome = "not yet: this replica's snapshot name for its current batch is taken, so its next change publishes the snapshot"
                }
            } catch {
                outcome = "repair failed: \(Self.clean(error.message))"
            }
            for index in lostOthers {
                scan.report.findings[index].repaired = done
                scan.report.findings[index].repair = outcome
            }
        }

        // 6. An emptied remote is repaired, from here, once this replica's objects are back.
        let ownOpen = scan.report.findings.contains { $0.isProblem && !$0.repaired && $0.replica == me }
        for index in scan.report.findings.indices where scan.report.findings[index].kind == .remoteEmptied && scan.report.findings[index].path.isEmpty {
            if !ownOpen && newest != nil {
                scan.report.findings[index].repaired = true
                scan.report.findings[index].repair = "re-uploaded this replica's batches and head; every other replica must run `concord doctor --repair` too"
            }
        }
    }

    /// Runs one repair; it counts only when `body` returns what it did (after checking it).
    private func attempt(_ scan: inout DoctorScan, _ index: Int, _ body: () async throws(ConcordError) -> String?) async {
        do throws(ConcordError) {
            if let done = try await body() {
                scan.report.findings[index].repaired = true
                scan.report.findings[index].repair = done
            } else {
                scan.report.findings[index].repair = "repair failed: the object was written but did not read back intact"
            }
        } catch {
            scan.report.findings[index].repair = "repair failed: \(Self.clean(error.message))"
        }
    }
}
