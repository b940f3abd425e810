import ConcordCore

/// The names of the objects a store keeps on its remote (docs/ARCHITECTURE.md §4), relative to the
/// store's root:
///
/// ```
/// concord.json                                   the store manifest
/// heads/<replica>-<seq>                          a replica's head
/// heads/keys/<generation>                        a key generation's key object
/// heads/peers/<32 hex>                           a replica's peer announcement (where its
///                                                LAN peer channel listens), named by a keyed tag
/// replicas/<replica>/deltas/<seq>                a replica's delta batch
/// snapshots/<replica>-<seq>                      a full-state snapshot
/// blobs/<2 hex>/<keyed name>                     file contents
/// stores/<store id>/concord.json                 a named store's manifest (its objects live
///                                                below `stores/<store id>/`, a root of its own)
/// members/<32 hex>                               one owner's signed membership operations
/// grants/<64 hex>                                a store key sealed to one member
/// ```
///
/// `<replica>` is 32 lowercase hex digits (``/ConcordCore/ReplicaID/description``), `<seq>` a `UInt64`
/// as exactly 16 lowercase hex digits, `<keyed name>` 64 lowercase hex digits whose first
/// two are the `<2 hex>` folder.
///
/// Rule: every name the store writes is built here, and every name read back from a
/// listing goes through ``parse(_:)``. *Why*: the store's folder is shared with sync
/// clients and people, who leave their own files in it — Dropbox's "conflicted copy",
/// Syncthing's `.sync-conflict-…`, Office's `~$…`, Finder's `.DS_Store`, half-written
/// temporaries. ``parse(_:)`` accepts exactly the names built here (one spelling per
/// object: lowercase hex, fixed lengths), so such files are ignored instead of being
/// mistaken for, or shadowing, the store's own objects. Pure functions: no I/O.
public enum RemoteLayout {
    /// The path of the store manifest.
    public static let manifestPath = "concord.json"
    /// The prefix under which every head lives; listing it is an idle pull's only request.
    public static let headsPrefix = "heads/"
    /// Where key objects are: `heads/keys/<generation id>`, below `heads/` so that the one
    /// listing of `heads/` a sync makes also shows a new key generation.
    public static let keyObjectsPrefix = "heads/keys/"
    /// Where peer announcements are: `heads/peers/<tag>`, below `heads/` so that the one
    /// listing of `heads/` a sync makes also shows them.
    public static let announcementsPrefix = "heads/peers/"
    /// The prefix under which every replica's delta batches live.
    public static let replicasPrefix = "replicas/"
    /// The prefix under which every snapshot lives.
    public static let snapshotsPrefix = "snapshots/"
    /// The prefix under which every blob lives.
    public static let blobsPrefix = "blobs/"
    /// The folder under which every named store of a remote lives, each below
    /// `stores/<store id>/` (32 lowercase hex digits: a random id, never the store's name).
    public static let storesFolder = "stores"
    /// The prefix under which every named store's manifest is listed: `stores/`.
    public static let storesPrefix = "stores/"
    /// The prefix under which a shared store's owners keep their membership operations.
    public static let membersPrefix = "members/"
    /// The prefix under which a shared store's key grants (sealed boxes) live.
    public static let grantsPrefix = "grants/"

    /// The path of one owner's membership log: `members/<tag>`, the tag 32 lowercase hex
    /// digits keyed by the store key (never the owner's public key).
    ///
    /// - Precondition: `tag` is 32 lowercase hex digits.
    public static func memberLog(tag: String) -> String {
        precondition(isStoreID(tag), "a membership log's tag is 32 lowercase hex digits, not \(tag)")
        return membersPrefix + tag
    }

    /// The path of a key grant: `grants/<name>`, 64 lowercase hex digits (the hash of its
    /// sealed bytes: nothing of its recipient).
    ///
    /// - Precondition: ``isKeyedName(_:)`` holds.
    public static func grant(name: String) -> String {
        precondition(isKeyedName(name), "a grant's name is 64 lowercase hex digits, not \(name)")
        return grantsPrefix + name
    }

    /// The path of a named store's manifest seen from the remote's root:
    /// `stores/<store id>/concord.json`.
    ///
    /// - Precondition: ``isStoreID(_:)`` holds.
    public static func storeManifest(_ storeID: String) -> String {
        precondition(isStoreID(storeID), "a store id is 32 lowercase hex digits, not \(storeID)")
        return "\(storesPrefix)\(storeID)/\(manifestPath)"
    }

    /// The path of the key object of generation `id` (32 lowercase hex digits).
    public static func keyObject(_ id: String) -> String {
        precondition(isStoreID(id), "a key generation id is 32 lowercase hex digits, not \(id)")
        return keyObjectsPrefix + id
    }

