import ConcordCore
/// How far a sync has got.
public struct SyncProgress: Hashable, Sendable {
    /// What the sync is doing.
    public enum Phase: String, Hashable, Sendable {
        case listing, downloading, applying, fetchingFiles, uploadingFiles, pushing, done
    }

    public let phase: Phase
    /// The objects of this phase done so far.
    public let objectsDone: Int
    /// How many objects this phase has in all, or nil when that is not known: pull's range
    /// reaches up to a head name whose object did not open (torn, or planted by whoever can
    /// write the storage — `heads/<id>-ffffffffffffffff`), which bounds where pull looks
    /// but counts nothing.
    public let objectsTotal: Int?
    public let bytesDone: UInt64
    public let bytesTotal: UInt64

    public init(phase: Phase, objectsDone: Int, objectsTotal: Int?, bytesDone: UInt64, bytesTotal: UInt64) {
        self.phase = phase
        self.objectsDone = objectsDone
        self.objectsTotal = objectsTotal
        self.bytesDone = bytesDone
        self.bytesTotal = bytesTotal
    }
}

/// What one sync did.
public struct SyncReport: Hashable, Sendable {
    /// Deltas of other replicas applied.
    public var applied = 0
    /// Deltas of this replica pushed.
    public var pushed = 0
    /// Files downloaded and uploaded.
    public var filesFetched = 0
    public var filesUploaded = 0
    /// Remote objects that failed authentication or were malformed: skipped, not applied.
    /// In a shared store, also each unauthentic object (see ``SyncEngine/members()``).
    public var rejected: [String] = []
    /// Set when this device may not write to the shared store (it has no identity, is not
    /// a member, or is a reader): the sync only pulled, and says why.
    public var readOnly: String?
    /// Set when this store turned out to be an older copy of itself (restored from a
    /// backup): it continues under a new replica id, and the old id's history it lacked
    /// is pulled like any other replica's (``SyncEngine/sync(mode:progress:)``).
    public var restoredCopy: IdentityChange?
    /// Batches of a restored copy's old id that its lost store had uploaded but no head
    /// announced: this sync announced them, so every replica applies them.
    public var announcedOrphans: [String] = []
    /// The objects this sync published again because the remote no longer held them
    /// (it was rolled back, restored from an older copy, or objects were deleted): this
    /// replica's own batches (the exact bytes it sealed), its head, and a snapshot for
    /// what it applied from others. Empty when the remote held everything.
    public var remoteRolledBack: [String] = []
    /// Whether this sync made the periodic listing of every batch
    /// (``SyncEngine/lossCheckInterval``).
    public var lossChecked = false
    /// Deltas seen but not yet applicable (their dependencies or files are not there yet).
    public var waiting = 0
    /// Replicas whose clocks run ahead.
    public var skews: [ClockSkew] = []
    /// The snapshot a new replica started from, if it did in this sync.
    public var bootstrapped: String?
    /// The snapshot this sync wrote, if the threshold was reached.
    public var snapshot: String?
    /// Snapshots joined to catch up past compacted batches.
    public var joinedSnapshots: [String] = []
    /// Replicas whose history this sync found forked: two copies of one replica id wrote
    /// different batches under one name. Their batches past the fork are not applied until
    /// the fork is merged; the sync that merges one reports it once more, `merged`.
    public var forks: [HistoryFork] = []
    /// What the prefetch after the pull did, when it wanted anything
    /// (``SyncEngine/prefetchFiles(below:progress:)``).
    public var prefetch: FilePrefetchReport?

    public init() {}
}

/// Two histories under one replica id, found by a sync or by doctor: a batch under a name
/// this replica applied holds other contents now, or the replica's next batch follows
/// another batch than the one applied here under the name before it. It happens when a
/// device is restored from a backup while the storage is rolled back to the same moment,
/// so that nothing tells the device its next batch name was used already
/// (docs/ARCHITECTURE.md §4, "A fork of a replica's history").
public struct HistoryFork: Hashable, Sendable {
    /// The replica whose history forked.
    public let replica: ReplicaID
    /// The remote name where the histories part: the batch applied here under it differs
    /// from the history on the remote.
    public let batch: String
    /// What showed it, in one sentence.
    public let evidence: String
    /// Whether this sync merged it (docs/ARCHITECTURE.md §4, "Merging a fork"): one side's
    /// writes past the common prefix continue as another replica's, and both sides reach
    /// every replica. A merged fork is reported once, by the sync that merged it.
    public let merged: Bool

    public init(replica: ReplicaID, batch: String, evidence: String, merged: Bool = false) {
        self.replica = replica
        self.batch = batch
        self.evidence = evidence
        self.merged = merged
    }
}

/// Whether a sync sends, receives, or both.
public enum SyncMode: String, Hashable, Sendable {
    /// Pull then push.
    case twoWay
    /// Only push local changes (a backup).
    case pushOnly
    /// Only apply remote changes (a mirror).
    case pullOnly
}

/// A replica id a store gave up for a new one, because the store was an older copy of
/// itself: pushing on under the old id would have reused batch names.
public struct IdentityChange: Hashable, Sendable {
    /// The id the copy had, which the remote holds more history of.
    public let old: ReplicaID
    /// The id it continues under.
    public let new: ReplicaID
    /// What showed that the store is an older copy.
    public let evidence: String
}
