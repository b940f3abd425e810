import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

extension SyncEngine {
    /// Checks every object on the remote and the fleet they describe (docs/ARCHITECTURE.md §4):
    /// every head, batch and snapshot must authenticate and parse, every file must decrypt
    /// to the content its name stands for; each replica's batches must run without gaps
    /// from its newest readable snapshot to its newest head; every file a batch or
    /// snapshot references must be there. Also reports files nothing references, heads
    /// left behind, replicas silent past ``retention`` and clocks running ahead.
    ///
    /// Listings are only hints: they may be stale, incomplete or repeated, so an object is
    /// counted once, and nothing is reported missing before a `get` confirms it.
    ///
    /// With `repair`, fixes what is safe from this replica, then reads each repair back: it
    /// re-uploads its own missing or damaged batches (the exact bytes it sealed, so a
    /// replica that already applied them sees nothing new), any file it holds locally,
    /// rewrites its head (also to announce its unannounced batches, or to refresh a stale
    /// one), and deletes its own superseded heads. It deletes nothing else: a damaged
    /// object stays until its writer replaces it. What only another replica holds is
    /// reported with that replica's name (``DoctorFinding/action``).
    ///
    /// - Throws: `storeMismatch` when this local store synced with another remote store;
    ///   whatever the remote throws when it fails (nothing is reported from a partial run).
    public func doctor(repair: Bool = false) async throws(ConcordError) -> DoctorReport {
        let report: DoctorReport
        do throws(ConcordError) {
            report = try await examineRemote(repair: repair)
        } catch where error.code == .membershipUnknown {
            // The store was shared since this replica last read its members: read them first.
            var members = SyncReport()
            try await refreshMembership(into: &members, checkRemoval: false)
            report = try await examineRemote(repair: repair)
        }
        log(report)
        return report
    }

