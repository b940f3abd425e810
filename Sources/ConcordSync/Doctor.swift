import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

/// What ``SyncEngine/doctor(repair:)`` found on the remote, and what it repaired.
public struct DoctorReport: Hashable, Sendable {
    /// How many objects of each kind the remote holds (each checked once, however often a
    /// listing repeated it).
    public struct ObjectCounts: Hashable, Sendable {
        /// `concord.json`: 1, or 0 when the remote has none.
        public var manifest = 0
        public var heads = 0
        public var deltas = 0
        public var snapshots = 0
        public var blobs = 0
        public init() {}
        /// Every object counted.
        public var total: Int { manifest + heads + deltas + snapshots + blobs }
    }

    /// Everything found, problems and notices, in the order the checks ran.
    public var findings: [DoctorFinding] = []
    /// The objects checked.
    public var objects = ObjectCounts()
    /// Objects that opened, authenticated and parsed.
    public var healthy = 0
    public init() {}

    /// Problems not repaired: what keeps the remote from being healthy.
    public var problems: [DoctorFinding] { findings.filter { $0.isProblem && !$0.repaired } }
    /// True when no problem remains (notices — an orphan file, a silent replica, a skewed
    /// clock — do not count).
    public var isHealthy: Bool { problems.isEmpty }
}

/// One thing ``SyncEngine/doctor(repair:)`` found: an object that is damaged, missing or out
/// of place, or a notice about the fleet.
public struct DoctorFinding: Hashable, Sendable {
    /// What kind of finding this is. Static members of an extensible struct rather than a
    /// closed enum (like ``ConcordCore/ConcordError/Code``): later releases add kinds without
    /// breaking callers.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as the CLI's `--json` prints it.
        public let name: String
        /// Whether it is a problem (the remote is not healthy while it remains) rather than
        /// a notice.
        public let isProblem: Bool

        public init(_ name: String, isProblem: Bool = true) {
            self.name = name
            self.isProblem = isProblem
        }

        public var description: String { name }
        public static func == (lhs: Kind, rhs: Kind) -> Bool { lhs.name == rhs.name }
        public func hash(into hasher: inout Hasher) { hasher.combine(name) }

