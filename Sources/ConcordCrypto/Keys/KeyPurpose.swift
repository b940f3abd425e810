/// What a sub-key is for. Each purpose has its own sub-key, derived from the store key with
/// `crypto_kdf_derive_from_key` under the context `"concord1"` and the purpose's sub-key id.
///
/// Rule: one purpose, one key. A batch key never opens a snapshot, a blob-contents key
/// never names a blob. If two purposes shared a key, an object of one kind could be
/// presented as the other and would authenticate.
///
/// The sub-key ids are part of the on-storage format: never renumber one. A new purpose
/// takes a new id. (A struct with static members rather than an enum, so later releases
/// can add purposes without breaking exhaustive switches.)
public struct KeyPurpose: Hashable, Sendable, CustomStringConvertible {
    /// The `crypto_kdf` sub-key id, fixed forever for this purpose.
    public let subkeyID: UInt64
    /// A short name for messages and debugging.
    public let name: String

    init(subkeyID: UInt64, name: String) {
        self.subkeyID = subkeyID
        self.name = name
    }

    /// Name and sub-key id, e.g. `batches#1`.
    public var description: String { "\(name)#\(subkeyID)" }

    /// Seals delta batches under `replicas/<replica>/deltas/<seq>`.
    public static let batches = KeyPurpose(subkeyID: 1, name: "batches")
    /// Seals heads under `heads/<replica>-<seq>`. Its name keeps the heads' former word,
    /// "manifests", as messages have always shown it (sub-key ids, not names, derive keys).
    public static let heads = KeyPurpose(subkeyID: 2, name: "manifests")
    /// Seals snapshots under `snapshots/<replica>-<seq>`.
    public static let snapshots = KeyPurpose(subkeyID: 3, name: "snapshots")
    /// Encrypts blob contents (secretstream) under `blobs/…`.
    public static let blobContents = KeyPurpose(subkeyID: 4, name: "blobContents")
    /// Keys the BLAKE2b that turns a content hash into a remote blob name.
    public static let blobNames = KeyPurpose(subkeyID: 5, name: "blobNames")
    /// Keys the key-check value stored in `concord.json`.
    public static let keyCheck = KeyPurpose(subkeyID: 6, name: "keyCheck")
    /// Seals a named store's name in its `concord.json` (``StoreManifest/sealedName``).
    public static let storeName = KeyPurpose(subkeyID: 7, name: "storeName")
    /// The LAN peer channel: its handshake's proofs are keyed by a key derived from this
    /// one (``PeerProof``), so replicas prove they hold the store key without showing it.
    public static let peers = KeyPurpose(subkeyID: 8, name: "peers")
    /// Seals a shared store's membership logs under `members/…` and keys their names.
    public static let members = KeyPurpose(subkeyID: 9, name: "members")

    /// Seals the chained part of a key object `heads/keys/<id>` (the parent generations' keys,
    /// the signer and its signature) under the new generation's key.
    public static let keyring = KeyPurpose(subkeyID: 10, name: "keyring")
    /// Keys the BLAKE2b that names the fresh replica id a forked history's renamed side
    /// moves to when the fork is merged (``ForkName``).
    public static let forkNames = KeyPurpose(subkeyID: 11, name: "forkNames")

    /// Seals a replica's peer announcement under `heads/peers/<tag>` (where its LAN peer
    /// channel listens), under the current key generation.
    public static let peerAnnouncements = KeyPurpose(subkeyID: 12, name: "peerAnnouncements")
    /// Keys the BLAKE2b that turns a replica id into its announcement's name (generation 0's
    /// key: the name stays across rotations).
    public static let peerAnnouncementNames = KeyPurpose(subkeyID: 13, name: "peerAnnouncementNames")

    /// Every purpose this release knows, in sub-key id order.
    public static let all: [KeyPurpose] = [
        .batches, .heads, .snapshots, .blobContents, .blobNames, .keyCheck, .storeName, .peers, .members, .keyring,
        .forkNames, .peerAnnouncements, .peerAnnouncementNames,
    ]

    /// The 8-byte `crypto_kdf` context shared by every Concord sub-key.
    public static let kdfContext = "concord1"
}
