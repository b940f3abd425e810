import ConcordCore
import ConcordStore
import Foundation

/// A replica's head on the remote, `heads/<replica>-<seq>` (docs/ARCHITECTURE.md §4): what it
/// has sealed and applied, when it last synced, and its device name. Sealed with the heads'
/// sub-key (`KeyPurpose.heads`, sub-key id 2, whose name keeps the former word "manifests");
/// the name already says the replica's newest seq, so an idle pull needs only the listing.
///
/// Versioned by its `format` key (docs/FORMAT.md §8.3): absent in every head this release
/// writes (format 1); a reader refuses any other value as a newer format. A key this
/// release does not know is ignored, so adding an optional key is not a new format.
public struct Head: Codable, Hashable, Sendable {
    /// The head's format: nil (absent) for format 1, the only one.
    public var format: UInt64?
    /// The replica's id (32 hex digits).
    public var replica: String
    /// The seq of its newest pushed delta.
    public var seq: UInt64
    /// Its device name, if set.
    public var device: String?
    /// When it last synced, in milliseconds since the epoch.
    public var syncedAt: UInt64
    /// Per origin (32 hex), the seq of the newest delta it has applied.
    public var applied: [String: UInt64]
    /// The version vector of everything it has applied (origin → hlc).
    public var vector: [String: UInt64]
    /// Replicas this one retired explicitly (`concord replicas forget`): replica (32 hex) →
    /// the newest seq of it that was on the remote then. A head of that replica with a
    /// greater seq means it came back. Absent in heads that retired none.
    public var retired: [String: UInt64]?
    /// The seq of its newest snapshot, if it wrote one: the file sweep reads it even when a
    /// listing misses it.
    public var snapshot: UInt64?
    /// What it had applied (origin → hlc) when its outbox was last empty and sealed up to
    /// `seq`: every write it made before it had applied that much is in its batches up to
    /// `seq`. A deletion every active replica's `stable` covers is causally stable, and
    /// the deleted record's metadata can be purged. Absent while it had unsealed changes.
    public var stable: [String: UInt64]?
    /// The schema versions it writes and reads, and the minimum it requires, when its app
    /// declares any (README, "Evolving your model"). Absent in heads of replicas that
    /// declare none, and of releases before it.
    public var schema: SchemaVersions?
    /// The forks of replicas' histories this replica knows (docs/ARCHITECTURE.md §4,
    /// "Merging a fork"), so that the replicas holding the other side learn both sides.
    /// Absent in heads of replicas that know none, and of releases before it.
    public var forks: [HeadFork]?

    /// Replica-keyed values as heads hold them: keyed by the replica's 32 hex digits.
    static func hexKeyed(_ values: [ReplicaID: UInt64]) -> [String: UInt64] {
        Dictionary(uniqueKeysWithValues: values.map { ($0.key.description, $0.value) })
    }

    /// The values of a head's hex-keyed map whose keys are replica ids (others, which
    /// Concord never writes, are passed over).
    static func replicaKeyed(_ values: [String: UInt64]) -> [ReplicaID: UInt64] {
        var result: [ReplicaID: UInt64] = [:]
        for (id, value) in values {
            if let replica = ReplicaID(hex: id) { result[replica] = value }
        }
        return result
    }

    func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        return Array((try? encoder.encode(self)) ?? Data())
    }

    static func decode(_ bytes: [UInt8], path: String) throws(ConcordError) -> Head {
        let head: Head
        do {
            head = try JSONDecoder().decode(Head.self, from: Data(bytes))
        } catch {
            throw ConcordError(.malformed, "remote head \(path) does not parse: \(error); run `concord doctor`", cause: error)
        }
        if let format = head.format, format != 1 {
            throw ConcordError(.unsupportedVersion, "remote head \(path) is of format \(format), which this release does not read: upgrade Concord")
        }
        return head
    }
}

/// A fork of a replica's history as a head tells it: the replica (32 hex), the seq where
/// its histories part, the last stamp of their common prefix, the fingerprints of the
/// sides' batches at that seq known to the head's replica (16 hex digits each, one or two),
/// and, once it merged the fork, the side it held and the newest own seq sealed before.
public struct HeadFork: Codable, Hashable, Sendable {
    public var replica: String
    public var seq: UInt64
    public var after: UInt64
    public var sides: [String]
    public var held: String?
    public var through: UInt64?
}

/// One replica as the remote shows it.
public struct ReplicaInfo: Hashable, Sendable {
    public let id: ReplicaID
    public let deviceName: String?
    /// When it last synced, in milliseconds since the epoch.
    public let lastSync: UInt64
    /// The seq of its newest pushed delta.
    public let seq: UInt64
    /// Whether compaction waits for it (active), or treats it as retired.
    public let status: ReplicaStatus
    /// The schema versions its head says it uses, if it says any.
    public var schema: SchemaVersions? = nil
}

/// A replica whose stamps run ahead of this device's clock by more than the allowed drift
/// (docs/ARCHITECTURE.md §2, rule 7): applied anyway, and reported.
public struct ClockSkew: Hashable, Sendable {
    public let replica: ReplicaID
    /// How far ahead, in milliseconds.
    public let aheadBy: UInt64
}