    private func examineRemote(repair: Bool) async throws(ConcordError) -> DoctorReport {
        var scan = DoctorScan()
        scan.me = store.replicaID
        if let recorded = try Self.remoteStoreID(in: store), recorded != storeID.hex {
            throw ConcordError(.storeMismatch, "this local store synced with remote store \(recorded), not \(storeID.hex); nothing was checked")
        }
        // A shared store: its members first, so that every object is judged by them
        // (what is not signed by a member who could write it is `unauthentic`).
        var membersRead = SyncReport()
        try await refreshMembershipIfShared(into: &membersRead, checkRemoval: false)
        for rejected in membersRead.rejected {
            let path = String(rejected.prefix { $0 != ":" })
            scan.report.findings.append(DoctorFinding(path: path, kind: .unauthentic, replica: nil, message: rejected, action: "remove \(path) by hand: it is not an owner's membership log"))
        }
        // 1. concord.json: without it (or with another store's) nothing else can be judged.
        var manifestBytes = try await remote.getManifest()
        if manifestBytes.map(Self.isDamagedManifest) ?? true, let kept = try Self.keptManifest(in: store), kept.storeID == storeID {
            // Deleted or damaged, and this replica keeps the copy it unlocked: put back on repair.
            let what = manifestBytes == nil ? "no concord.json (deleted?)" : "a damaged concord.json (torn, truncated or tampered)"
            var finding = DoctorFinding(
                path: RemoteLayout.manifestPath, kind: .missingManifest, replica: nil,
                message: "the remote holds \(what); this replica keeps the copy it unlocked, of this store",
                action: "`concord doctor --repair`, or any sync of this replica, puts it back")
            if repair, let restored = try await Self.restoreManifest(remote, from: store) {
                finding.repaired = true
                finding.repair = "put back the copy of concord.json this replica keeps"
                manifestBytes = restored.jsonBytes()
            }
            scan.report.findings.append(finding)
            if !finding.repaired { return scan.report }
        }
        guard let manifestBytes else {
            scan.add(
                .remoteEmptied, RemoteLayout.manifestPath, nil,
                "the remote holds no concord.json: it was emptied, or this is not the store's folder",
                "check the remote's location; if it was emptied, restore it from a backup, or create a new store (`concord remote set`) and sync every replica to it")
            return scan.report
        }
        scan.report.objects.manifest = 1
        do throws(ConcordError) {
            let manifest = try StoreManifest(json: manifestBytes)
            guard manifest.storeID == storeID else {
                scan.add(
                    .remoteEmptied, RemoteLayout.manifestPath, nil,
                    "the remote store was deleted and re-created (store id \(manifest.storeID.hex), expected \(storeID.hex)): none of its objects are this store's",
                    "nothing was checked or changed; sync with a new local store, or restore the old remote")
                return scan.report
            }
            scan.report.healthy += 1
        } catch {
            guard Self.isDamage(error) else { throw error }
            scan.add(
                Self.kind(of: error), RemoteLayout.manifestPath, nil, Self.clean(error.message),
                "replicas cannot unlock the store while it is unreadable: restore concord.json from a backup")
        }
        if let own = try store.name() { scan.names[store.replicaID] = own }

        // 2. What stands in the storage without being an object (planted links, FIFOs,
        //    devices, folders), then every listed object, once.
        for anomaly in try await remote.anomalies(prefix: "") {
            scan.blocked.append(anomaly.path)
            scan.add(
                .unreadable, anomaly.path, nil,
                "\(anomaly.path) is \(anomaly.kind), not what the store keeps there: Concord never follows, opens or deletes it, and skips everything behind it",
                "remove it from the store folder by hand (Concord never writes such a thing: someone planted it); its replica's next sync, or `concord doctor --repair` there, writes what belongs there")
        }
        let listing = try await doctorListing(sizes: &scan.listedSizes)
        try await examineKeyObjects(listing, &scan)
        for name in listing { try await examine(name, &scan) }
        // 3. Each replica's sequence of batches and heads; 4. files; 5. the fleet.
        try await checkSequences(&scan)
        try checkPlanted(&scan)
        try await checkFiles(&scan)
        try checkFleet(&scan)
        for fork in try await forksAtAppliedNames() {
            scan.add(
                .forkedHistory, fork.batch, fork.replica, fork.evidence + ": two copies of replica \(fork.replica) wrote under one name (a device restored from a backup while the storage was rolled back to the same moment)",
                "the writes of each copy past \(fork.batch) do not reach the replicas that applied the other's until the fork is merged: sync the replicas that hold each side (a restored device first), and see docs/ARCHITECTURE.md §4")
        }
        for fork in try store.historyForks() where fork.merged {
            let name = RemoteLayout.batch(fork.replica, seq: fork.seq)
            scan.add(
                .mergedHistoryFork, name, fork.replica,
                "two copies of replica \(fork.replica) wrote under \(name); this replica merged the two histories (one side continues as replica \(try forkRename(fork).to))",
                "nothing to do: both sides reach every replica that syncs")
        }
        if repair { try await repairFindings(&scan) }
        return scan.report
    }

    // MARK: Listing and checking objects

    /// The store's objects as listings show them, repeated listings merged: each prefix is
    /// listed until a round adds nothing new (two to four rounds), so one incomplete or
    /// stale listing hides less. What is still hidden is found by `get` where it matters.
    /// `sizes` gets each object's listed size, where the listing gives one.
    func doctorListing(sizes: inout [String: UInt64]) async throws(ConcordError) -> [RemoteLayout.Name] {
        var names: [String: RemoteLayout.Name] = [:]
        for round in 0..<4 {
            var added = false
            for prefix in [RemoteLayout.headsPrefix, RemoteLayout.replicasPrefix, RemoteLayout.snapshotsPrefix, RemoteLayout.blobsPrefix] {
                for object in try await remote.list(prefix: prefix) {
                    guard let name = RemoteLayout.parse(object.path), name != .manifest else { continue }
                    if let size = object.size { sizes[object.path] = max(sizes[object.path] ?? 0, size) }
                    if names.updateValue(name, forKey: object.path) == nil { added = true }
                }
            }
            if round > 0 && !added { break }
        }
        return names.sorted { $0.key < $1.key }.map(\.value)
    }

