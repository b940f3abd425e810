import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import Foundation
import Synchronization
import GRDB
import Testing

/// The steps a schedule takes: compaction, local operations, device backups and
/// restores, syncs (killed, concurrent, turnstiled), and the bookkeeping the oracle reads.
extension FuzzRun {
    /// Runs compaction on replica `r`. Its metadata purge is the one change compaction makes
    /// to local state: recorded as a removal, and checked — it may only drop entries of
    /// records that were not visible, and add none (even when compaction then fails).
    func compact(_ r: Int) async throws(ConcordError) -> CompactionReport {
        // Compaction forgets the sealed bytes of the batches it deletes, all sealed before it
        // began: the audit keeps its own copy of every one first.
        try logSealed(r)
        let id = stores[r].replicaID
        var before: [ConcordCore.Record?] = []
        for ref in Self.refs { before.append(try stores[r].rawRecord(ref)) }
        let result: Result<CompactionReport, ConcordError>
        do { result = .success(try await engines[r].compact()) } catch { result = .failure(error) }
        // A store whose newest head the remote lost continues under a new id before its
        // compaction pushes: its unpushed writes keep their stamps' times under the new id,
        // so the purge check reads them under the old one.
        let renamed = stores[r].replicaID
        func compared(_ record: ConcordCore.Record?, with old: ConcordCore.Record?) -> ConcordCore.Record? {
            guard renamed != id, var record else { return record }
            for (key, slot) in record.slots {
                record.slots[key]!.entries = slot.entries.map {
                    $0.dot.replica == renamed ? Entry(dot: Stamp(hlc: $0.dot.hlc, replica: id), payload: $0.payload) : $0
                }.sorted { $0.dot < $1.dot }
                if record.slots[key]!.entries == old?.slots[key]?.entries { record.slots[key]!.scope = old?.slots[key]?.scope }
            }
            if record.slots == old?.slots { record.scope = old?.scope }
            return record
        }
        // The replicas this purge did not wait for: retired (by design, a retired replica
        // that returns with a concurrent update brings back its own fields only).
        // A replica with no head at all is unknown to it: one whose last sync (which would
        // have written its head) is older than the retention period, less the clock skew,
        // counts as retired too.
        let silent = Set(lastSyncAt.filter { now > $0.value + 8 * Self.day }.keys)
        let waived = ((try? result.get()).map { Set($0.retiredReplicas) } ?? retired).union(silent)
        for (ref, old) in zip(Self.refs, before) {
            let new = compared(try stores[r].rawRecord(ref), with: old)
            guard new != old else { continue }
            guard let old else {
                purgeFailures.append("r\(r) compaction created the record \(ref)")
                continue
            }
            if old.isVisible { purgeFailures.append("r\(r) compaction changed the visible record \(ref)") }
            for (key, slot) in old.slots {
                let kept = Set(new?.slots[key]?.entries.map(\.dot) ?? [])
                removed[SlotRef(record: ref, key: key), default: []].formUnion(Set(slot.entries.map(\.dot)).subtracting(kept))
                for dot in Set(slot.entries.map(\.dot)).subtracting(kept) { purged[SlotRef(record: ref, key: key), default: [:]][dot, default: []].formUnion(waived) }
            }
            for (key, slot) in new?.slots ?? [:] where !Set(slot.entries.map(\.dot)).isSubset(of: Set(old.slots[key]?.entries.map(\.dot) ?? [])) {
                purgeFailures.append("r\(r) compaction added entries to \(ref) \(key)")
            }
            stats.count("purged")
            trace.log("r\(r) purged \(ref), not waiting for \(waived.map { String($0.description.prefix(4)) }.sorted())")
        }
        return try result.get()
    }

