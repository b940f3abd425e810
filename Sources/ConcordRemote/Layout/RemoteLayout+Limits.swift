import ConcordCore

extension RemoteLayout {
    /// The largest `concord.json` a reader accepts: 16 KiB. The store writes well under 1 KiB
    /// (format version, store id, KDF salt and limits, wrapped key, key check).
    public static let maxManifestSize: UInt64 = 16 << 10
    /// The largest head a reader accepts: 16 MiB — a sealed JSON document of a few maps keyed
    /// by replica, about 250 bytes per replica, for the format's 65,536 replicas.
    public static let maxHeadSize: UInt64 = 16 << 20
    /// The largest delta batch a reader accepts: 256 MiB. A pushed batch carries at most
    /// 50,000 slots (more only when one write touched more); at typical sizes that is a few
    /// MiB, and the room above is for large values (up to 16 MiB each).
    public static let maxBatchSize: UInt64 = 256 << 20
    /// The largest key object a reader accepts: 128 KiB (one sealed key for each of up to
    /// 1,024 recipients, 80 bytes each, and the chained keys of up to 16 parents).
    public static let maxKeyObjectSize: UInt64 = 128 << 10
    /// The largest snapshot a reader accepts: 1 GiB of sealed state (files are not in it).
    public static let maxSnapshotSize: UInt64 = 1 << 30

    /// The largest peer announcement a reader accepts: 4 KiB (a replica id, a port, two
    /// times and at most ``maxAnnouncedAddresses`` IPv4 addresses, sealed and signed).
    public static let maxAnnouncementSize: UInt64 = 4 << 10
    /// The most addresses one announcement may name.
    public static let maxAnnouncedAddresses = 16

    /// The largest membership log a reader accepts: 4 MiB — some thousands of signed
    /// operations of one owner.
    public static let maxMemberLogSize: UInt64 = 4 << 20

    /// The largest page of a listing a reader accepts: 32 MiB — an S3 page of 1,000 keys
    /// is well under 1 MiB, a WebDAV PROPFIND answer about 400 bytes an entry, so room for
    /// some 80,000 objects in one folder.
    public static let maxListingPageSize: UInt64 = 32 << 20
    /// The most pages one listing may take: 10,000 — ten million objects at S3's 1,000 a
    /// page. A listing whose continuation token comes back a second time is refused at once.
    public static let maxListingPages = 10_000
    /// The most folders a listing of the whole layout enters on a remote that lists a
    /// folder at a time (WebDAV): the root, `heads/`, `snapshots/`, `replicas/` and `blobs/`,
    /// `heads/keys/`, `heads/peers/`, each replica's folder and its `deltas/` for the format's 65,536 replicas, and the
    /// 256 folders of `blobs/`, and `stores/` with one folder for each of up to 65,536
    /// named stores.
    public static let maxListingFolders = 7 + 2 * 65_536 + 256 + 1 + 65_536 + 2

    /// The largest object of `name`'s kind a reader accepts whole through
    /// ``Remote/get(_:limit:)``, and the largest a remote stores there; files (blobs) are
    /// streamed in constant memory and have no such limit (`UInt64.max`).
    ///
    /// Rule: every whole-object get passes this limit. *Why*: whoever can write the storage
    /// chooses object sizes — a sparse file of gigabytes costs nothing to plant — and a
    /// reader must not spend unbounded memory on it. The limits are part of the format
    /// (docs/FORMAT.md, "Remote objects"): an object over its limit is refused as damaged.
    public static func maxObjectSize(for name: Name) -> UInt64 {
        switch name {
        case .manifest, .storeManifest: maxManifestSize
        case .head: maxHeadSize
        case .batch: maxBatchSize
        case .snapshot: maxSnapshotSize
        case .blob: UInt64.max
        case .memberLog: maxMemberLogSize
        case .grant: maxManifestSize
        case .keyObject: maxKeyObjectSize
        case .announcement: maxAnnouncementSize
        }
    }

    /// ``maxObjectSize(for:)`` of the object at `path`; for a path outside the layout (which
    /// every remote refuses anyway) the smallest limit, the manifest's.
    public static func maxObjectSize(forPath path: String) -> UInt64 {
        parse(path).map(maxObjectSize(for:)) ?? maxManifestSize
    }
}
