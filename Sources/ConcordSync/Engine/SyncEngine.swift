import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

/// Replicas converge by shipping encrypted delta batches through a ``/ConcordRemote/Remote``
/// that can only put, get, list and delete whole objects (docs/ARCHITECTURE.md §4–§5).
///
/// One engine per store; its methods run one at a time (an actor). Push seals the outbox,
/// uploads the batch's files, then the batch, then the head — and after a crash re-sends
/// exactly the same bytes. Pull lists the heads, fetches batches past what the store has
/// applied, authenticates each, applies them in causal order one transaction each, and
/// fetches the files they hold back. A torn, tampered or missing object is "not there yet":
/// it applies nothing, and every other object still syncs.
public actor SyncEngine {
    public let store: Store
    public let remote: any Remote
    let clock: any PhysicalClock
    let maxClockDrift: UInt64
    /// The keys of the current key generation (what is sealed now) and of every generation
    /// this replica holds (what it opens): ``adopt(_:adopted:)`` replaces them.
    var keys: Keys
    /// Opens what this engine fetches: batches, snapshots, heads.
    var objects: RemoteObjects
    /// The one door for writes to the remote.
    var writes: RemoteWrites
    /// Generation 0's key: the key of `concord.json`, as unlocked.
    let baseKey: StoreKey
    let storeID: StoreID
    let snapshotEvery: UInt64?
    /// Compaction shares another replica's snapshot, instead of writing one, when it leaves
    /// at most this many of this replica's pushed batches out (they wait for the next).
    public nonisolated let snapshotSlack: UInt64
    /// How long a replica may stay silent (no head written) before the others treat it as
    /// retired: excluded from "every active replica has applied" (docs/ARCHITECTURE.md §4).
    public nonisolated let retention: UInt64
    /// How old an unreferenced remote file must be before the sweep deletes it: longer
    /// than any upload may take to be followed by its batch (docs/ARCHITECTURE.md §4).
    public nonisolated let blobGracePeriod: UInt64
    /// How often a sync also lists every replica's batches, to find one that vanished while
    /// its head stayed (a folder emptied by hand, a sync client deleting what it took for a
    /// conflict) and publish it again from local state.
    public nonisolated let lossCheckInterval: UInt64
    /// How many requests a sync keeps in flight at once: batches fetched ahead by pull,
    /// batches put by push. Over a link with latency this divides a backlog's time by as
    /// much; memory stays at this many batches. 1 makes every request in order, one at a
    /// time (what a seeded fault injector needs to replay a schedule).
    public nonisolated let requestsInFlight: Int
    /// A day, in milliseconds.
    public static let day: UInt64 = 86_400_000
    let updates = Broadcaster<SyncProgress>(bufferingPolicy: .bufferingNewest(256))
    /// Files this sync found torn, tampered, too large or not a file at their names: not
    /// fetched again before the next sync, however often a batch or snapshot needing them is
    /// tried (``fetchFiles(_:of:into:)``). So each costs at most its encrypted size a sync.
    var rejectedFiles: Set<ContentHash> = []
    /// In a shared store, checks what is fetched and signs what is written.
    let gate: SignatureGate
    /// This device's identity: it signs what this replica writes to a shared store, and
    /// opens the key generations sealed to it.
    public nonisolated let identity: DeviceIdentity?
    /// Files being fetched on demand, shared by every reader that waits for one
    /// (``localFile(_:)``).
    var onDemand = OnDemandDownloads()
    /// The key objects the last listing showed that were left aside — torn, not key objects,
    /// or unauthentic (not made by an owner, or their attestation does not verify) — each with
    /// why: the sync's report and `doctor` name them.
    var keyObjectsRejected: [(path: String, error: ConcordError)] = []
    /// The peer announcements the last listing of `heads/` showed, and what reading each gave
    /// (``discoveredPeers()``).
    var announcements = AnnouncementsSeen()

    /// Progress of every sync from now on, as it happens (phase, objects and bytes done of
    /// total); ends when the engine goes away.
    public nonisolated func progressUpdates() -> AsyncStream<SyncProgress> {
        updates.subscribe()
    }

    /// An engine for `store` over `remote`, whose `concord.json` `key` was unlocked with
    /// (``unlock(_:passphrase:)``).
    ///
    /// ```swift
    /// let (key, storeID) = try await SyncEngine.unlock(remote, passphrase: passphrase)
    /// let engine = SyncEngine(store: store, remote: remote, key: key, storeID: storeID)
    /// try await engine.sync()
    /// ```
    ///
    /// The first sync records the remote's store id; a later
    /// sync against a remote deleted and re-created (another id) is refused.
    /// `snapshotEvery`: after a push, write a snapshot once this many batches have been
    /// pushed since the last one (nil: only when asked, or by ``compact(batchGracePeriod:)``).
    /// `snapshotSlack`: compaction shares another replica's snapshot when it leaves at most
    /// this many of this replica's batches out (0: a replica always writes its own).
    /// `retention`: silence after which a replica counts as retired (default 90 days).
    /// `blobGracePeriod`: the least age of a remote file the sweep deletes (default 7 days).
    /// `lossCheckInterval`: how often a sync lists every batch for vanished ones (default an
    /// hour; 0: every sync). `requestsInFlight`: how many requests a sync keeps in flight
    /// (default 8; at least 1). `identity`: this device's identity, which signs everything
    /// it writes once the store is shared (docs/ARCHITECTURE.md §5, "Signatures") and opens
    /// the key generations an owner's rotation sealed to it (``rotateStoreKey(recipients:)``);
    /// nil for a device without one (it cannot write to a shared store, and a store whose key
    /// was rotated reads as one this replica was removed from).
    public init(
        store: Store, remote: any Remote, key: StoreKey, storeID: StoreID,
        clock: any PhysicalClock = SystemClock(), maxClockDrift: UInt64 = 60_000, snapshotEvery: UInt64? = 64,
        snapshotSlack: UInt64 = 4, retention: UInt64 = 90 * SyncEngine.day, blobGracePeriod: UInt64 = 7 * SyncEngine.day,
        lossCheckInterval: UInt64 = 3_600_000, requestsInFlight: Int = 8, identity: DeviceIdentity? = nil
    ) {
        self.requestsInFlight = max(1, requestsInFlight)
        self.lossCheckInterval = lossCheckInterval
        self.snapshotEvery = snapshotEvery
        self.snapshotSlack = snapshotSlack
        self.retention = retention
        self.blobGracePeriod = blobGracePeriod
        self.store = store
        self.remote = remote
        self.baseKey = key
        // The key generations this replica knew when it last synced; the first sync reads
        // them again (and throws what reading them throws).
        let known = try? Self.keptKeyObjects(in: store)
        let keys = Keys(key, keyring: known.flatMap { try? Keyring(base: key, objects: $0, identity: identity) })
        self.keys = keys
        let gate = SignatureGate(identity: identity)
        self.identity = identity
        self.gate = gate
        self.objects = RemoteObjects(remote: remote, keys: keys, gate: gate)
        self.writes = RemoteWrites(remote: remote, keys: keys, gate: gate)
        self.storeID = storeID
        Self.loadKeptMembership(store, storeID: storeID, into: gate)
        self.clock = clock
        self.maxClockDrift = maxClockDrift
    }

    // MARK: The remote store's manifest

    /// Creates a remote store protected by `passphrase`: a fresh store key and
    /// `concord.json`. Fails if the remote already holds a store.
    ///
    /// ```swift
    /// let remote = try FolderRemote(root: chosenFolder, createIfMissing: true)
    /// let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: passphrase)
    /// let engine = SyncEngine(store: store, remote: remote, key: key, storeID: storeID)
    /// ```
    ///
    /// The store key is random; `concord.json` holds it wrapped by a key derived from the
    /// passphrase (Argon2id, at `limits`). The passphrase is not stored.
    public static func createRemote(
        _ remote: any Remote, passphrase: String, limits: PasswordHashLimits = .interactive
    ) async throws(ConcordError) -> (key: StoreKey, storeID: StoreID) {
        if try await remote.getManifest() != nil {
            throw ConcordError(.invalidOperation, "the remote already holds a Concord store; unlock it instead of creating one")
        }
        let key = StoreKey.random()
        let manifest = try StoreManifest.create(storeKey: key, passphrase: passphrase, limits: limits)
        try await RemoteWrites.putManifest(manifest.jsonBytes(), to: remote)
        return (key, manifest.storeID)
    }

    /// Reads `concord.json` and unlocks the store key with `passphrase`. A wrong passphrase
    /// is reported here, before anything else is read or applied.
    ///
    /// ```swift
    /// let unlocked = try await SyncEngine.unlock(remote, passphrase: passphrase)
    /// let engine = SyncEngine(store: store, remote: remote, key: unlocked.key, storeID: unlocked.storeID)
    /// ```
    ///
    /// - Throws: `ConcordError` with code `wrongKey` for a wrong passphrase, `notFound` when
    ///   the remote holds no store.
    public static func unlock(_ remote: any Remote, passphrase: String) async throws(ConcordError) -> (key: StoreKey, storeID: StoreID) {
        let manifest = try await manifest(of: remote)
        return (try manifest.unlock(passphrase: passphrase), manifest.storeID)
    }

    /// Reads `concord.json` and checks that `key` (from a key file) is this store's key.
    public static func unlock(_ remote: any Remote, key: StoreKey) async throws(ConcordError) -> StoreID {
        let manifest = try await manifest(of: remote)
        try manifest.verify(key)
        return manifest.storeID
    }

    /// Changes the passphrase: rewraps the store key; no data is re-encrypted.
    public static func changePassphrase(_ remote: any Remote, from old: String, to new: String) async throws(ConcordError) {
        let manifest = try await manifest(of: remote)
        try await RemoteWrites.putManifest(try manifest.changingPassphrase(from: old, to: new).jsonBytes(), to: remote)
    }

    static func manifest(of remote: any Remote) async throws(ConcordError) -> StoreManifest {
        guard let bytes = try await remote.getManifest() else {
            throw ConcordError(.notFound, "the remote holds no Concord store (no concord.json); create one with `concord remote set`")
        }
        return try StoreManifest(json: bytes)
    }

    /// Throws unless the remote still holds the store this engine (and the local store)
    /// synced with.
    /// A remote without `concord.json`, or with a damaged one, gets back the copy this
    /// replica keeps, when it is of this store (``restoreManifest(_:from:)``).
    func checkStoreIdentity() async throws(ConcordError) {
        let manifest: StoreManifest
        do {
            manifest = try await Self.manifest(of: remote)
        } catch where error.code == .notFound || error.code == .malformed {
            guard let kept = try Self.keptManifest(in: store), kept.storeID == storeID,
                  let restored = try await Self.restoreManifest(remote, from: store) else { throw error }
            manifest = restored
        }
        let current = manifest.storeID
        guard current == storeID else {
            throw ConcordError(.storeMismatch, Self.storeChangedMessage(found: current.hex, recorded: storeID.hex, at: "the remote"))
        }
        try checkRecordedStoreID()
        try store.setSyncState(.remoteStoreID, storeID.bytes)
        try Self.keepManifest(manifest, in: store)
    }

    /// The first sync, compaction or snapshot (and the first of a store that keeps no copy
    /// of `concord.json` yet) reads `concord.json` and keeps a copy; later ones check the id
    /// recorded then, at no cost.
    func checkStoreIdentityOnce() async throws(ConcordError) {
        let recorded = try store.syncState(.remoteStoreID)
        let kept = try store.syncState(.manifest)
        if recorded == nil || kept == nil {
            try await checkStoreIdentity()
        } else {
            try checkRecordedStoreID()
        }
    }

    /// Throws unless this engine's store id (read from `concord.json` when it was unlocked)
    /// is the one the local store recorded at its first sync. Costs no request.
    func checkRecordedStoreID() throws(ConcordError) {
        if let recorded = try Self.remoteStoreID(in: store), recorded != storeID.hex {
            throw ConcordError(.storeMismatch, Self.storeChangedMessage(found: storeID.hex, recorded: recorded, at: "the remote"))
        }
    }

    /// The one line that says the remote's `concord.json` is another store's.
    public static func storeChangedMessage(found: String, recorded: String, at place: String) -> String {
        "the store changed: \(place) holds store \(found), but this replica synced with store \(recorded) (its concord.json was replaced, or the store deleted and re-created); nothing was merged or written — restore the old concord.json or folder, or sync a new local store with it"
    }

    // MARK: Sync

    /// Syncs once: pull (unless push-only), then push (unless pull-only).
    ///
    /// ```swift
    /// let report = try await engine.sync()  // pull, then push
    /// print("applied \(report.applied) batch(es), pushed \(report.pushed)")
    /// try await engine.sync(mode: .pullOnly)  // apply what others pushed, send nothing
    /// ```
    ///
    /// `progress` is called as the sync goes (``progressUpdates()`` reports every sync's).
    ///
    /// A store that turns out to be an older copy of itself — restored from a backup after
    /// it had pushed more — continues under a new replica id (``SyncReport/restoredCopy``):
    /// the old id's newer history is pulled from the remote like another replica's, and the
    /// writes made since the restore are pushed under the new id. No batch name is ever
    /// given other contents, and nothing is lost.
    @discardableResult
    public func sync(mode: SyncMode = .twoWay, progress: (@Sendable (SyncProgress) -> Void)? = nil) async throws(ConcordError) -> SyncReport {
        logger(ConcordLogLabel.sync).debug("sync started", metadata: ["mode": "\(mode)"])
        rejectedFiles = []
        do {
            let report: SyncReport
            do throws(ConcordError) {
                report = try await sync(mode: mode, progress: progress, restoredCopy: nil)
            } catch where error.code == .membershipUnknown {
                // The store was shared since this replica last read its members: read them,
                // and sync again (everything the first attempt did is safe to do again).
                var members = SyncReport()
                try await refreshMembership(into: &members)
                report = try await sync(mode: mode, progress: progress, restoredCopy: nil)
            }
            log(report, mode: mode)
            return report
        } catch {
            logger(ConcordLogLabel.sync).debug("sync failed: \(error.message)", metadata: ["code": "\(error.code)"])
            throw error
        }
    }

    private func sync(mode requested: SyncMode, progress: (@Sendable (SyncProgress) -> Void)?, restoredCopy: IdentityChange?) async throws(ConcordError) -> SyncReport {
        try await checkStoreIdentityOnce()
        var report = SyncReport()
        report.restoredCopy = restoredCopy
        // A shared store: its members first (this device may have been removed), and a
        // device that may not write only pulls.
        try await refreshMembershipIfShared(into: &report)
        let mode = writeRefusal().map { refusal in
            report.readOnly = refusal
            return SyncMode.pullOnly
        } ?? requested
        var heads = try await listHeads()
        // A replica removed from the store (``listHeads()`` read the key generations) stops here.
        try checkNotRemoved()
        // An owner's removal of a member whose key rotation a crash left undone.
        if mode != .pullOnly, try store.sharingRecord(.rotationPending) == "1" {
            try await finishPendingRotation()
            heads = try await listHeads()
        }
        report.rejected += heads.rejected
        // The store's file is a copy: it continues under a new id, whatever the remote shows.
        if try await continueUnderANewIDIfFileCopied(oldHead: heads.read[store.replicaID], into: &report) { heads = try await listHeads() }
        // An authentic head of this replica newer than anything it sealed: this store is an
        // older copy of itself (restored from a backup). It continues under a new id.
        let sealed = try store.sealedSeq()
        if let remoteSeq = heads.latest[store.replicaID], remoteSeq > sealed {
            report.restoredCopy = try await recoverRestoredCopy(
                evidence: "its head \(RemoteLayout.head(store.replicaID, seq: remoteSeq)) names batch \(remoteSeq); this store sealed up to \(sealed)",
                oldHead: heads.read[store.replicaID], into: &report)
            heads = try await listHeads()
        }
        // Batches of the old id that no head announced, if this store just turned out to be
        // an older copy of itself: announced, so the pull below (and every replica's) applies them.
        if !(try await announceOrphanedBatches(heads, into: &report)).isEmpty { heads = try await listHeads() }
        // Our pushed head is missing (or unreadable): the remote may have been re-created.
        if try pushedSeq() > 0 && heads.latest[store.replicaID] == nil { try await checkStoreIdentity() }
        // A replica's first two-way sync announces it before it applies anything: a purge
        // elsewhere then lists its head, and waits for it, before it can hold anything that
        // a deletion it has not seen would purge (``purgeDelay``). (A pull-only sync writes
        // nothing to the remote.)
        if mode == .twoWay, heads.latest[store.replicaID] == nil, try store.syncState(.headAdvertised) == nil {
            try await putHead(seq: try pushedSeq())
        }
        let emit = { @Sendable (update: SyncProgress) in
            progress?(update)
            self.updates.publish(update)
        }
        do throws(ConcordError) {
            // Objects the remote lost (rolled back, restored, deleted): published again.
            let announced = report.announcedOrphans.count
            let republished = try await republishWhatTheRemoteLost(heads, into: &report)
            if !republished.isEmpty { report.remoteRolledBack = republished }
            // Batches nobody announced, announced now: pulled by this sync too.
            if report.announcedOrphans.count > announced { heads = try await listHeads() }
            if mode != .pullOnly, try await continueUnderANewIDAfterOwnLoss(into: &report) { heads = try await listHeads() }
            // Forks of a replica's history: what heads say of them, and the merges that can be
            // made now. A store that must rename its side applies nothing before it has (its
            // own changes are sealed first, by the push).
            try await learnForks(&heads)
            var forks = try await mergeForks(into: &report)
            if mode != .pushOnly {
                try await bootstrapIfNew(into: &report)
                if !forks.waiting {
                    try await pull(heads, into: &report, progress: emit)
                    try await applyRenamedSides(heads, into: &report)
                }
                try await fetchWantedFiles(into: &report, progress: emit)
            }
            if mode != .pullOnly { try await push(into: &report, progress: emit, listed: heads.all) }
            // Forks the pull named with both sides, or a renamed side whose changes are sealed now.
            let later = try await mergeForks(into: &report)
            forks.merged += later.merged
            if mode != .pushOnly, !later.merged.isEmpty || (forks.waiting && !later.waiting) {
                try await pull(heads, into: &report, progress: emit)
                try await applyRenamedSides(heads, into: &report)
            }
            try await publishMergedForks(forks.merged, mode: mode, into: &report)
        } catch where error.code == .storeRestored && report.restoredCopy == nil {
            // The periodic listing found a batch of this replica past what it sealed, another
            // replica's batch depends on changes it never made, or a batch name of this
            // replica already holds other authentic bytes: this store is an older copy of
            // itself. It continues under a new id and syncs again.
            var again = try await sync(mode: mode, progress: progress, restoredCopy: try await recoverRestoredCopy(evidence: error.message, oldHead: nil, into: &report))
            again.remoteRolledBack = report.remoteRolledBack + again.remoteRolledBack
            again.rejected = report.rejected + again.rejected
            again.forks = report.forks + again.forks.filter { !report.forks.contains($0) }
            return again
        }
        if mode != .pullOnly {
            let pushed = try pushedSeq()
            if let every = snapshotEvery, pushed >= (try snapshotCovered()) + every, !(try store.hasPendingChanges()) {
                report.snapshot = try await writeSnapshot()
            }
        }
        emit(SyncProgress(phase: .done, objectsDone: 0, objectsTotal: 0, bytesDone: 0, bytesTotal: 0))
        return report
    }

    /// The replicas the remote knows, from their heads, with whether each is active or
    /// retired (silent past ``retention``, or forgotten). A replica whose head cannot be
    /// read is left out; `doctor` reports it.
    public func replicas() async throws(ConcordError) -> [ReplicaInfo] {
        let standings = try await standings(try await listHeads())
        for (replica, standing) in standings { if let head = standing.head { try store.noteSchemaVersions(head.schema, of: replica) } }
        return standings.sorted(by: { $0.key < $1.key }).compactMap { replica, standing in
            standing.head.map { head in
                ReplicaInfo(id: replica, deviceName: head.device, lastSync: head.syncedAt, seq: head.seq, status: standing.status, schema: head.schema)
            }
        }
    }

    /// Replicas seen running ahead of this device's clock (rule 7), by the largest amount seen.
    public func clockSkews() throws(ConcordError) -> [ClockSkew] {
        try Self.clockSkews(in: store)
    }

    /// ``clockSkews()`` as `store` recorded them, without an engine or a remote.
    public static func clockSkews(in store: Store) throws(ConcordError) -> [ClockSkew] {
        var skews: [ClockSkew] = []
        for replica in try store.appliedSeqs().keys.sorted() {
            if let ahead = try store.replicaFact(.clockSkew, of: replica) {
                skews.append(ClockSkew(replica: replica, aheadBy: ahead))
            }
        }
        return skews
    }

    /// The seq of the newest batch of `store` confirmed on its remote (0 before the first),
    /// without an engine or a remote.
    public static func pushedSeq(in store: Store) throws(ConcordError) -> UInt64 {
        try store.syncState(.pushedSeq)
    }

    /// The id (hex) of the remote store `store` last synced with, if it synced.
    public static func remoteStoreID(in store: Store) throws(ConcordError) -> String? {
        try store.syncState(.remoteStoreID).map { Hex.encode($0) }
    }

    func pushedSeq() throws(ConcordError) -> UInt64 {
        try Self.pushedSeq(in: store)
    }

    /// The seq of this replica's newest snapshot written (0 before the first).
    func snapshotSeq() throws(ConcordError) -> UInt64 {
        try store.syncState(.snapshotSeq) ?? 0
    }

    /// The newest own seq a snapshot covers, its own or a shared one compaction found.
    func snapshotCovered() throws(ConcordError) -> UInt64 {
        max(try snapshotSeq(), try store.syncState(.snapshotCovered))
    }
}