    /// Runs a local operation, recording the entries it created and removed.
    func local(_ r: Int, _ ref: RecordRef, _ description: String, kind: String = "write", _ body: () throws -> Void) throws {
        let before = try stores[r].rawRecord(ref)?.slots ?? [:]
        let seen = try stores[r].versionVector()
        try body()
        let after = try stores[r].rawRecord(ref)?.slots ?? [:]
        var op = RecordOp(ref: ref, replica: r, id: stores[r].replicaID, seen: seen)
        for key in Set(before.keys).union(after.keys) {
            let old = Set(before[key]?.entries.map(\.dot) ?? [])
            let new = Set(after[key]?.entries.map(\.dot) ?? [])
            let slot = SlotRef(record: ref, key: key)
            created[slot, default: []].formUnion(new.subtracting(old))
            everCreated[slot, default: []].formUnion(new.subtracting(old))
            removed[slot, default: []].formUnion(old.subtracting(new))
            removedLocally[slot, default: []].formUnion(old.subtracting(new))
            switch key {
            case .tombstones: if kind == "delete" { op.tombstone = new.subtracting(old).first }
            case .liveness: break
            default: if !old.isEmpty { op.held[slot] = old }
            }
            if !new.subtracting(old).isEmpty { op.madeBySlot[slot] = new.subtracting(old) }
            for entry in after[key]?.entries ?? [] where !old.contains(entry.dot) { written[slot, default: [:]][entry.dot] = entry.payload }
        }
        if kind != "delete" { op.made = Set(op.madeBySlot.values.flatMap { $0 }) }
        recordOps.append(op)
        trace.log("r\(r) \(description)")
        stats.count(kind)
    }

    static let day: UInt64 = 86_400_000

    /// Takes a backup of replica `r`'s store and files, as a device backup would.
    func backup(_ r: Int) throws {
        let path = "\(scratch)/backup-r\(r)-\(backups.count)-\(restores).db"
        try? FileManager.default.removeItem(atPath: path)
        try stores[r].reader.backup(to: try DatabaseQueue(path: path))
        try? FileManager.default.removeItem(atPath: path + ".blobs")
        try FileManager.default.copyItem(atPath: stores[r].path + ".blobs", toPath: path + ".blobs")
        backups[r] = (path, try stores[r].sealedSeq())
        pushedSinceBackup.remove(r)
        trace.log("r\(r) backed up (sealed \(backups[r]!.sealed))")
    }