    /// Fetches and checks one object (once per doctor run); returns whether the remote
    /// holds it. A damaged object is recorded as a finding (files once their references are
    /// known) and never deleted.
    @discardableResult
    func examine(_ name: RemoteLayout.Name, _ scan: inout DoctorScan) async throws(ConcordError) -> Bool {
        let path = name.path
        if let found = scan.examined[path] { return found }
        var found = true
        var failure: ConcordError?
        switch name {
        case .manifest, .storeManifest, .memberLog, .grant, .keyObject, .announcement:
            return true
        case let .head(replica, seq):
            do throws(ConcordError) {
                if let head = try await readHead(replica, seq: seq) {
                    scan.readHeads[replica, default: [:]][seq] = head
                    if let device = head.device, replica != scan.me { scan.names[replica] = device }
                } else {
                    found = false
                }
            } catch {
                guard Self.isDamage(error) else { throw error }
                failure = error
            }
            if found {
                // A head counts only once it authenticates: a planted or copied name claims
                // nothing (it is reported as damaged below).
                if failure == nil { scan.heads[replica, default: []].insert(seq) }
                scan.report.objects.heads += 1
            }
        case let .batch(replica, seq):
            // An object that is not a readable file, or is too large, is damage too.
            do throws(ConcordError) {
                guard let sealed = try await objects.fetch(path) else {
                    found = false
                    break
                }
                scan.deltas[replica, default: []].insert(seq)
                scan.report.objects.batches += 1
                let delta = try objects.openBatch(sealed, origin: replica, seq: seq)
                scan.readDeltas[replica, default: []].insert(seq)
                for (hash, writer) in Self.distinctFiles(delta.fileReferences) {
                    scan.reference(BlobName.keyedName(for: hash, key: keys.blobNames), hash, writer, by: path)
                }
            } catch {
                guard Self.isDamage(error) else { throw error }
                if scan.deltas[replica, default: []].insert(seq).inserted { scan.report.objects.batches += 1 }
                failure = error
            }
        case let .snapshot(replica, seq):
            do throws(ConcordError) {
                guard let sealed = try await objects.fetch(path) else {
                    found = false
                    break
                }
                scan.snapshots[replica, default: []].insert(seq)
                scan.report.objects.snapshots += 1
                let snapshot = try objects.snapshotFiles(sealed, at: path)
                scan.readSnapshots[replica, default: []].insert(seq)
                // A snapshot covers the batches of every origin it contains, not just its writer's.
                scan.coverage.merge(snapshot.appliedSeqs, uniquingKeysWith: max)
                for (hash, writer) in Self.distinctFiles(snapshot.files) {
                    scan.reference(BlobName.keyedName(for: hash, key: keys.blobNames), hash, writer, by: path)
                }
            } catch {
                guard Self.isDamage(error) else { throw error }
                if scan.snapshots[replica, default: []].insert(seq).inserted { scan.report.objects.snapshots += 1 }
                failure = error
            }
        case let .blob(keyedName):
            let listed = scan.listedSizes[path] ?? .max
            switch try await Self.checkBlob(remote, keyedName: keyedName, keys: keys, limit: listed) {
            case .absent:
                found = false
            case .intact:
                scan.blobs.insert(keyedName)
            case let .damaged(error):
                scan.blobs.insert(keyedName)
                scan.damagedBlobs[keyedName] = error
            }
            if found { scan.report.objects.blobs += 1 }
        }
        scan.examined[path] = found
        if found {
            if let failure {
                scan.add(Self.kind(of: failure), path, name.replica, Self.clean(failure.message), damagedAction(name, scan))
            } else if case let .blob(keyedName) = name, scan.damagedBlobs[keyedName] != nil {
                // reported with its references, in checkFiles
            } else {
                scan.report.healthy += 1
            }
        }
        return found
    }

    // MARK: Sequences, files, fleet

