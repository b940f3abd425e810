import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

extension SyncEngine {
    /// The heads a listing shows, with what a name claims counted only once its object
    /// authenticates.
    ///
    /// A head's name says its replica's newest seq, so an idle pull needs only the listing.
    /// But anyone who can write the remote can plant a name (`heads/<id>-ffffffffffffffff`)
    /// without the store key. A name that claims nothing this replica does not already
    /// know (a seq it has applied, or pushed itself) costs nothing to believe; a name that
    /// claims more is opened first, and counts only if it authenticates under its own path
    /// and holds that replica's head at that seq. Otherwise the next lower name of the same
    /// replica is tried, and the bad one is reported in ``rejected``.
    struct Heads {
        /// Per replica, the newest head seq that is authenticated or claims nothing new.
        var latest: [ReplicaID: UInt64] = [:]
        /// Every listed head name, as listed (to delete this replica's older heads).
        var all: [(replica: ReplicaID, seq: UInt64)] = []
        /// The heads opened while listing, by replica (the one at ``latest``).
        var read: [ReplicaID: Head] = [:]
        /// Head objects that failed to open, each with why: reported, never believed.
        var rejected: [String] = []
        /// Per replica, the greatest seq a head name claimed whose object did not open (torn
        /// by an interrupted rewrite, or planted). Believed for nothing but as a bound for
        /// pull to look for batches — each of which authenticates on its own — so that a
        /// torn head whose writer never comes back does not hide its batches for ever.
        var unconfirmed: [ReplicaID: UInt64] = [:]
        /// Replicas whose head at ``latest`` did not open (or did not when last read, and is
        /// unchanged since): not read again for this listing's standings.
        var unopened: Set<ReplicaID> = []
        /// The key generations whose key objects (`heads/keys/<id>`) the listing shows.
        var keyObjects: [KeyGenerationID] = []

        /// How far pull looks for `replica`'s batches: its authenticated head, or further up
        /// to an unconfirmed claim.
        func reach(_ replica: ReplicaID) -> UInt64 {
            max(latest[replica] ?? 0, unconfirmed[replica] ?? 0)
        }
    }

    /// How many head names that did not open a store remembers (``listHeads()``): past
    /// that, further ones are read again on each sync, as before.
    static let maxRememberedUnopened = 1 << 18

