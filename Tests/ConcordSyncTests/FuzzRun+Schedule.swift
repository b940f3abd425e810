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

/// One schedule: its operations and faults, the upkeep weeks, quiescence and the checks.
extension FuzzRun {
    func run() async throws -> [String] {
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        folder = try FolderRemote(root: scratch + "/remote", createIfMissing: true, clock: storage)
        (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: "fuzz", limits: .minimum)
        let manifest = try await folderGet(RemoteLayout.manifestPath)
        // For the child processes of real kills, which open the remote by key.
        try Data(key.keyFileContents).write(to: URL(fileURLWithPath: keyFile))
        for _ in 0..<random.int(2...4) { try await addReplica() }
        let files = (1...3).map { Array("file content \($0) of \(seed)".utf8) }

        for step in 0..<40 {
            now += UInt64(random.int(1...500))
            for (index, clock) in clocks.enumerated() { clock.advance(by: Int64(random.int(0...500))); _ = index }
            storage.set(now)
            let r = random.int(0...(stores.count - 1))
            let store = stores[r]
            let ref = random.pick(Self.refs)
            let field = random.pick(["fuzzfield-a", "fuzzfield-b"])
            let roll = random.int(0...23)
            if onDemand, try stores[r].filePolicy().mode == .onDemand { try await onDemandStep(r) }
            switch roll {
            case 0...5:
                // Integers wide enough that the plaintext scan can look for their encoding.
                let value: ScalarValue = random.chance(0.5) ? .int(0x3A5C_0000_0000_0000 + Int64(step)) : .string("fuzzvalue-\(step)")
                try local(r, ref, "write \(ref) \(field)") { try store.set(ref, field, value) }
            case 6:
                try local(r, ref, "add \(ref)") { try store.add(ref, "fuzzset-s", .string("fuzzvalue-e\(step % 3)")) }
            case 7:
                try local(r, ref, "remove \(ref)") { try store.remove(ref, "fuzzset-s", .string("fuzzvalue-e\(step % 3)")) }
            case 8, 9:
                // Shared contents (the same content twice is no fork) or new ones, which
                // become garbage for collection once superseded.
                let content = random.chance(0.5) ? random.pick(files) : Array("file content of step \(step), seed \(seed)".utf8)
                try local(r, ref, "file \(ref)", kind: "file") { _ = try store.attachFile(ref, "doc", bytes: content) }
            case 10:
                try local(r, ref, "delete \(ref)", kind: "delete") { try store.delete(ref) }
            case 11:
                try local(r, ref, "create \(ref)", kind: "create") { try store.create(ref, ["fuzzfield-a": .scalar(.string("fuzzvalue-new"))]) }
            case 12:
                if let conflict = try store.conflicts().first {
                    if conflict.kind == .fileFork, let version = conflict.versions.first {
                        // On demand, a version is kept only once it is local.
                        if onDemand, !store.blobs.contains(version.file.hash) { _ = try? await engines[r].localFile(version.file) }
                        try local(r, conflict.ref, "keep \(conflict.ref)", kind: "resolve") {
                            try store.keepVersion(conflict.ref, conflict.field!, hash: version.file.hash)
                        }
                    } else {
                        try local(r, conflict.ref, "keepRecord \(conflict.ref)", kind: "resolve") { try store.keepRecord(conflict.ref) }
                    }
                }
            case 13 where random.chance(0.3):
                // A real crash: the sync runs in a child process, killed at one of its writes.
                try await killedSync(r)
            case 13:
                // A crash between two steps of a push, then a restart.
                let crashedBefore = remotes[r].counts.crashed
                remotes[r].crash(afterMutations: random.int(0...3))
                await sync(r, note: "crashing sync")
                remotes[r].restart()
                // Counted only when the crash fired (the sync may not have reached it).
                if remotes[r].counts.crashed > crashedBefore { stats.count("crash") }
            // Always on 16; on 17 with probability 0.4 (the chance is drawn only for 17).
            case 16...17 where roll == 16 || random.chance(0.4):
                // Compaction: delete own batches the newest snapshot covers and every replica
                // with a head has applied (later bootstraps and laggards join snapshots).
                do {
                    let report = try await compact(r)
                    trace.log("r\(r) compact: purged \(report.metadata.purged.count), deleted \(report.deletedBatches), shared \(report.sharedSnapshot ?? "-"), dropped \(report.droppedSnapshots), files \(report.files.deletedFiles.count), retired \(report.retiredReplicas.count)")
                    stats.count("compact")
                    stats.count("deletedBatches", report.deletedBatches.count)
                    stats.count("collectedFiles", report.files.deletedFiles.count)
                    stats.count("sharedSnapshot", report.sharedSnapshot == nil ? 0 : 1)
                    stats.count("droppedSnapshots", report.droppedSnapshots.count)
                    stats.count("retired", report.retiredReplicas.count)
                    retired.formUnion(report.retiredReplicas)
                } catch {
                    trace.log("r\(r) compact failed: \(error.code)")
                }
            case 15 where random.chance(0.5):
                do {
                    try await engines[r].writeSnapshot()
                    trace.log("r\(r) snapshot")
                    stats.count("snapshot")
                } catch {
                    trace.log("r\(r) snapshot failed: \(error.code)")
                }
            case 19, 20:
                // Days pass: uploads outlive their deadline, files their grace period, and
                // replicas that do not sync become silent past the retention period.
                let days = UInt64(random.int(2...8))
                now += days * Self.day
                storage.set(now)
                for clock in clocks { clock.advance(by: Int64(days * Self.day)) }
                trace.log("\(days) days pass")
                stats.count("days")
            case 21:
                // A replica forgets another (which may come back later).
                let other = random.int(0...(stores.count - 1))
                guard other != r else { break }
                do {
                    try await engines[r].forget(stores[other].replicaID)
                    retired.insert(stores[other].replicaID)
                    trace.log("r\(r) forgets r\(other)")
                    stats.count("forget")
                } catch {
                    trace.log("r\(r) forget r\(other) failed: \(error.code)")
                }
            case 22:
                // Remote file sweep on its own (compaction also runs it), by every
                // replica: a file goes only once one replica has found it unreferenced for a
                // whole grace period.
                for index in engines.indices {
                    do {
                        let report = try await engines[index].sweepFiles()
                        trace.log("r\(index) collect: deleted \(report.deletedFiles.count), awaiting \(report.awaitingFiles), young \(report.youngFiles)\(report.skipped.map { ", skipped: \($0)" } ?? "")")
                        stats.count("collectedFiles", report.deletedFiles.count)
                        stats.count("awaitingFiles", report.awaitingFiles)
                    } catch {
                        trace.log("r\(index) collect failed: \(error.code)")
                    }
                }
            case 18, 23:
                // Storage and devices go back in time, in any mix within one schedule: the
                // remote is rolled back to an earlier copy, or loses heads behind the
                // replicas' backs; a device's store is restored from a backup taken right
                // after one of its syncs; a stranger deletes `concord.json`, or the head of
                // a retired replica.
                let candidates = backups.sorted(by: { $0.key < $1.key })
                switch random.int(0...9) {
                case 0...3:
                    if let copy = remoteCopy, random.chance(0.6) {
                        try await remotes[0].rollback(to: copy)
                        remoteCopy = nil
                        trace.log("the remote is rolled back to its copy\(copy.prefix.isEmpty ? "" : " of \(copy.prefix)")")
                        stats.count("remoteRollback")
                        try await freeUnappliedNames()
                    } else if remoteCopy == nil, random.chance(0.7) {
                        remoteCopy = try await remotes[0].copy(prefix: random.pick(["", "", "heads/"]))
                        trace.log("a copy of the remote is taken")
                    } else {
                        let gone = try await remotes[0].vanish(prefix: RemoteLayout.headsPrefix, probability: 0.3)
                        trace.log("vanished: \(gone)")
                        stats.count("vanished", gone.count)
                    }
                case 4...6 where !candidates.isEmpty:
                    // Preferably a replica that pushed since its backup: its store then goes
                    // back behind what the remote holds of it.
                    let (index, backup) = candidates.first(where: { pushedSinceBackup.contains($0.key) }) ?? candidates[0]
                    try await restoreDevice(index, from: backup)
                    backups[index] = nil
                // (Once some replica keeps a copy: one that never reached the remote has none.)
                case 7 where try stores.contains(where: { try SyncEngine.keptManifest(in: $0) != nil }):
                    try await folder.delete(RemoteLayout.manifestPath)
                    trace.log("concord.json is deleted")
                    stats.count("deletedManifest")
                default:
                    let gone = Set(identityChanges.map(\.old)).union(retired)
                    for object in try await folder.list(prefix: RemoteLayout.headsPrefix) {
                        guard case let .head(replica, _)? = RemoteLayout.parse(object.path), gone.contains(replica) else { continue }
                        try await folder.delete(object.path)
                        trace.log("the head \(object.path) of a retired replica is deleted")
                        stats.count("deletedRetiredHead")
                    }
                }
            case 14:
                if stores.count < 6 {
                    try await addReplica()
                    trace.log("bootstrap r\(stores.count - 1)")
                    stats.count("bootstrap")
                    await sync(stores.count - 1, note: "bootstrap sync")
                }
            default:
                if stores.count > 1, random.chance(0.3) {
                    // Two replicas sync at the same time, through the same storage.
                    let other = (r + random.int(1...(stores.count - 1))) % stores.count
                    // Their calls go through a turnstile in an order drawn from the seed, so
                    // the schedule replays; the overlaps it shows are counted.
                    let (first, second) = (engines[r], engines[other])
                    try logSealed(r)
                    try logSealed(other)
                    let turnstile = Turnstile(seed: random.next(), participants: [0, 1])
                    gates[r].engage(turnstile, as: 0)
                    gates[other].engage(turnstile, as: 1)
                    async let a = Self.outcome(of: first, through: turnstile, as: 0)
                    async let b = Self.outcome(of: second, through: turnstile, as: 1)
                    let (ra, rb) = await (a, b)
                    gates[r].disengage()
                    gates[other].disengage()
                    noteSync(r, note: "sync beside r\(other)", ra)
                    noteSync(other, note: "sync beside r\(r)", rb)
                    stats.count("concurrentSyncs")
                    if turnstile.switches >= 2 { stats.count("overlappingSyncs") }
                    trace.log("calls of r\(r) and r\(other) in turn: \(turnstile.order.map(String.init).joined())")
                } else {
                    await sync(r, note: "sync")
                }
            }
            for index in stores.indices { noteIdentity(nil, index) }
            try await auditNames()
        }

        // The faults that fired, each counted where it happened (required totals below).
        for remote in remotes {
            let counts = remote.counts
            stats.count("faultFailed", counts.failed)
            stats.count(remote.plan.tornPutReportsSuccess ? "faultTornPutReportedDone" : "faultTornPut", counts.tornPuts)
            stats.count("faultLostPut", counts.lostPuts)
            stats.count("faultLostDelete", counts.lostDeletes)
            stats.count("faultLostAck", counts.lostAcknowledgements)
            stats.count("faultStaleListing", counts.staleListings)
            stats.count("faultIncompleteListing", counts.incompleteListings)
            stats.count("faultDuplicatedListing", counts.duplicatedListings)
            stats.count("faultReorderedListing", counts.reorderedListings)
        }
        // Faults together: a device restored and the remote rolled back in one schedule.
        let mine = stats.snapshot() as [String: Int]
        if mine["deviceRestore", default: 0] > 0, mine["remoteRollback", default: 0] > 0 { stats.count("restoreAndRollback") }
        // Faults stop. Weeks of upkeep: each week every replica syncs and compacts, so
        // batches go, superseded files are collected, and silent replicas retire; then a
        // new replica bootstraps from what is left. Then sync to quiescence.
        for remote in remotes { remote.faultsOff() }
        for week in 0..<3 {
            now += 7 * Self.day
            storage.set(now)
            for clock in clocks { clock.advance(by: Int64(7 * Self.day)) }
            // What killed syncs left in the folder (temporary files), swept as
            // `concord compact` does. Their times are the file system's, not the schedule's:
            // nothing is uploading now, so every one is old enough.
            let wallClock = UInt64(Date().timeIntervalSince1970 * 1000)
            let swept = try await folder.sweepLeftovers(olderThan: 3_600_000, now: max(now, wallClock) + 2 * 3_600_000)
            if swept > 0 { trace.log("week \(week): \(swept) leftovers of killed uploads swept") }
            for index in engines.indices {
                try logSealed(index)
                lastSyncAt[stores[index].replicaID] = now
                do {
                    noteIdentity(try await engines[index].sync(), index)
                    let report = try await compact(index)
                    trace.log("week \(week): r\(index) compact: purged \(report.metadata.purged.count), deleted \(report.deletedBatches), shared \(report.sharedSnapshot ?? "-"), dropped \(report.droppedSnapshots), files \(report.files.deletedFiles.count), awaiting \(report.files.awaitingFiles)\(report.files.skipped.map { ", skipped: \($0)" } ?? "")")
                    stats.count("deletedBatches", report.deletedBatches.count)
                    stats.count("collectedFiles", report.files.deletedFiles.count)
                    stats.count("sharedSnapshot", report.sharedSnapshot == nil ? 0 : 1)
                    stats.count("droppedSnapshots", report.droppedSnapshots.count)
                } catch {
                    trace.log("week \(week): r\(index) upkeep failed: \(error)")
                    noteIdentity(nil, index)
                }
            }
        }
        try await addReplica()
        remotes[remotes.count - 1].faultsOff()
        trace.log("bootstrap r\(stores.count - 1) after the upkeep")
        var failures: [String] = []
        let stuck = try await settleStuckBatches()
        var quiet = false
        for _ in 0..<8 where !quiet {
            quiet = true
            for index in engines.indices {
                do {
                    try logSealed(index)
                    let report = try await engines[index].sync()
                    noteIdentity(report, index)
                    if report.applied > 0 || report.pushed > 0 || report.waiting > stuck { quiet = false }
                    trace.log("quiescence: r\(index) applied \(report.applied), pushed \(report.pushed), waiting \(report.waiting), joined \(report.joinedSnapshots)\(report.rejected.isEmpty ? "" : ", rejected \(report.rejected)")")
                } catch {
                    noteIdentity(nil, index)
                    failures.append("fault-free sync of r\(index) failed: \(error)")
                    quiet = false
                }
            }
        }
        if !quiet { failures.append("replicas did not reach quiescence in 8 rounds") }
        if !forksReported.isEmpty { failures.append("history forks reported, though no name was used twice: \(forksReported)") }

        failures += try await settleOrphans()
        // (1) identical dumps, (2) equal to the reference merge of every sealed delta.
        let dumps = try stores.map { try $0.canonicalDump() }
        if Set(dumps).count != 1 {
            failures.append("dumps differ:\n" + dumps.joined(separator: "\n"))
            for (index, store) in stores.enumerated() {
                failures.append("r\(index) \(store.replicaID): sealed \(try store.sealedSeq()), applied \(try store.appliedSeqs().sorted { $0.key < $1.key }.map { "\($0.key.description.prefix(4)):\($0.value)" })")
            }
            failures.append("remote: \(try await folder.list(prefix: "").map(\.path).filter { !$0.hasPrefix("blobs") })")
        }
        var reference = StoreState()
        for index in stores.indices { try logSealed(index) }
        // Every sealed delta of every replica id, those of ids a restored store gave up included;
        // of those found out of reach, the ones that came back and were applied.
        for (_, log) in sealedLog {
            for (_, bytes) in log { reference.join(try DeltaCodec.decode(bytes).state) }
        }
        let applied = try stores.map { try $0.appliedSeqs() }
        for (id, log) in copyLog {
            let reached = applied.map { $0[id] ?? 0 }.max() ?? 0
            for (seq, bytes) in log where seq <= reached && sealedLog[id]?[seq] == nil {
                reference.join(try DeltaCodec.decode(bytes).state)
                trace.log("batch \(seq) of \(id), sealed by its restored copy under the old id, left it")
            }
        }
        for (id, log) in droppedLog {
            let reached = applied.map { $0[id] ?? 0 }.max() ?? 0
            // (A name the restored store used again — the original never reached anyone —
            // was applied with the new content, logged in `sealedLog`.)
            for (seq, bytes) in log where seq <= reached && sealedLog[id]?[seq] == nil && copyLog[id]?[seq] == nil {
                reference.join(try DeltaCodec.decode(bytes).state)
                trace.log("batch \(seq) of \(id), out of reach when its device was restored, came back")
            }
        }
        let final = try stores[0].state()
        if CanonicalDump.json(of: reference) != dumps[0] {
            failures.append("the dumps differ from the reference merge:\n\(CanonicalDump.json(of: reference))\nthe replicas hold:\n\(dumps[0])")
        }
        // Entries compared, not scopes: a replica's own state carries none, and the join of
        // deltas alone keeps the scope of a range whose delta never left its store (the
        // restored copy re-stamped those writes).
        func entries(_ state: StoreState) -> [RecordRef: [SlotKey: [Entry]]] {
            state.records.mapValues { $0.slots.mapValues(\.entries).filter { !$0.value.isEmpty } }.filter { !$0.value.isEmpty }
        }
        if entries(final) != entries(reference) {
            failures.append("stored entries differ from the reference merge")
            for ref in Set(final.records.keys).union(reference.records.keys) where final.records[ref] != reference.records[ref] {
                for key in Set(final.records[ref]?.slots.keys.map { $0 } ?? []).union(reference.records[ref]?.slots.keys.map { $0 } ?? []) {
                    let have = final.records[ref]?.slots[key]?.entries.map(\.dot) ?? []
                    let want = reference.records[ref]?.slots[key]?.entries.map(\.dot) ?? []
                    if have != want {
                        failures.append("  \(ref) \(key): replicas \(have), reference \(want)")
                        // Which logged deltas carry the entries in question, and which remove them.
                        for dot in Set(have).symmetricDifference(want) {
                            for (name, log) in [("sealed", sealedLog), ("dropped", droppedLog)] {
                                for (id, batches) in log {
                                    for (seq, bytes) in batches {
                                        let delta = try DeltaCodec.decode(bytes)
                                        let carries = delta.records.contains { $0.ref == ref && $0.slots.contains { $0.key == key && $0.entries.contains { $0.dot == dot } } }
                                        let record = delta.state.records[ref]
                                        let covers = !carries && ((record?.slots[key]?.scope?.contains(dot) ?? false) || (record?.scope?.contains(dot) ?? false))
                                        if carries || covers { failures.append("    \(dot): \(name) batch \(seq) of \(id) \(carries ? "carries it" : "removes it")") }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        failures += purgeFailures
        // A deleted `concord.json` is put back, as it was.
        if try await folderGet(RemoteLayout.manifestPath) != manifest { failures.append("concord.json is not back as it was") }
        try await auditNames()
        failures += nameFailures
        // (3) no lost write.
        var present: [SlotRef: Set<Stamp>] = [:]
        for (ref, record) in final.records {
            for (key, slot) in record.slots { present[SlotRef(record: ref, key: key)] = Set(slot.entries.map(\.dot)) }
        }
        for (slot, dots) in created {
            for dot in dots where !(present[slot]?.contains(dot) ?? false) && !(removed[slot]?.contains(dot) ?? false)
                && !restamped(dot).contains(where: { (present[slot]?.contains($0) ?? false) || (removed[slot]?.contains($0) ?? false) }) {
                failures.append("lost write: \(slot.record) \(slot.key) \(dot) vanished without an observing removal; replicas hold \(present[slot].map { Array($0) } ?? []), ids \(identityChanges)")
            }
        }
        for (slot, dots) in present {
            for dot in dots where !(everCreated[slot]?.contains(dot) ?? false) && !original(dot).contains(where: { everCreated[slot]?.contains($0) ?? false }) {
                failures.append("phantom entry: \(slot.record) \(slot.key) \(dot) was never written")
            }
        }
        failures += ruleFourFailures(present: present)
        // A surviving entry holds the value written, not just the id of the write.
        for (ref, record) in final.records {
            for (key, slot) in record.slots {
                let values = written[SlotRef(record: ref, key: key)] ?? [:]
                for entry in slot.entries {
                    guard let value = values[entry.dot] ?? original(entry.dot).lazy.compactMap({ values[$0] }).first else { continue }
                    if value != entry.payload {
                        failures.append("changed write: \(ref) \(key) \(entry.dot) holds \(entry.payload), but \(value) was written")
                    }
                }
            }
        }
        // (4) The remote holds only ciphertext: no id, name, value or file content in the clear
        //     — nor an integer value's 8 bytes, nor a file's content hash (raw or hex) — and
        //     no temporary file is left behind.
        var secrets = Self.secrets.map { Array($0.utf8) }
        for case let .scalar(.int(number)) in written.values.flatMap(\.values) where number.magnitude >= 1 << 48 {
            secrets.append(ScalarCodec.encode(.int(number)))  // its encoding: tag and svarint, 9+ bytes
        }
        for case let .file(file) in written.values.flatMap(\.values) {
            secrets.append(file.hash.bytes)
            secrets.append(Array(file.hash.hex.utf8))
        }
        for object in try await folder.list(prefix: "") {
            guard let bytes = try await folderGet(object.path) else { continue }
            for secret in secrets where bytes.firstRange(of: secret) != nil {
                failures.append("\(object.path) contains \(String(decoding: secret, as: UTF8.self).debugDescription) (\(secret.count) bytes) in plaintext")
            }
        }
        let leftovers = (FileManager.default.enumerator(atPath: scratch + "/remote")?.allObjects as? [String] ?? []).filter { $0.contains(FolderRemote.temporaryPrefix) }
        if !leftovers.isEmpty { failures.append("temporary files left in the remote: \(leftovers)") }
        return failures
    }
}