    /// The path of a replica's peer announcement: `heads/peers/<tag>`, the tag 32 lowercase
    /// hex digits keyed by the store key (never the replica id).
    public static func announcement(tag: String) -> String {
        precondition(isStoreID(tag), "an announcement's tag is 32 lowercase hex digits, not \(tag)")
        return announcementsPrefix + tag
    }

    /// Whether `text` is a store id as folder names spell it: 32 lowercase hex digits.
    public static func isStoreID(_ text: some StringProtocol) -> Bool {
        let bytes = Array(text.utf8)
        return bytes.count == 32 && Hex.isLowercase(bytes)
    }

    /// The path of `replica`'s head named by its last sealed `seq`.
    public static func head(_ replica: ReplicaID, seq: UInt64) -> String {
        "heads/\(replica)-\(hex(seq))"
    }

    /// The prefix under which `replica`'s delta batches live: `replicas/<replica>/deltas/`.
    public static func batchesPrefix(_ replica: ReplicaID) -> String {
        "replicas/\(replica)/deltas/"
    }

    /// The path of `replica`'s delta batch number `seq`.
    public static func batch(_ replica: ReplicaID, seq: UInt64) -> String {
        batchesPrefix(replica) + hex(seq)
    }

    /// The path of `replica`'s snapshot taken at its `seq`.
    public static func snapshot(_ replica: ReplicaID, seq: UInt64) -> String {
        "snapshots/\(replica)-\(hex(seq))"
    }

    /// The path of the blob whose keyed name (64 lowercase hex digits, see
    /// `ConcordCrypto.BlobName`) is `keyedName`: `blobs/<first 2 digits>/<keyedName>`.
    ///
    /// - Precondition: ``isKeyedName(_:)`` holds; any other name is a programming error,
    ///   and a blob stored under it would be invisible to every listing.
    public static func blob(keyedName: String) -> String {
        precondition(isKeyedName(keyedName), "a blob's keyed name is 64 lowercase hex digits, not \(keyedName)")
        return "blobs/\(keyedName.prefix(2))/\(keyedName)"
    }

    /// Whether `name` is a well-formed keyed blob name: 64 lowercase hex digits.
    public static func isKeyedName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return bytes.count == 64 && Hex.isLowercase(bytes)
    }

    /// `seq` as it appears in names: exactly 16 lowercase hex digits.
    public static func hex(_ seq: UInt64) -> String {
        Hex.encode(seq)
    }

    /// One object the store writes, as ``parse(_:)`` reads it back from its path.
    public enum Name: Hashable, Sendable, CustomStringConvertible {
        /// `concord.json`.
        case manifest
        /// `heads/<replica>-<seq>`.
        case head(replica: ReplicaID, seq: UInt64)
        /// `replicas/<replica>/deltas/<seq>`.
        case batch(replica: ReplicaID, seq: UInt64)
        /// `snapshots/<replica>-<seq>`.
        case snapshot(replica: ReplicaID, seq: UInt64)
        /// `blobs/<2 hex>/<keyedName>`.
        case blob(keyedName: String)
        /// `heads/keys/<generation id>`: a key generation's key object (32 lowercase hex).
        case keyObject(id: String)
        /// `stores/<store id>/concord.json`: the manifest of a named store kept below this
        /// root. A store at the root never reads it; the list of a remote's stores does.
        case storeManifest(storeID: String)
        /// `members/<32 hex>`: one owner's membership log (a shared store).
        case memberLog(tag: String)
        /// `grants/<64 hex>`: a store key sealed to one member (a shared store).
        case grant(name: String)
        /// `heads/peers/<32 hex>`: a replica's peer announcement.
        case announcement(tag: String)

        /// The object's path; `RemoteLayout.parse(name.path) == name` for every name.
        public var path: String {
            switch self {
            case .manifest: RemoteLayout.manifestPath
            case let .head(replica, seq): RemoteLayout.head(replica, seq: seq)
            case let .batch(replica, seq): RemoteLayout.batch(replica, seq: seq)
            case let .snapshot(replica, seq): RemoteLayout.snapshot(replica, seq: seq)
            case let .blob(keyedName): RemoteLayout.blob(keyedName: keyedName)
            case let .storeManifest(storeID): RemoteLayout.storeManifest(storeID)
            case let .memberLog(tag): RemoteLayout.memberLog(tag: tag)
            case let .grant(name): RemoteLayout.grant(name: name)
            case let .keyObject(id): RemoteLayout.keyObject(id)
            case let .announcement(tag): RemoteLayout.announcement(tag: tag)
            }
        }

        public var description: String { path }
    }
}