    /// Per replica: batches from its newest readable snapshot to its newest seq, heads.
    func checkSequences(_ scan: inout DoctorScan) async throws(ConcordError) {
        let me = store.replicaID
        // What this replica knows of each replica's newest seq: what it pushed, applied, and
        // what every readable head says it applied. A listing cannot hide these.
        var known = try store.appliedSeqs()
        known[me] = max(known[me] ?? 0, try pushedSeq())
        for head in scan.readHeads.values.flatMap(\.values) {
            known.merge(Head.replicaKeyed(head.applied), uniquingKeysWith: max)
        }
        known = known.filter { $0.value > 0 }
        var held = try store.appliedSeqs()
        held[me] = try pushedSeq()
        let retired = Set(try store.replicaFacts(.retired).keys)
        let replicas = Set(scan.heads.keys).union(scan.deltas.keys).union(scan.snapshots.keys).union(known.keys)
        for replica in replicas.sorted() {
            // Only what authenticated counts: a name alone (a planted `…-ffffffffffffffff`)
            // claims nothing.
            var latest = max(
                scan.heads[replica]?.max() ?? 0, scan.readDeltas[replica]?.max() ?? 0, scan.readSnapshots[replica]?.max() ?? 0,
                known[replica] ?? 0)
            // Batches newer than any listing showed: walk forward while they are there.
            while latest < .max, try await examine(.batch(replica: replica, seq: latest + 1), &scan), scan.readDeltas[replica]?.contains(latest + 1) == true {
                latest += 1
            }
            if (scan.heads[replica]?.max() ?? 0) < latest || scan.heads[replica] == nil {
                try await examine(.head(replica: replica, seq: latest), &scan)
            }
            guard latest > 0 else { continue }
            // Gaps: every batch after the newest readable snapshot must be there.
            var missing: [UInt64] = []
            let from = (scan.coverage[replica] ?? 0) + 1
            if from <= latest {
                for seq in from...latest where !(scan.deltas[replica]?.contains(seq) ?? false) {
                    if try await examine(.batch(replica: replica, seq: seq), &scan) == false { missing.append(seq) }
                }
            }
            if let top = missing.last {
                // Compacted away? A snapshot covering it has a seq in top…latest; a listing
                // may not show it yet.
                var seq = latest
                while seq >= top && (scan.coverage[replica] ?? 0) < top {
                    try await examine(.snapshot(replica: replica, seq: seq), &scan)
                    seq -= 1
                }
                missing.removeAll { $0 <= scan.coverage[replica] ?? 0 }
            }
            // The remote went back in time: batches this replica pushed or applied are gone
            // and nothing covers them, or its own newest head is behind what it pushed.
            let mine = held[replica] ?? 0
            let newestHead = scan.heads[replica]?.max() ?? 0
            let lostHere = missing.filter { $0 <= mine }
            if !retired.contains(replica), !(scan.heads.isEmpty && scan.deltas.isEmpty && scan.snapshots.isEmpty),
               replica == me ? (mine > newestHead && scan.heads[me] != nil) : !lostHere.isEmpty {
                scan.add(
                    .remoteRolledBack, RemoteLayout.head(replica, seq: mine), replica,
                    replica == me
                        ? "this replica pushed up to batch \(mine), but its newest head on the remote names \(newestHead): the remote went back in time (restored from an older copy, rolled back, or objects deleted)"
                        : "batch\(lostHere.count == 1 ? "" : "es") \(lostHere.map(String.init).joined(separator: ", ")) of replica \(scan.who(replica)), which this replica applied, \(lostHere.count == 1 ? "is" : "are") gone and no snapshot covers \(lostHere.count == 1 ? "it" : "them"): the remote went back in time (restored from an older copy, rolled back, or objects deleted)",
                    replica == me
                        ? "`concord sync` or `concord doctor --repair` here publishes this replica's batches and head again"
                        : "`concord sync` or `concord doctor --repair` here publishes a snapshot holding them")
            }
            for seq in missing {
                scan.add(
                    .missingBatch, RemoteLayout.batch(replica, seq: seq), replica,
                    "batch \(seq) of replica \(scan.who(replica)) is missing (its newest is \(latest)) and no snapshot of it covers it: replicas that have not applied it cannot apply anything newer from it",
                    replica == me ? "`concord doctor --repair` here re-uploads the bytes this replica sealed" : "only \(scan.who(replica)) holds it: run `concord doctor --repair` there")
            }
            // Heads: one, naming the newest batch.
            guard let newest = scan.heads[replica]?.max() else {
                // A retired replica writes no head again: a snapshot covering all its batches
                // is all anyone needs of it.
                let isRetired = retired.contains(replica)
                if replica != me, isRetired, (scan.coverage[replica] ?? 0) >= latest { continue }
                scan.add(
                    .missingHead, RemoteLayout.head(replica, seq: latest), replica,
                    "replica \(scan.who(replica)) has batches up to \(latest) but no head: the others do not see its changes",
                    replica == me ? "`concord doctor --repair` here writes this replica's head; its next sync does too"
                        : isRetired ? "\(scan.who(replica)) is retired and writes no head again: `concord sync` on a replica that applied its batches publishes a snapshot covering them"
                        : "\(scan.who(replica))'s next sync writes it, or run `concord doctor --repair` there")
                continue
            }
            for seq in (scan.deltas[replica] ?? []).sorted() where seq > newest && !scan.hasFinding(at: RemoteLayout.batch(replica, seq: seq)) {
                scan.add(
                    .unannouncedBatch, RemoteLayout.batch(replica, seq: seq), replica,
                    "batch \(seq) of replica \(scan.who(replica)) is beyond its newest head (\(newest)): the others do not see it yet — a push stopped between the batch and its head",
                    replica == me ? "`concord doctor --repair` here writes the head; this replica's next sync does too" : "\(scan.who(replica))'s next sync announces it, or run `concord doctor --repair` there")
            }
            for seq in (scan.heads[replica] ?? []).sorted() where seq < newest {
                scan.add(
                    .staleHead, RemoteLayout.head(replica, seq: seq), replica,
                    "an older head of replica \(scan.who(replica)) (its newest is \(newest)) was not deleted: harmless, but a delete was lost",
                    replica == me ? "`concord doctor --repair` here deletes it" : "\(scan.who(replica)) deletes it with its next push, or run `concord doctor --repair` there")
            }
        }
        if !known.isEmpty, scan.heads.isEmpty, scan.deltas.isEmpty, scan.snapshots.isEmpty {
            let pushed = try pushedSeq()
            scan.add(
                .remoteEmptied, "", nil,
                "the remote holds no head, batch or snapshot, though this replica pushed \(pushed) batch\(pushed == 1 ? "" : "es") and applied \(known.filter { $0.key != me }.count) other replica(s)' batches: it was emptied (concord.json kept) or restored from an old copy",
                "run `concord doctor --repair` on every replica: each re-uploads its own batches, its head and the files it holds")
        }
    }