    /// Lists `heads/` and authenticates every name that claims more than this replica
    /// knows (one `get` per replica with news; none when idle).
    ///
    /// A name whose object did not open is remembered with its listed size and time
    /// (``ConcordStore/Store/unopenedHeads()``, at most ``maxRememberedUnopened`` of them): while a
    /// listing shows it unchanged it is not read again. Of a replica this one knows (one
    /// whose head authenticated here once, or whose changes it applied) it still counts as
    /// a failed read — reported, and a bound for pull (``Heads/unconfirmed``); of any other
    /// it claims nothing, not even that, so 100,000 planted names cost one listing per
    /// sync, not 100,000 reads and 100,000 walks, and one line in ``rejected``. A name that
    /// changes (a torn head its writer put again) is read again. One that a listing gives
    /// neither size nor time for is never remembered.
    func listHeads() async throws(ConcordError) -> Heads {
        var heads = Heads()
        var signatures: [String: ListingSignature] = [:]
        var announced: [RemoteObject] = []
        for object in try await remote.list(prefix: RemoteLayout.headsPrefix) {
            if case .announcement? = RemoteLayout.parse(object.path) {
                announced.append(object)
                continue
            }
            if let generation = Self.keyGeneration(at: object.path) {
                heads.keyObjects.append(generation)
                continue
            }
            guard case let .head(replica, seq)? = RemoteLayout.parse(object.path) else { continue }
            heads.all.append((replica, seq))
            if object.size != nil || object.modified != nil {
                signatures[object.path] = ListingSignature(size: object.size, modified: object.modified)
            }
        }
        announcements.listed = announced
        // The key generations the listing shows, before any head is opened: a head sealed
        // under a new generation opens, and is never remembered as unopened for want of it.
        try await readKeyObjects(heads.keyObjects)
        heads.rejected += keyObjectsRejected.map { "\($0.path): \($0.error.code == .unauthentic ? "unauthentic: " : "")\($0.error.message)" }
        let remembered = try store.unopenedHeads()
        var seen = Set(try store.replicaFacts(.seen).keys)
        seen.formUnion(try store.appliedSeqs().keys)
        seen.insert(store.replicaID)
        var passedOver = 0
        var memory: [(path: String, signature: ListingSignature?)] = []
        var rememberedCount = remembered.count
        /// A name that did not open is remembered with its listing signature (up to the cap);
        /// one that opened is forgotten.
        func rememberUnopened(_ path: String) {
            guard let signature = signatures[path], remembered[path] != nil || rememberedCount < Self.maxRememberedUnopened else { return }
            if remembered[path] == nil { rememberedCount += 1 }
            memory.append((path, signature))
        }
        func forgetUnopened(_ path: String) {
            if remembered[path] != nil { memory.append((path, nil)) }
        }
        // Names no longer listed are forgotten (a listing that missed one costs a read).
        for path in remembered.keys where signatures[path] == nil && !heads.all.isEmpty {
            memory.append((path, nil))
            rememberedCount -= 1
        }
        var claims: [ReplicaID: [UInt64]] = [:]
        for (replica, seq) in heads.all { claims[replica, default: []].append(seq) }
        var known = try store.appliedSeqs()
        known[store.replicaID] = max(known[store.replicaID] ?? 0, try pushedSeq())
        // Each replica's claims, newest first, tried in rounds: a claim this replica knows
        // is believed; the others of a round are opened `requestsInFlight` at a time, so
        // ten replicas with news cost one round trip over a slow link, not ten.
        var candidates = claims.sorted(by: { $0.key < $1.key }).map { ($0.key, Set($0.value).sorted(by: >)[...]) }
        while !candidates.isEmpty {
            var toRead: [(replica: ReplicaID, seq: UInt64)] = []
            for (replica, seqs) in candidates {
                guard let seq = seqs.first else { continue }
                let path = RemoteLayout.head(replica, seq: seq)
                if seq <= known[replica] ?? 0 {
                    heads.latest[replica] = seq
                } else if let signature = signatures[path], remembered[path] == signature {
                    // Did not open before, unchanged since: not read again; the next lower
                    // claim is tried.
                    if seen.contains(replica) {
                        heads.rejected.append("\(path): did not open when last read, and is unchanged since")
                        heads.unconfirmed[replica] = max(heads.unconfirmed[replica] ?? 0, seq)
                    } else {
                        passedOver += 1
                    }
                } else {
                    toRead.append((replica, seq))
                }
            }
            var resolved = Set(heads.latest.keys)
            for window in toRead.chunked(by: requestsInFlight) {
                let outcomes = try await inFlight(window) { (engine, claim) throws(ConcordError) -> Result<Head?, ConcordError> in
                    do throws(ConcordError) {
                        return .success(try await engine.readHead(claim.replica, seq: claim.seq))
                    } catch where Self.isDamage(error) {
                        return .failure(error)
                    }
                }
                for (claim, outcome) in zip(window, outcomes) {
                    switch outcome {
                    case let .success(head?):
                        heads.latest[claim.replica] = claim.seq
                        heads.read[claim.replica] = head
                        resolved.insert(claim.replica)
                        let path = RemoteLayout.head(claim.replica, seq: claim.seq)
                        forgetUnopened(path)
                    case .success(nil):
                        break  // gone since the listing
                    case let .failure(error):
                        let path = RemoteLayout.head(claim.replica, seq: claim.seq)
                        heads.rejected.append("\(path): \(error.message)")
                        heads.unconfirmed[claim.replica] = max(heads.unconfirmed[claim.replica] ?? 0, claim.seq)
                        rememberUnopened(path)
                    }
                }
            }
            candidates = candidates.compactMap { replica, seqs in
                resolved.contains(replica) || seqs.count <= 1 ? nil : (replica, seqs.dropFirst())
            }
        }
        // Every replica whose head authenticates is remembered (``ConcordStore/ReplicaFact/seen``): a
        // later listing that misses it cannot make it unknown to the metadata purge. A
        // replica seen for the first time costs one `get`, once; a name that does not open
        // (a junk `heads/<id>-0000000000000000`, believed without a read since it claims
        // nothing) is remembered like any other, and not read again while unchanged.
        for (replica, seq) in heads.latest.sorted(by: { $0.key < $1.key }) where replica != store.replicaID {
            var head = heads.read[replica]
            let seenAt = try store.replicaFact(.seen, of: replica)
            if head == nil, seenAt == nil {
                let path = RemoteLayout.head(replica, seq: seq)
                if let signature = signatures[path], remembered[path] == signature {
                    heads.unopened.insert(replica)
                    passedOver += 1
                    continue
                }
                do throws(ConcordError) {
                    head = try await readHead(replica, seq: seq)
                } catch where Self.isDamage(error) {
                    heads.unopened.insert(replica)
                    rememberUnopened(path)
                } catch {
                    // The remote failed: read again next time.
                }
                if let head {
                    heads.read[replica] = head
                    forgetUnopened(path)
                }
            }
            if let head, seenAt ?? 0 < head.syncedAt { try store.setReplicaFact(.seen, of: replica, head.syncedAt) }
        }
        try store.setUnopenedHeads(memory)
        try await noteSchemaVersions(heads, signatures)
        if passedOver > 0 {
            heads.rejected.append("\(RemoteLayout.headsPrefix): \(passedOver) head name\(passedOver == 1 ? "" : "s") of replicas never seen did not open when last read and \(passedOver == 1 ? "is" : "are") unchanged since: not read again (`concord doctor` names them)")
        }
        return heads
    }