    /// Replaces replica `r`'s store and files with a backup. Writes that only the lost store
    /// held — never pushed, or pushed and gone — are gone for good ("a write whose every
    /// copy is gone is gone"): the oracles stop expecting them.
    func restoreDevice(_ r: Int, from backup: (path: String, sealed: UInt64)) async throws {
        try logSealed(r)
        let id = stores[r].replicaID
        restores += 1
        let path = "\(scratch)/r\(r)-restored\(restores).db"
        try FileManager.default.copyItem(atPath: backup.path, toPath: path)
        try FileManager.default.copyItem(atPath: backup.path + ".blobs", toPath: path + ".blobs")
        // What survives elsewhere: in another store, or in a batch or snapshot on the remote.
        var held: Set<Stamp> = []
        for (index, store) in stores.enumerated() where index != r {
            for record in try store.state().records.values { for slot in record.slots.values { held.formUnion(slot.entries.map(\.dot)) } }
        }
        let restored = try Store(path: path, configuration: .init(clock: clocks[r], historyRetention: 2 * Self.day, newReplicaID: { [ids] in ids.next() }))
        for record in try restored.state().records.values { for slot in record.slots.values { held.formUnion(slot.entries.map(\.dot)) } }
        let batches = key.subkey(for: .batches)
        let snapshots = key.subkey(for: .snapshots)
        // Batches of this replica past its newest head name were never announced: the
        // restored copy announces the unbroken run of them that opens, once it finds out it
        // is a copy; a batch past a gap stays out of reach. (A head that does not open
        // still bounds how far pull looks.)
        var announced = try SyncEngine.pushedSeq(in: stores[r])
        for object in try folder.inspect(prefix: RemoteLayout.headsPrefix).objects {
            guard case let .head(replica, seq)? = RemoteLayout.parse(object.path), replica == id else { continue }
            announced = max(announced, seq)
        }
        let headAnnounced = announced
        while let bytes = try await folderGet(RemoteLayout.batch(id, seq: announced + 1)),
              let plain = try? EncryptedObject.open(bytes, path: RemoteLayout.batch(id, seq: announced + 1), key: key.subkey(for: .batches)),
              (try? DeltaCodec.decode(plain))?.seq == announced + 1 {
            announced += 1
        }
        var onRemote: Set<UInt64> = []
        var ownDots: [UInt64: Set<Stamp>] = [:]
        var covered: UInt64 = 0
        for object in try folder.inspect(prefix: "").objects {
            guard let bytes = try await folderGet(object.path) else { continue }
            switch RemoteLayout.parse(object.path) {
            case let .batch(origin, seq)?:
                guard let plain = try? EncryptedObject.open(bytes, path: object.path, key: batches), let delta = try? DeltaCodec.decode(plain) else { continue }
                if origin == id {
                    guard seq <= announced else { continue }
                    onRemote.insert(seq)
                    for change in delta.records { for slot in change.slots { ownDots[seq, default: []].formUnion(slot.entries.map(\.dot)) } }
                    continue
                }
                for change in delta.records { for slot in change.slots { held.formUnion(slot.entries.map(\.dot)) } }
            case .snapshot?:
                guard let plain = try? EncryptedObject.open(bytes, path: object.path, key: snapshots),
                      let contents = try? SnapshotObjectCodec.decode(plain, path: object.path) else { continue }
                for record in contents.state.records.values { for slot in record.slots.values { held.formUnion(slot.entries.map(\.dot)) } }
                covered = max(covered, contents.appliedSeqs[id] ?? 0)
            default: continue
            }
        }
        // Sealed batches past the backup that are not on the remote (announced, and opening)
        // nor covered by a snapshot there are gone: never pushed, or torn by storage that
        // reported the put as done, which only the lost store would have put again.
        // Pull takes an origin's batches in order: past the first that is neither there nor
        // covered by a snapshot, none can be applied.
        var reach = max(backup.sealed, covered)
        while reach < announced && onRemote.contains(reach + 1) { reach += 1 }
        for (seq, dots) in ownDots where seq <= reach { held.formUnion(dots) }
        for seq in (sealedLog[id] ?? [:]).keys where seq > reach {
            droppedLog[id, default: [:]][seq] = sealedLog[id]![seq]
            sealedLog[id]![seq] = nil
        }
        originalSeqs[id] = Set((sealedLog[id] ?? [:]).keys)
        if announced > headAnnounced { orphanRuns.append((id, headAnnounced, announced)) }
        // The first kept batch past the backup with a file no store holds, and whose remote
        // copy is not whole (torn by storage that reported success, never put again by the
        // lost store): unless someone puts that content again, it waits for ever, and the
        // batches of the old id after it with it (settled at the end).
        var holders = stores.indices.filter { $0 != r }.map { stores[$0].blobs }
        holders.append(restored.blobs)
        let sizes = try await remoteFileSizes()
        for seq in (sealedLog[id] ?? [:]).keys.sorted() where seq > backup.sealed {
            guard let bytes = sealedLog[id]?[seq] else { continue }
            let missing = try DeltaCodec.decode(bytes).fileReferences.filter { reference in
                !isWhole(reference.file, in: sizes) && !holders.contains { $0.contains(reference.file.hash) }
            }
            if !missing.isEmpty {
                stuckCandidates.append((id, seq, missing.map(\.file)))
                break
            }
        }
        var dropped = 0
        for (slot, dots) in created {
            let lost = dots.filter { $0.replica == id && !held.contains($0) }
            if !lost.isEmpty {
                created[slot]!.subtract(lost)
                lostAtRestore.formUnion(lost)
                dropped += lost.count
            }
        }
        stores[r] = restored
        engines[r] = SyncEngine(
            store: restored, remote: gates[r], key: key, storeID: storeID, clock: clocks[r], snapshotEvery: 3,
            snapshotSlack: engines[r].snapshotSlack, retention: 10 * Self.day, blobGracePeriod: 5 * Self.day,
            requestsInFlight: requestsInFlight)
        restoredFrom[r, default: []].append(id)
        try await freeUnappliedNames()
        trace.log("r\(r) restored from its backup (sealed \(backup.sealed), announced \(announced), on the remote \(onRemote.sorted()), covered by a snapshot \(covered), kept \((sealedLog[id] ?? [:]).keys.sorted())); \(dropped) writes only it held are gone")
        stats.count("deviceRestore")
    }