    /// Heads, batches and snapshots that do not open and that no replica of the store will
    /// write again, named ``DoctorFinding/Kind/planted``: a seq past anything their
    /// replica announced — every authentic head, batch and snapshot of it, what readable
    /// heads say was applied of it — by more than ``plantedMargin`` (for this replica: past
    /// what it sealed, exactly), or a replica of which nothing authentic is there and that
    /// this replica never saw (a junk `heads/<id>-0000000000000000`). Called damaged, they
    /// would name a writer to repair them that never will, and `repair` would "repair"
    /// them again on every run.
    func checkPlanted(_ scan: inout DoctorScan) throws(ConcordError) {
        let me = store.replicaID
        var reach = try store.appliedSeqs()
        reach[me] = max(try store.sealedSeq(), try pushedSeq())
        for head in scan.readHeads.values.flatMap(\.values) { reach.merge(Head.replicaKeyed(head.applied), uniquingKeysWith: max) }
        for seqs in [scan.heads, scan.readDeltas, scan.readSnapshots] {
            reach.merge(seqs.compactMapValues { $0.max() }, uniquingKeysWith: max)
        }
        reach.merge(scan.coverage, uniquingKeysWith: max)
        let seen = Set(try store.replicaFacts(.seen).keys)
        for index in scan.report.findings.indices {
            let finding = scan.report.findings[index]
            guard finding.kind == .damaged || finding.kind == .malformed, let name = RemoteLayout.parse(finding.path) else { continue }
            let replica: ReplicaID
            let seq: UInt64
            switch name {
            case let .head(r, s), let .batch(r, s), let .snapshot(r, s): (replica, seq) = (r, s)
            case .manifest, .blob, .storeManifest, .memberLog, .grant, .keyObject, .announcement: continue
            }
            let announced = reach[replica] ?? 0
            let known = announced > 0 || replica == me || seen.contains(replica) || scan.heads[replica] != nil
            let margin = replica == me ? 0 : Self.plantedMargin
            guard seq > announced && seq - announced > margin || !known else { continue }
            let beyond = known
                ? "named beyond anything replica \(scan.who(replica)) announced (its newest is \(announced))"
                : "of replica \(replica), of which nothing authentic is on the remote and which this replica never saw"
            scan.report.findings[index].kind = .planted
            scan.report.findings[index].message = "\(finding.path) does not open (\(finding.message)) and is \(beyond): no replica of the store will write it again — planted by whoever can write the storage, or left by an upload that never got further"
            scan.report.findings[index].action = "remove \(finding.path) from the store by hand (Concord deletes nothing it did not write); meanwhile syncs, compaction and the purge pass it over"
        }
    }