    /// The head names `heads/` lists, unverified: for deleting this replica's own.
    func listHeadNames() async throws(ConcordError) -> [(replica: ReplicaID, seq: UInt64)] {
        var names: [(replica: ReplicaID, seq: UInt64)] = []
        for object in try await remote.list(prefix: RemoteLayout.headsPrefix) {
            guard case let .head(replica, seq)? = RemoteLayout.parse(object.path) else { continue }
            names.append((replica, seq))
        }
        return names
    }

    /// Errors that say one object is unusable — torn, tampered, moved, of a newer format,
    /// too large, or not a readable file — as opposed to the remote failing. Such an object
    /// is reported and skipped; everything else still syncs.
    static func isDamage(_ error: ConcordError) -> Bool {
        [.authenticationFailed, .unsupportedVersion, .malformed, .truncated, .limitExceeded, .unreadableObject, .unauthentic].contains(error.code)
    }

    /// The head at `heads/<replica>-<seq>`, opened and decoded: nil when the remote has no
    /// such object; throws ``ConcordCore/ConcordError/Code/authenticationFailed`` (torn,
    /// modified), `unsupportedVersion` or `malformed` (it does not parse, or holds another
    /// replica's or seq's head) when it is there but unusable — and whatever the remote
    /// throws when it fails.
    package func readHead(_ replica: ReplicaID, seq: UInt64) async throws(ConcordError) -> Head? {
        try await objects.head(replica, seq: seq)
    }

    /// Writes this replica's head at its pushed seq unless the newest one written already
    /// says everything it would say (``advertisement(of:)``) and is younger than an eighth
    /// of ``retention`` — so a replica that syncs is never taken for a silent one. Returns
    /// whether it wrote one.
    func refreshHead() async throws(ConcordError) -> Bool {
        let head = try currentHead(seq: try pushedSeq())
        let written = try store.syncState(.headWrittenAt)
        let recent = written <= head.syncedAt && head.syncedAt - written <= retention / 8
        guard try store.syncState(.headAdvertised) != Self.advertisement(of: head) || !recent else { return false }
        try await put(head)
        return true
    }

    /// Writes the head `heads/<replica>-<seq>` as this replica would now.
    func putHead(seq: UInt64) async throws(ConcordError) {
        try await put(try currentHead(seq: seq))
    }

    /// The head this replica would write at `seq` now: what it applied, the replicas it
    /// retired, its newest snapshot and its stable vector.
    private func currentHead(seq: UInt64) throws(ConcordError) -> Head {
        var head = Head(
            replica: store.replicaID.description, seq: seq, device: try store.name(),
            syncedAt: clock.millisecondsSinceEpoch(), applied: Head.hexKeyed(try store.appliedSeqs()),
            vector: Head.hexKeyed(try store.versionVector().entries))
        let retired = Head.hexKeyed(try store.replicaFacts(.retired))
        if !retired.isEmpty { head.retired = retired }
        let snapshot = try snapshotSeq()
        if snapshot > 0 { head.snapshot = snapshot }
        head.stable = try store.stableVector(pushedSeq: seq).map { Head.hexKeyed($0.entries) }
        head.schema = try store.schemaVersions()
        head.forks = try headForks()
        return head
    }

    /// What a head says, but for its time: its JSON without `syncedAt`.
    static func advertisement(of head: Head) -> String {
        var timeless = head
        timeless.syncedAt = 0
        return String(decoding: timeless.json(), as: UTF8.self)
    }

    /// Puts `head` and records what it says; a failed put forgets it, since it may have
    /// torn the head that was there.
    private func put(_ head: Head) async throws(ConcordError) {
        do {
            try await writes.putHead(head, of: store.replicaID)
        } catch {
            try store.setSyncState(.headAdvertised, nil)
            throw error
        }
        try store.setSyncState(.headAdvertised, Self.advertisement(of: head))
        try store.setSyncState(.headWrittenAt, head.syncedAt)
    }
}