    /// Records a restored store's new id, if its sync gave it one — seen in the store
    /// itself, since the sync that adopted it may have failed afterwards.
    func noteIdentity(_ report: SyncReport?, _ r: Int) {
        defer { try? noteWriteBacks(r) }
        for fork in report?.forks ?? [] {
            forksReported.append("r\(r): \(fork.batch): \(fork.evidence)")
            trace.log("r\(r) reports a fork at \(fork.batch): \(fork.evidence)")
        }
        if let announced = report?.announcedOrphans, !announced.isEmpty {
            trace.log("r\(r) announced its old id's orphaned batches \(announced)")
            stats.count("announcedOrphans", announced.count)
        }
        let id = stores[r].replicaID
        guard let known = knownIDs[r], known != id else {
            knownIDs[r] = id
            return
        }
        knownIDs[r] = id
        identityChanges.append((known, id))
        // Batches the restored copy sealed under the old id before it noticed never left it,
        // and their writes now live on under the new id. A store that was never restored
        // changes id only after the remote lost its newest head, with nothing sealed past
        // it: every batch it sealed under the old id stands.
        // Unless they did leave it: a name the lost store never used was free, and what the
        // copy pushed under it stands (settled at the end, by what the replicas applied).
        if let original = originalSeqs[known] {
            for seq in (sealedLog[known] ?? [:]).keys where !original.contains(seq) {
                copyLog[known, default: [:]][seq] = sealedLog[known]![seq]
                sealedLog[known]![seq] = nil
            }
        }
        trace.log("r\(r) continues as \(id) (\(originalSeqs[known] == nil ? "the remote lost its newest head" : "it was a restored copy") of \(known))\(report?.restoredCopy == nil ? ", not reported: its sync failed after" : "")")
        stats.count("restoredCopy")
    }

    /// Per remote file name, its size now.
    func remoteFileSizes() async throws -> [String: UInt64] {
        Dictionary(try await folder.list(prefix: RemoteLayout.blobsPrefix).map { ($0.path, $0.size ?? 0) }, uniquingKeysWith: max)
    }

    /// Whether `file` is whole on the remote, by the listed `sizes`.
    func isWhole(_ file: FileRef, in sizes: [String: UInt64]) -> Bool {
        sizes[BlobName.remotePath(for: file.hash, key: key.subkey(for: .blobNames))] == BlobStream.sealedByteCount(plaintextByteCount: file.size)
    }

    /// Forgets the batches of `id` from seq `first` on, which nobody can apply: they leave
    /// the reference merge, and their writes are no longer expected.
    func forgetBatches(of id: ReplicaID, from first: UInt64) throws {
        for (seq, bytes) in sealedLog[id] ?? [:] where seq >= first {
            droppedLog[id, default: [:]][seq] = bytes
            sealedLog[id]![seq] = nil
            for change in try DeltaCodec.decode(bytes).records {
                for slot in change.slots { created[SlotRef(record: change.ref, key: slot.key)]?.subtract(slot.entries.map(\.dot)) }
            }
        }
    }


    /// Settles the stuck candidates once the faults are over: a batch whose file is still not
    /// whole on the remote can never apply, nor can the old id's batches after it — a write
    /// whose every copy is gone is gone. Returns how many origins stay stuck (each leaves
    /// one batch waiting at every replica that lacks it).
    func settleStuckBatches() async throws -> Int {
        let sizes = try await remoteFileSizes()
        var stuck = 0
        for candidate in stuckCandidates where !candidate.files.allSatisfy({ isWhole($0, in: sizes) }) {
            stuck += 1
            try forgetBatches(of: candidate.id, from: candidate.seq)
            trace.log("batches \(candidate.seq)... of \(candidate.id) wait for ever: a file of theirs was only in the lost store")
        }
        return stuck
    }