    /// How far past anything another replica announced a name of it must be to be taken
    /// for planted: a push puts at most `requestsInFlight` batches (the writer's setting,
    /// 8 by default) ahead of the head naming them, so a torn batch of a push that stopped
    /// there stays `damaged`, for its writer to put again; 65,536 is far past any window.
    static let plantedMargin: UInt64 = 1 << 16

    /// Files: every one a batch or snapshot references must be there; files nothing
    /// references are reported as orphans.
    func checkFiles(_ scan: inout DoctorScan) async throws(ConcordError) {
        let me = store.replicaID
        // This replica's sealed batches the remote does not hold readable (not pushed yet,
        // or missing): their files are not orphans.
        var pending: [String: DoctorScan.Reference] = [:]
        let sealed = try store.sealedSeq()
        let from = (scan.coverage[me] ?? 0) + 1
        if from <= sealed {
            for seq in from...sealed where !(scan.readDeltas[me]?.contains(seq) ?? false) {
                guard let plaintext = try store.sealedBytes(seq: seq), let delta = try? DeltaCodec.decode(plaintext) else { continue }
                for (hash, writer) in Self.distinctFiles(delta.fileReferences) {
                    let keyed = BlobName.keyedName(for: hash, key: keys.blobNames)
                    if pending[keyed] == nil { pending[keyed] = .init(hash: hash, writer: writer, by: "this replica's batch \(seq)") }
                }
            }
        }
        let holds = Set(try store.blobs.all().map { BlobName.keyedName(for: $0, key: keys.blobNames) })
        for (keyed, reference) in scan.references.sorted(by: { $0.key < $1.key }) where !scan.blobs.contains(keyed) {
            if try await examine(.blob(keyedName: keyed), &scan) { continue }  // not listed, but there
            scan.add(
                .missingFile, RemoteLayout.blob(keyedName: keyed), reference.writer,
                "file \(reference.hash.hex), referenced by \(reference.by), is not on the remote: replicas that need it wait",
                holds.contains(keyed) ? "`concord doctor --repair` here re-uploads it from this replica's files" : "a replica holding the file — \(scan.who(reference.writer)) wrote it — re-uploads it: run `concord doctor --repair` there")
        }
        for (keyed, error) in scan.damagedBlobs.sorted(by: { $0.key < $1.key }) {
            let reference = scan.references[keyed] ?? pending[keyed]
            let action: String
            if holds.contains(keyed) {
                action = "`concord doctor --repair` here re-uploads it from this replica's files"
            } else if let reference {
                action = "a replica holding the file — \(scan.who(reference.writer)) wrote it — re-uploads it: run `concord doctor --repair` there"
            } else {
                action = "a replica holding the file re-uploads it with `concord doctor --repair`; as nothing references it, the sweep deletes it after the grace period"
            }
            scan.add(Self.kind(of: error), RemoteLayout.blob(keyedName: keyed), reference?.writer, Self.clean(error.message), action)
        }
        var orphans = scan.blobs.filter { scan.references[$0] == nil && pending[$0] == nil && scan.damagedBlobs[$0] == nil }
        if !orphans.isEmpty {
            // A batch or snapshot hidden from the listings may reference them: look once more.
            for prefix in [RemoteLayout.replicasPrefix, RemoteLayout.snapshotsPrefix] {
                for object in try await remote.list(prefix: prefix) {
                    guard let name = RemoteLayout.parse(object.path) else { continue }
                    try await examine(name, &scan)
                }
            }
            orphans = orphans.filter { scan.references[$0] == nil }
        }
        // A batch that is missing or does not open may reference them: say so.
        let unread = scan.report.findings.contains { finding in
            guard finding.isProblem, case .batch? = RemoteLayout.parse(finding.path) else { return false }
            return finding.kind != .unannouncedBatch
        }
        for keyed in orphans.sorted() {
            scan.add(
                .orphanFile, RemoteLayout.blob(keyedName: keyed), nil,
                "no batch or snapshot references this file: an upload whose batch never came, or the file of a deleted or replaced record"
                    + (unread ? " — or a batch reported here as missing or damaged references it" : ""),
                "nothing to do: if its batch is still to come, that batch references it; otherwise the sweep deletes it once it is older than the grace period (\(Self.duration(blobGracePeriod)))")
        }
    }

