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
        /// Batches: `replicas/<replica>/deltas/<seq>`.
        public var batches = 0
        public var snapshots = 0
        public var blobs = 0
        public init() {}
        /// Every object counted.
        public var total: Int { manifest + heads + batches + snapshots + blobs }
        /// The batches, under the name of their folder.
        @available(*, deprecated, renamed: "batches")
        public var deltas: Int {
            get { batches }
            set { batches = newValue }
        }
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
        /// In a shared store: it opens, but is not signed by a member who could write it
        /// then — a reader's write, a forged signer, a removed member's later write, or an
        /// unsigned object. Never applied.
        public static let unauthentic = Kind("unauthentic")
        /// It authenticates but does not parse, or holds another object than its name says.
        public static let malformed = Kind("malformed")
        /// Not a readable object: something else stands at its name (a FIFO, a device, a
        /// folder, a symbolic link), or it is larger than its kind's limit — planted, since
        /// Concord writes neither. Skipped by every sync; remove it by hand.
        public static let unreadable = Kind("unreadable")
        /// A head, batch or snapshot that does not open, named beyond anything its replica
        /// announced (a seq more than 65,536 past every authentic head, batch and snapshot
        /// of it; for this replica, past what it sealed) or of a replica nothing authentic shows and
        /// this replica never saw: no replica of the store will write it again. Planted by
        /// whoever can write the storage (or left by an upload whose writer never got
        /// further). Syncs pass it over; `repair` leaves it (Concord deletes nothing it did
        /// not write): remove the file by hand.
        public static let planted = Kind("planted")
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
        /// file of a deleted record. The sweep deletes it after the grace period. A notice.
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
        /// `concord.json` is missing, and this replica keeps a copy of it to put back.
        public static let missingManifest = Kind("missingManifest")
        /// The remote went back in time: it no longer holds batches this replica pushed or
        /// applied (and no snapshot covers them), or this replica's head is behind what it
        /// pushed — restored from an older copy, rolled back, or objects deleted. Every
        /// sync of a replica that holds them publishes them again; so does `--repair`.
        public static let remoteRolledBack = Kind("remoteRolledBack")
        /// A replica's history forked: a batch this replica applied holds other contents
        /// under its name now (``HistoryFork``) — two copies of one replica id wrote under
        /// one name, a device restored from a backup while the storage was rolled back to
        /// the same moment. Neither history's batches past the fork reach the replicas
        /// that applied the other's until a sync merges the fork (docs/ARCHITECTURE.md §4,
        /// "Merging a fork").
        public static let forkedHistory = Kind("forkedHistory")
        /// A notice: a fork of a replica's history that this replica merged — one side's
        /// writes continue as another replica's, and both sides reach every replica.
        public static let mergedHistoryFork = Kind("mergedHistoryFork", isProblem: false)
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