    /// Settles the orphaned batches the restored copies did not announce: the first of them
    /// must be one that cannot be (it does not open, or a file of it is not whole on the
    /// remote — its only copy was in the lost store); its writes, and those of the batches
    /// after it, are gone. Returns a failure for a batch that could have been announced.
    func settleOrphans() async throws -> [String] {
        var failures: [String] = []
        let heads = try folder.inspect(prefix: RemoteLayout.headsPrefix).objects
        let sizes = try await remoteFileSizes()
        for run in orphanRuns {
            var reach = run.announced
            for object in heads {
                if case let .head(replica, seq)? = RemoteLayout.parse(object.path), replica == run.id { reach = max(reach, seq) }
            }
            guard reach < run.last else { continue }
            let path = RemoteLayout.batch(run.id, seq: reach + 1)
            if let bytes = try await folderGet(path),
               let delta = try? DeltaCodec.decode(try EncryptedObject.open(bytes, path: path, key: key.subkey(for: .batches))),
               delta.fileReferences.allSatisfy({ isWhole($0.file, in: sizes) }) {
                failures.append("\(path) was never announced, though it opens and its files are whole")
            }
            // (Batches of the old id past the run were dropped when the device was restored.)
            try forgetBatches(of: run.id, from: reach + 1)
            trace.log("orphaned batches \(reach + 1)...\(run.last) of \(run.id) could not be announced: gone")
        }
        return failures
    }

    /// Batch names of a restored store's id that no replica applied and the remote no
    /// longer holds (the store that sealed them was lost, and the remote rolled back past
    /// them): nobody has their contents, so the restored store may seal other contents
    /// under them. A name some replica applied, or that the remote still holds, stays bound
    /// to the bytes first seen.
    func freeUnappliedNames() async throws {
        let restoredIDs = Set(stores.indices.compactMap { index in restoredFrom[index]?.contains(stores[index].replicaID) == true ? stores[index].replicaID : nil })
        guard !restoredIDs.isEmpty else { return }
        let onRemote = Set(try folder.inspect(prefix: "").objects.map(\.path))
        for path in Array(seenObjects.keys) where !onRemote.contains(path) {
            guard case let .batch(origin, seq)? = RemoteLayout.parse(path), restoredIDs.contains(origin) else { continue }
            let applied = try stores.filter { $0.replicaID != origin }.contains { (try $0.appliedSeqs()[origin] ?? 0) >= seq }
            if !applied {
                seenObjects[path] = nil
                trace.log("\(path) is free again: the remote lost it and no replica applied it")
            }
        }
    }



    func folderGet(_ path: String) async throws -> [UInt8]? {
        var bytes: [UInt8] = []
        return try await folder.getStream(path, write: { (chunk: [UInt8]) throws(ConcordError) in bytes += chunk }) ? bytes : nil
    }

    /// One name, one content: every authentic batch and snapshot keeps the bytes it was
    /// first seen with, whatever happens to stores and the remote.
    func auditNames() async throws {
        let batches = key.subkey(for: .batches)
        let snapshots = key.subkey(for: .snapshots)
        for object in try folder.inspect(prefix: "").objects {
            let subkey: SubKey
            switch RemoteLayout.parse(object.path) {
            case .batch?: subkey = batches
            case .snapshot?: subkey = snapshots
            default: continue
            }
            guard let bytes = try await folderGet(object.path), (try? EncryptedObject.open(bytes, path: object.path, key: subkey)) != nil else { continue }
            if let first = seenObjects[object.path] {
                if first != bytes { nameFailures.append("\(object.path) was written again with other bytes") }
            } else {
                seenObjects[object.path] = bytes
            }
        }
    }

    /// Copies replica `r`'s sealed deltas not logged yet.
    func logSealed(_ r: Int) throws(ConcordError) {
        let sealed = try stores[r].sealedSeq()
        guard sealed > 0 else { return }
        let id = stores[r].replicaID
        for seq in 1...sealed where sealedLog[id]?[seq] == nil {
            if let bytes = try stores[r].sealedBatch(seq: seq)?.bytes { sealedLog[id, default: [:]][seq] = bytes }
        }
    }

    var keyFile: String { scratch + "/store.key" }

    /// The crash child (`ConcordCrashChild fuzzsync`) and the fault library that kills it,
    /// built beside the tests.
    static let childExecutable = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("ConcordCrashChild").path
    static let faultLibrary = URL(fileURLWithPath: childExecutable).deletingLastPathComponent().appendingPathComponent("libConcordFaultInjection.so").path

