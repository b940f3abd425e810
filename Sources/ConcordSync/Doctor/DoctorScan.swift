import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

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
    /// Path → the size its listing gave (when not 0): a file is read no further than that,
    /// so a server that sends more than it lists cannot make a check endless.
    var listedSizes: [String: UInt64] = [:]
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
        case let .head(replica, _), let .batch(replica, _), let .snapshot(replica, _): replica
        case .manifest, .blob, .storeManifest, .memberLog, .grant, .keyObject, .announcement: nil
        }
    }
}