        /// It fails authentication: torn (cut short), modified, or stored under another name.
        public static let damaged = Kind("damaged")
        /// It authenticates but does not parse, or holds another object than its name says.
        public static let malformed = Kind("malformed")
        /// Not a readable object: something else stands at its name (a FIFO, a device, a
        /// folder, a symbolic link), or it is larger than its kind's limit — planted, since
        /// Concord writes neither. Skipped by every sync; remove it by hand.
        public static let unreadable = Kind("unreadable")
        /// It was written in a format version this release cannot read.
        public static let newerFormat = Kind("newerFormat")
        /// A gap in a replica's batch sequence that no readable snapshot (any replica's) covers:
        /// replicas that have not applied it cannot apply anything newer from that replica.
        public static let missingBatch = Kind("missingBatch")
        /// A replica has batches (or others applied its batches) but no head: the others
        /// do not see its changes.
        public static let missingHead = Kind("missingHead")
        /// A batch beyond its replica's newest head — for instance a crash between the
        /// batch and the head: the others do not see it yet.
        public static let unannouncedBatch = Kind("unannouncedBatch")
        /// A batch or snapshot references a file the remote lacks: replicas that need it wait.
        public static let missingFile = Kind("missingFile")
        /// A file no batch or snapshot references: an upload whose batch never came, or the
        /// file of a deleted record. Collection deletes it after the grace period. A notice.
        public static let orphanFile = Kind("orphanFile", isProblem: false)
        /// An older head of a replica that should have been deleted (a lost delete).
        public static let staleHead = Kind("staleHead")
        /// A replica whose newest head is older than ``SyncEngine/retention``: treated as
        /// retired. A notice.
        public static let staleReplica = Kind("staleReplica", isProblem: false)
        /// A replica whose clock runs ahead of this device's by more than the allowed
        /// drift: its changes apply anyway. A notice.
        public static let clockSkew = Kind("clockSkew", isProblem: false)
        /// The remote lost everything this replica knows was there: emptied, replaced, or
        /// re-created as another store.
        public static let remoteEmptied = Kind("remoteEmptied")
        /// The remote went back in time: it no longer holds batches this replica pushed or
        /// applied (and no snapshot covers them), or this replica's head is behind what it
        /// pushed — restored from an older copy, rolled back, or objects deleted. Every
        /// sync of a replica that holds them publishes them again; so does `--repair`.
        public static let remoteRolledBack = Kind("remoteRolledBack")
    }

    /// The remote object concerned (`""` for the remote as a whole).
    public var path: String
    public var kind: Kind
    /// The replica that wrote the object, or that the finding is about, when known.
    public var replica: ReplicaID?
    /// What is wrong, in one line.
    public var message: String
    /// What to do about it, from this replica's point of view.
    public var action: String
    /// Whether `doctor(repair: true)` repaired it (and checked the repair).
    public var repaired = false
    /// What the repair did, or why it could not; nil when no repair was attempted.
    public var repair: String?

    public init(path: String, kind: Kind, replica: ReplicaID?, message: String, action: String, repaired: Bool = false, repair: String? = nil) {
        self.path = path
        self.kind = kind
        self.replica = replica
        self.message = message
        self.action = action
        self.repaired = repaired
        self.repair = repair
    }

    /// Whether it is a problem rather than a notice.
    public var isProblem: Bool { kind.isProblem }
}

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
        var scan = DoctorScan()
        scan.me = store.replicaID
        if let recorded = try store.syncValue(SyncKey.storeID), recorded != storeID.hex {
            throw ConcordError(.storeMismatch, "this local store synced with remote store \(recorded), not \(storeID.hex); nothing was checked")
        }
        // 1. concord.json: without it (or with another store's) nothing else can be judged.
        guard let manifestBytes = try await remote.get(RemoteLayout.manifestPath, limit: RemoteLayout.maxObjectSize(for: .manifest)) else {
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
        for name in try await doctorListing() { try await examine(name, &scan) }
        // 3. Each replica's sequence of batches and heads; 4. files; 5. the fleet.
        try await checkSequences(&scan)
        try await checkFiles(&scan)
        try checkFleet(&scan)
        if repair { try await repairFindings(&scan) }
        return scan.report
    }

    /// The head at `heads/<replica>-<seq>`, opened and decoded: nil when the remote has no
    /// such object; throws ``ConcordCore/ConcordError/Code/authenticationFailed`` (torn,
    /// modified), `unsupportedVersion` or `malformed` (it does not parse, or holds another
    /// replica's or seq's head) when it is there but unusable — and whatever the remote
    /// throws when it fails.
    package func readHead(_ replica: ReplicaID, seq: UInt64) async throws(ConcordError) -> Head? {
        let path = RemoteLayout.head(replica, seq: seq)
        guard let sealed = try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path)) else { return nil }
        let head = try Head.decode(try SealedObject.open(sealed, path: path, key: keys.manifests), path: path)
        guard head.replica == replica.description, head.seq == seq else {
            throw ConcordError(.malformed, "remote manifest \(path) holds the head of \(head.replica) at \(head.seq): it was moved or swapped")
        }
        return head
    }

    // MARK: Listing and checking objects

    /// The store's objects as listings show them, repeated listings merged: each prefix is
    /// listed until a round adds nothing new (two to four rounds), so one incomplete or
    /// stale listing hides less. What is still hidden is found by `get` where it matters.
    func doctorListing() async throws(ConcordError) -> [RemoteLayout.Name] {
        var names: [String: RemoteLayout.Name] = [:]
        for round in 0..<4 {
            var added = false
            for prefix in [RemoteLayout.headsPrefix, RemoteLayout.replicasPrefix, RemoteLayout.snapshotsPrefix, RemoteLayout.blobsPrefix] {
                for object in try await remote.list(prefix: prefix) {
                    guard let name = RemoteLayout.parse(object.path), name != .manifest else { continue }
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
        case .manifest:
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
        case let .delta(replica, seq):
            // An object that is not a readable file, or is too large, is damage too.
            do throws(ConcordError) {
                guard let sealed = try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path)) else {
                    found = false
                    break
                }
                scan.deltas[replica, default: []].insert(seq)
                scan.report.objects.deltas += 1
                let delta = try openDelta(sealed, replica: replica, seq: seq)
                scan.readDeltas[replica, default: []].insert(seq)
                for (hash, writer) in Self.fileReferences(in: delta.records.lazy.flatMap { $0.slots.lazy.flatMap(\.entries) }) {
                    scan.reference(BlobName.keyedName(for: hash, key: keys.blobNames), hash, writer, by: path)
                }
            } catch {
                guard Self.isDamage(error) else { throw error }
                if scan.deltas[replica, default: []].insert(seq).inserted { scan.report.objects.deltas += 1 }
                failure = error
            }
        case let .snapshot(replica, seq):
            do throws(ConcordError) {
                guard let sealed = try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path)) else {
                    found = false
                    break
                }
                scan.snapshots[replica, default: []].insert(seq)
                scan.report.objects.snapshots += 1
                let snapshot = try SnapshotObject.decode(try SealedObject.open(sealed, path: path, key: keys.snapshots), path: path)
                scan.readSnapshots[replica, default: []].insert(seq)
                // A snapshot covers the batches of every origin it contains, not just its writer's.
                scan.coverage.merge(snapshot.appliedSeqs, uniquingKeysWith: max)
                let entries = snapshot.state.records.values.lazy.flatMap { $0.slots.values.lazy.flatMap(\.entries) }
                for (hash, writer) in Self.fileReferences(in: entries) {
                    scan.reference(BlobName.keyedName(for: hash, key: keys.blobNames), hash, writer, by: path)
                }
            } catch {
                guard Self.isDamage(error) else { throw error }
                if scan.snapshots[replica, default: []].insert(seq).inserted { scan.report.objects.snapshots += 1 }
                failure = error
            }
        case let .blob(keyedName):
            switch try await Self.checkBlob(remote, keyedName: keyedName, contents: keys.blobContents, names: keys.blobNames) {
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

    func openDelta(_ sealed: [UInt8], replica: ReplicaID, seq: UInt64) throws(ConcordError) -> Delta {
        let path = RemoteLayout.delta(replica, seq: seq)
        let delta = try DeltaCodec.decode(try SealedObject.open(sealed, path: path, key: keys.batches))
        guard delta.origin == replica, delta.seq == seq else {
            throw ConcordError(.malformed, "remote object \(path) holds delta \(delta.seq) of \(delta.origin): it was moved or swapped")
        }
        return delta
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
        let retired = Set(try store.syncValues(prefix: SyncKey.retiredPrefix).keys.compactMap { ReplicaID(hex: $0) })
        let replicas = Set(scan.heads.keys).union(scan.deltas.keys).union(scan.snapshots.keys).union(known.keys)
        for replica in replicas.sorted() {
            // Only what authenticated counts: a name alone (a planted `…-ffffffffffffffff`)
            // claims nothing.
            var latest = max(
                scan.heads[replica]?.max() ?? 0, scan.readDeltas[replica]?.max() ?? 0, scan.readSnapshots[replica]?.max() ?? 0,
                known[replica] ?? 0)
            // Batches newer than any listing showed: walk forward while they are there.
            while latest < .max, try await examine(.delta(replica: replica, seq: latest + 1), &scan), scan.readDeltas[replica]?.contains(latest + 1) == true {
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
                    if try await examine(.delta(replica: replica, seq: seq), &scan) == false { missing.append(seq) }
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
                    .missingBatch, RemoteLayout.delta(replica, seq: seq), replica,
                    "batch \(seq) of replica \(scan.who(replica)) is missing (its newest is \(latest)) and no snapshot of it covers it: replicas that have not applied it cannot apply anything newer from it",
                    replica == me ? "`concord doctor --repair` here re-uploads the bytes this replica sealed" : "only \(scan.who(replica)) holds it: run `concord doctor --repair` there")
            }
            // Heads: one, naming the newest batch.
            guard let newest = scan.heads[replica]?.max() else {
                scan.add(
                    .missingHead, RemoteLayout.head(replica, seq: latest), replica,
                    "replica \(scan.who(replica)) has batches up to \(latest) but no head: the others do not see its changes",
                    replica == me ? "`concord doctor --repair` here writes this replica's head; its next sync does too" : "\(scan.who(replica))'s next sync writes it, or run `concord doctor --repair` there")
                continue
            }
            for seq in (scan.deltas[replica] ?? []).sorted() where seq > newest && !scan.hasFinding(at: RemoteLayout.delta(replica, seq: seq)) {
                scan.add(
                    .unannouncedBatch, RemoteLayout.delta(replica, seq: seq), replica,
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
                guard let plaintext = try store.sealedDelta(seq: seq), let delta = try? DeltaCodec.decode(plaintext) else { continue }
                for (hash, writer) in Self.fileReferences(in: delta.records.lazy.flatMap { $0.slots.lazy.flatMap(\.entries) }) {
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
                action = "a replica holding the file re-uploads it with `concord doctor --repair`; as nothing references it, collection deletes it after the grace period"
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
            guard finding.isProblem, case .delta? = RemoteLayout.parse(finding.path) else { return false }
            return finding.kind != .unannouncedBatch
        }
        for keyed in orphans.sorted() {
            scan.add(
                .orphanFile, RemoteLayout.blob(keyedName: keyed), nil,
                "no batch or snapshot references this file: an upload whose batch never came, or the file of a deleted or replaced record"
                    + (unread ? " — or a batch reported here as missing or damaged references it" : ""),
                "nothing to do: if its batch is still to come, that batch references it; otherwise collection deletes it once it is older than the grace period (\(Self.duration(blobGracePeriod)))")
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
                "the clock of replica \(scan.who(replica)) runs ahead of this device's by \(Self.duration(by)) (more than the allowed \(Self.duration(maxClockDrift))): its changes apply, but win over later ones from other devices until the clocks agree",
                "set \(scan.who(replica))'s clock (or this device's, if it is the one behind) to update automatically from network time")
        }
    }

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
            guard case let .blob(keyed)? = RemoteLayout.parse(finding.path), let hash = local[keyed],
                  finding.kind == .missingFile || (finding.isProblem && scan.damagedBlobs[keyed] != nil) else { continue }
            await attempt(&scan, index) { () async throws(ConcordError) -> String? in
                _ = try await BlobTransfer.upload(hash, from: store.blobs, to: remote, path: finding.path, key: keys.blobContents)
                guard case .intact = try await Self.checkBlob(remote, keyedName: keyed, contents: keys.blobContents, names: keys.blobNames) else { return nil }
                return "re-uploaded file \(hash.hex) from this replica's files"
            }
            if scan.report.findings[index].repaired { intact.insert(keyed) }
        }

        // 2. Its own batches: the exact bytes it sealed, after the files they reference. A
        //    batch whose bytes it forgot (compacted) is published again in a snapshot.
        var forgotten: [Int] = []
        for index in scan.report.findings.indices {
            let finding = scan.report.findings[index]
            guard finding.isProblem, finding.kind != .unannouncedBatch,
                  case let .delta(replica, seq)? = RemoteLayout.parse(finding.path), replica == me else { continue }
            guard let plaintext = try store.sealedDelta(seq: seq) else {
                forgotten.append(index)
                continue
            }
            let present = intact
            await attempt(&scan, index) { () async throws(ConcordError) -> String? in
                let delta = try DeltaCodec.decode(plaintext)
                for (hash, _) in Self.fileReferences(in: delta.records.lazy.flatMap { $0.slots.lazy.flatMap(\.entries) }) where store.blobs.contains(hash) {
                    let keyed = BlobName.keyedName(for: hash, key: keys.blobNames)
                    if present.contains(keyed) { continue }
                    if case .intact = try await Self.checkBlob(remote, keyedName: keyed, contents: keys.blobContents, names: keys.blobNames) { continue }
                    _ = try await BlobTransfer.upload(hash, from: store.blobs, to: remote, path: RemoteLayout.blob(keyedName: keyed), key: keys.blobContents)
                }
                try await remote.put(finding.path, SealedObject.sealDeterministically(plaintext, path: finding.path, key: keys.batches))
                guard let sealed = try await remote.get(finding.path, limit: RemoteLayout.maxObjectSize(forPath: finding.path)) else { return nil }
                _ = try openDelta(sealed, replica: me, seq: seq)
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
            if let path = try await snapshotUnderANewName(), try await fetchSnapshot(path, into: &unused) != nil {
                for index in forgotten {
                    scan.report.findings[index].repair = "published again in snapshot \(path) (this replica no longer holds the batch's bytes)"
                    scan.report.findings[index].repaired = true
                }
            } else {
                try store.setSyncValue(SyncKey.republishPending, "1")
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
                if case let .delta(_, batch)? = RemoteLayout.parse(finding.path), batch <= seq { fixedByHead.append(index) }
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
                    try await remote.delete(path)
                    if try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path)) == nil {
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
                    try store.setSyncValue(SyncKey.republishPending, "1")
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

    // MARK: Helpers

    /// What to do about a damaged head, batch or snapshot.
    func damagedAction(_ name: RemoteLayout.Name, _ scan: DoctorScan) -> String {
        let me = store.replicaID
        switch name {
        case let .delta(replica, _):
            return replica == me
                ? "`concord doctor --repair` here re-uploads the bytes this replica sealed"
                : "only \(scan.who(replica)) holds the bytes it sealed: run `concord doctor --repair` there; replicas that have not applied it wait, everything else syncs"
        case let .head(replica, _):
            return replica == me
                ? "`concord doctor --repair` here rewrites this replica's head"
                : "\(scan.who(replica)) rewrites it with its next push, or run `concord doctor --repair` there"
        case let .snapshot(replica, _):
            return "replicas ignore it and catch up from batches; \(replica == me ? "this replica's" : scan.who(replica) + "'s") next snapshot (`concord compact`) supersedes it"
        default:
            return "only its writer can replace it"
        }
    }

    /// `millis` for a person: whole days, hours, minutes or seconds.
    static func duration(_ millis: UInt64) -> String {
        for (unit, name) in [(Self.day, "day"), (3_600_000, "hour"), (60_000, "minute")] where millis >= unit && millis % unit == 0 {
            return "\(millis / unit) \(name)\(millis / unit == 1 ? "" : "s")"
        }
        return millis % 1000 == 0 ? "\(millis / 1000) s" : "\(millis) ms"
    }

    static func kind(of error: ConcordError) -> DoctorFinding.Kind {
        switch error.code {
        case .authenticationFailed: .damaged
        case .unsupportedVersion: .newerFormat
        case .unreadableObject, .limitExceeded: .unreadable
        default: .malformed
        }
    }

    /// An error message without its advice to run doctor (this is doctor).
    static func clean(_ message: String) -> String {
        message.replacingOccurrences(of: "; run `concord doctor`", with: "").replacingOccurrences(of: ", run `concord doctor`", with: "")
    }

    /// The files `entries` reference, each with the replica that wrote it.
    static func fileReferences(in entries: some Sequence<Entry>) -> [(hash: ContentHash, writer: ReplicaID)] {
        var seen: [ContentHash: ReplicaID] = [:]
        for entry in entries {
            if case let .file(file) = entry.payload, seen[file.hash] == nil { seen[file.hash] = entry.dot.replica }
        }
        return seen.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
    }

    enum BlobCheck {
        case absent
        case intact
        case damaged(ConcordError)
    }

    /// Streams the blob `keyedName`, decrypting it and checking that its content hashes to
    /// the file its name stands for, in constant memory.
    static func checkBlob(_ remote: any Remote, keyedName: String, contents: SubKey, names: SubKey) async throws(ConcordError) -> BlobCheck {
        let path = RemoteLayout.blob(keyedName: keyedName)
        let verifier = BlobVerifier(key: contents, name: path)
        guard try await remote.getStream(path, write: { chunk in verifier.feed(chunk) }) else { return .absent }
        do throws(ConcordError) {
            let hash = try verifier.finish()
            guard BlobName.keyedName(for: hash, key: names) == keyedName else {
                throw ConcordError(.authenticationFailed, "remote blob \(path) decrypts, but its content (\(hash.hex)) is not the file its name stands for: it was moved or swapped")
            }
            return .intact
        } catch {
            return .damaged(error)
        }
    }
}

/// What one doctor run has seen so far.
struct DoctorScan {
    struct Reference {
        let hash: ContentHash
        let writer: ReplicaID
        let by: String
    }

    var report = DoctorReport()
    var me: ReplicaID?
    /// Paths of planted entries (a link in place of `heads/`, …): what lies behind them is
    /// not reported missing, since nothing can be seen there.
    var blocked: [String] = []
    /// Path → whether the remote holds it, for every object fetched.
    var examined: [String: Bool] = [:]
    /// Heads that authenticated, per replica.
    var heads: [ReplicaID: Set<UInt64>] = [:]
    /// Batches and snapshots there (readable or not), per replica.
    var deltas: [ReplicaID: Set<UInt64>] = [:]
    var snapshots: [ReplicaID: Set<UInt64>] = [:]
    var readHeads: [ReplicaID: [UInt64: Head]] = [:]
    var readDeltas: [ReplicaID: Set<UInt64>] = [:]
    var readSnapshots: [ReplicaID: Set<UInt64>] = [:]
    /// Per replica, the newest seq of it a readable snapshot (of any replica) covers.
    var coverage: [ReplicaID: UInt64] = [:]
    var blobs: Set<String> = []
    var damagedBlobs: [String: ConcordError] = [:]
    /// Files referenced by readable batches and snapshots, by keyed name.
    var references: [String: Reference] = [:]
    var names: [ReplicaID: String] = [:]
    private var keys: Set<String> = []

    mutating func add(_ kind: DoctorFinding.Kind, _ path: String, _ replica: ReplicaID?, _ message: String, _ action: String) {
        if [.missingBatch, .missingHead, .remoteEmptied, .remoteRolledBack, .missingFile].contains(kind),
           blocked.contains(where: { path.hasPrefix($0 + "/") || path == $0 }) || (kind == .remoteEmptied && !blocked.isEmpty) {
            return  // behind a planted entry: nothing can be seen there, so nothing is "missing"
        }
        guard keys.insert(kind.name + " " + path).inserted else { return }
        report.findings.append(DoctorFinding(path: path, kind: kind, replica: replica, message: message, action: action))
    }

    func hasFinding(at path: String) -> Bool {
        report.findings.contains { $0.path == path }
    }

    mutating func reference(_ keyed: String, _ hash: ContentHash, _ writer: ReplicaID, by path: String) {
        if references[keyed] == nil { references[keyed] = Reference(hash: hash, writer: writer, by: path) }
    }

    /// A replica as a person knows it: its device name and id, or its id.
    func who(_ replica: ReplicaID) -> String {
        let id = replica == me ? "\(replica), this replica" : replica.description
        return names[replica].map { "\"\($0)\" (\(id))" } ?? id
    }
}

extension RemoteLayout.Name {
    /// The replica whose object this is, if it is one replica's.
    var replica: ReplicaID? {
        switch self {
        case let .head(replica, _), let .delta(replica, _), let .snapshot(replica, _): replica
        case .manifest, .blob: nil
        }
    }
}

/// Decrypts a blob stream chunk by chunk as it arrives and hashes the plaintext. The first
/// failure is kept (and later chunks ignored), so the download itself never throws for a
/// damaged blob.
final class BlobVerifier {
    private let key: SubKey
    private let name: String
    private var buffer: [UInt8] = []
    private var decryptor: BlobDecryptor?
    private var hasher: ContentHasher? = ContentHasher()
    private var finished = false
    private var failure: ConcordError?

    init(key: SubKey, name: String) {
        self.key = key
        self.name = name
    }

    func feed(_ chunk: [UInt8]) {
        guard failure == nil else { return }
        buffer += chunk
        do throws(ConcordError) { try drain(final: false) } catch { failure = error }
    }

    private func drain(final: Bool) throws(ConcordError) {
        if decryptor == nil {
            guard buffer.count >= BlobStream.headerByteCount || final else { return }
            decryptor = try BlobDecryptor(header: buffer.prefix(BlobStream.headerByteCount), key: key, name: name)
            buffer.removeFirst(min(buffer.count, BlobStream.headerByteCount))
        }
        while buffer.count >= BlobStream.frameByteCount || (final && !buffer.isEmpty) {
            guard !finished else {
                throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it has data after its final chunk; it was modified")
            }
            let count = min(buffer.count, BlobStream.frameByteCount)
            let plaintext = try decryptor!.open(frame: buffer.prefix(count))
            buffer.removeFirst(count)
            hasher!.update(plaintext)
            finished = decryptor?.isFinished ?? false
        }
    }

    /// The content hash, once the whole stream authenticated.
    func finish() throws(ConcordError) -> ContentHash {
        if let failure { throw failure }
        try drain(final: true)
        guard decryptor != nil else {
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it is empty; it was truncated")
        }
        try decryptor?.finish()
        return hasher.take()!.finalize()
    }
}