    /// A real crash: replica `r`'s sync runs in a child process on the same store and
    /// folder (no storage faults), killed with SIGKILL at its Nth write, N drawn from the
    /// seed (a sync with fewer writes ends normally); then the store is opened again, as a
    /// restarted app would.
    func killedSync(_ r: Int) async throws {
        try logSealed(r)
        let write = random.int(1...24)
        childRuns += 1
        let log = "\(scratch)/child-\(childRuns).log"
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = Self.faultLibrary
        environment["CONCORD_FAULT"] = "write:\(write):kill"
        let path = stores[r].path
        let arguments = [
            "fuzzsync", path, log, scratch + "/remote", keyFile, storeID.hex, String(clocks[r].millisecondsSinceEpoch()),
            String(storage.millisecondsSinceEpoch()), String(engines[r].snapshotSlack), String(requestsInFlight),
            String(random.next()),  // the seed of the ids the child may take
        ]
        let ended = await (try Subprocess.start(Self.childExecutable, arguments, environment: environment, stderr: .file(log + ".err"))).finish()
        let lines = ((try? String(contentsOfFile: log, encoding: .utf8)) ?? "").split(separator: "\n")
        let restarted = try Store(path: path, configuration: .init(clock: clocks[r], historyRetention: 2 * Self.day, newReplicaID: { [ids] in ids.next() }))
        stores[r] = restarted
        engines[r] = SyncEngine(
            store: restarted, remote: gates[r], key: key, storeID: storeID, clock: clocks[r], snapshotEvery: 3,
            snapshotSlack: engines[r].snapshotSlack, retention: 10 * Self.day, blobGracePeriod: 5 * Self.day,
            requestsInFlight: requestsInFlight)
        lastSyncAt[restarted.replicaID] = now
        if ended == .signalled(SIGKILL) {
            trace.log("r\(r) sync in a child process killed at its write \(write)\(lines.contains("started") ? "" : ", before it began")")
            stats.count("kill")
        } else {
            trace.log("r\(r) sync in a child process ended (\(ended)): \(lines.last.map(String.init) ?? "-")")
        }
        noteIdentity(nil, r)
    }

    /// Syncs replica `r`, its sealed deltas logged first: a sync that gives it a new id
    /// forgets those of the old one.
    func sync(_ r: Int, note: String) async {
        try? logSealed(r)
        noteSync(r, note: note, await Self.outcome(of: engines[r]))
    }

    static func outcome(of engine: SyncEngine) async -> Result<SyncReport, ConcordError> {
        do { return .success(try await engine.sync()) } catch { return .failure(error) }
    }

    /// ``outcome(of:)``, as `participant` of `turnstile`, which it leaves when it returns.
    static func outcome(of engine: SyncEngine, through turnstile: Turnstile, as participant: Int) async -> Result<SyncReport, ConcordError> {
        defer { turnstile.end(participant) }
        return await outcome(of: engine)
    }

    /// Records what one sync of replica `r` did.
    func noteSync(_ r: Int, note: String, _ outcome: Result<SyncReport, ConcordError>) {
        lastSyncAt[stores[r].replicaID] = now
        do {
            let report = try outcome.get()
            if retired.remove(stores[r].replicaID) != nil {
                trace.log("r\(r) returns after retirement")
                stats.count("returned")
            }
            trace.log("r\(r) \(note): applied \(report.applied), pushed \(report.pushed), waiting \(report.waiting), rejected \(report.rejected.count)")
            stats.count("sync")
            stats.count("applied", report.applied)
            stats.count("caughtUp", report.joinedSnapshots.count - (report.bootstrapped == nil ? 0 : 1))
            stats.count("rejectedOrFailed", report.rejected.count)
            stats.count("republished", report.remoteRolledBack.count)
            noteIdentity(report, r)
            if report.pushed > 0, backups[r] != nil { pushedSinceBackup.insert(r) }
            if backups[r] == nil, random.chance(0.3) { try? backup(r) }
        } catch {
            trace.log("r\(r) \(note) failed: \(error.code)")
            stats.count("rejectedOrFailed")
            noteIdentity(nil, r)
        }
    }
}