    /// Replicas silent past ``retention``, and clocks running ahead.
    func checkFleet(_ scan: inout DoctorScan) throws(ConcordError) {
        let me = store.replicaID
        let now = clock.millisecondsSinceEpoch()
        var ahead: [ReplicaID: UInt64] = [:]
        for (replica, seqs) in scan.heads.sorted(by: { $0.key < $1.key }) {
            guard let newest = seqs.max(), let head = scan.readHeads[replica]?[newest] else { continue }
            let path = RemoteLayout.head(replica, seq: newest)
            if head.syncedAt < now, now - head.syncedAt > retention {
                let days = (now - head.syncedAt) / Self.day
                scan.add(
                    .staleReplica, path, replica,
                    "replica \(scan.who(replica)) last synced \(days) day\(days == 1 ? "" : "s") ago, longer than the retention period (\(Self.duration(retention))): it is treated as retired",
                    replica == me
                        ? "`concord doctor --repair` here rewrites this replica's head; any sync that changes something does too"
                        : "if \(scan.who(replica)) is gone for good, nothing to do (`concord replicas forget` says so at once); if not, sync it: it catches up from snapshots")
            }
            if replica != me, head.syncedAt > now, head.syncedAt - now > maxClockDrift {
                ahead[replica] = max(ahead[replica] ?? 0, head.syncedAt - now)
            }
        }
        for skew in try clockSkews() where skew.replica != me {
            ahead[skew.replica] = max(ahead[skew.replica] ?? 0, skew.aheadBy)
        }
        for (replica, by) in ahead.sorted(by: { $0.key < $1.key }) {
            let path = scan.heads[replica]?.max().map { RemoteLayout.head(replica, seq: $0) } ?? ""
            scan.add(
                .clockSkew, path, replica,
                "the clock of replica \(scan.who(replica)) runs ahead of this device's by \(Self.duration(by)) (more than the allowed \(Self.duration(maxClockDrift))): its changes apply and win over concurrent ones from other devices until the clocks agree; other devices follow its clock at most a day ahead of their own, and their later writes still replace its values",
                "set \(scan.who(replica))'s clock (or this device's, if it is the one behind) to update automatically from network time")
        }
    }
}
