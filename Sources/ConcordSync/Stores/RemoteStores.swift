import ConcordCore
import ConcordCrypto
import ConcordRemote

/// The stores a remote root holds (README, "Several stores on one remote";
/// docs/ARCHITECTURE.md §4, "Several stores").
///
/// A root may hold today's single store at its top (`concord.json`, `heads/`, …) and any
/// number of named stores, each below `stores/<store id>/` with the same layout, its own
/// `concord.json` and its own key. The folder is named by the store's random id; the name
/// is sealed in that `concord.json` under the store's key, so only who can unlock a store
/// sees its name.
///
/// Each named store is reached through its backend's own prefix mechanism
/// (`RemoteBackend.child(_:)`: a subfolder, a WebDAV collection, an S3
/// key prefix), so a store opened with ``open(_:)`` is a remote whose root is its own
/// folder: nothing it lists, reads or writes can be another store's. Only ``list(credential:)``
/// and ``find(named:credential:)`` read other stores' `concord.json` (never anything else
/// of theirs), to learn which ones the credential opens.
///
/// ```swift
/// let stores = RemoteStores(root: FolderLocation(path: "/srv/dropbox/concord"))
/// let found = try await stores.find(named: "recipes", credential: .passphrase(passphrase))
/// let engine = SyncEngine(store: store, remote: try await stores.open(found.manifest.storeID),
///                         key: found.key, storeID: found.manifest.storeID)
/// ```
public struct RemoteStores: Sendable {
    /// The remote's root location.
    public let root: any RemoteBackend
    /// Where the backend finds its credentials.
    public let access: RemoteAccess

    public init(root: any RemoteBackend, access: RemoteAccess = RemoteAccess()) {
        self.root = root
        self.access = access
    }

    /// What unlocks a store: a passphrase, or a key (a key file's).
    public enum Credential: Sendable {
        case passphrase(String)
        case key(StoreKey)
    }

    /// One store of a remote, as the caller may see it.
    public struct Entry: Hashable, Sendable {
        /// The store's id (32 hex digits name its folder).
        public let id: StoreID
        /// Its name, when the credential unlocks it; nil otherwise (and for the root store).
        public let name: String?
        /// Whether the credential unlocks it.
        public let opened: Bool
        /// Whether it is the store at the root (today's single-store layout) rather than a
        /// named one below `stores/`.
        public let isRoot: Bool
        /// When it was created (ms since the epoch), for a named store.
        public let created: UInt64?
        /// The bytes of its objects, as listed (objects a listing gives no size count 0).
        public let bytes: UInt64
        /// How many objects it holds, `concord.json` included.
        public let objects: Int
        /// Why its `concord.json` could not be read, if it could not (damaged, planted).
        public let problem: String?
    }

    /// A store unlocked by ``find(named:credential:)`` or ``create(named:credential:limits:now:)``.
    public struct Unlocked: Sendable {
        public let manifest: StoreManifest
        public let key: StoreKey
        /// Its name.
        public let name: String
    }

    /// The location of the named store `id`: `stores/<id>/` below the root.
    public func location(of id: StoreID) -> any RemoteBackend {
        root.child(RemoteLayout.storesFolder).child(id.hex)
    }

    /// The remote of the named store `id`, whose root is the store's own folder: hand it to
    /// ``SyncEngine``. Its `concord.json` is read through the root first, so a store folder
    /// (or `stores/`) that is not a real folder — a planted link — is refused, not followed.
    ///
    /// - Throws: `noSuchStore` when the root holds no such store.
    public func open(_ id: StoreID) async throws -> any LeftoverSweeping {
        let rootRemote = try await root.open(root: .none, access: access)
        guard try await rootRemote.get(RemoteLayout.storeManifest(id.hex), limit: RemoteLayout.maxManifestSize) != nil else {
            throw ConcordError(.noSuchStore, "\(root.display) holds no store \(id.hex) (no \(RemoteLayout.storeManifest(id.hex))): it was deleted, or the remote is not the one it was created on")
        }
        return try await location(of: id).open(root: .none, access: access)
    }

    /// Every store of the root — the root's own and each named one — with what `credential`
    /// lets the caller see: the name of each store it unlocks, and only the id, creation
    /// time and size of the others. Sorted: the root store first, then by name, then by id.
    /// A `concord.json` that does not read is listed with its ``Entry/problem``.
    public func list(credential: Credential?) async throws -> [Entry] {
        let rootRemote = try await root.open(root: .none, access: access)
        var entries: [Entry] = []
        let rootObjects = try await rootRemote.list(prefix: "").filter {
            if case .storeManifest? = RemoteLayout.parse($0.path) { return false }
            return true
        }
        if let bytes = try await rootRemote.getManifest(), let manifest = try? StoreManifest(json: bytes) {
            let opened = credential.flatMap { Self.unlock(manifest, with: $0) } != nil
            entries.append(Entry(
                id: manifest.storeID, name: nil, opened: opened, isRoot: true, created: manifest.created,
                bytes: rootObjects.reduce(0) { $0 + ($1.size ?? 0) }, objects: rootObjects.count, problem: nil))
        }
        for id in try await storeIDs(rootRemote) {
            entries.append(try await entry(id, credential: credential))
        }
        return entries.sorted { a, b in
            if a.isRoot != b.isRoot { return a.isRoot }
            if (a.name == nil) != (b.name == nil) { return a.name != nil }
            if let x = a.name, let y = b.name, x != y { return x < y }
            return a.id.hex < b.id.hex
        }
    }

    /// The named store called `name` that `credential` unlocks, or nil when there is none.
    /// Reads each named store's `concord.json` (and nothing else of any store) until one
    /// unlocks and carries the name; with a passphrase that is one Argon2id per store that
    /// uses a passphrase.
    public func find(named name: String, credential: Credential) async throws -> Unlocked? {
        let rootRemote = try await root.open(root: .none, access: access)
        for id in try await storeIDs(rootRemote) {
            guard let bytes = try? await rootRemote.get(RemoteLayout.storeManifest(id), limit: RemoteLayout.maxManifestSize),
                  let manifest = try? StoreManifest(json: bytes), manifest.storeID.hex == id,
                  let key = Self.unlock(manifest, with: credential),
                  let found = try? manifest.name(with: key), found == name
            else { continue }
            return Unlocked(manifest: manifest, key: key, name: name)
        }
        return nil
    }

    /// The store key `credential` unlocks `manifest` with, or nil.
    static func unlock(_ manifest: StoreManifest, with credential: Credential) -> StoreKey? {
        switch credential {
        case let .passphrase(passphrase):
            guard manifest.kdf == .argon2id13 else { return nil }
            return try? manifest.unlock(passphrase: passphrase)
        case let .key(key):
            return manifest.matches(key) ? key : nil
        }
    }

    /// The ids of the named stores the root's listing of `stores/` shows (each by its
    /// `concord.json`), sorted.
    func storeIDs(_ rootRemote: any Remote) async throws -> [String] {
        var ids = Set<String>()
        for object in try await rootRemote.list(prefix: RemoteLayout.storesPrefix) {
            if case let .storeManifest(id)? = RemoteLayout.parse(object.path) { ids.insert(id) }
        }
        return ids.sorted()
    }

    /// The entry of the named store `id`: its listing (through its own root) and its
    /// `concord.json`, unlocked if `credential` can.
    func entry(_ id: String, credential: Credential?) async throws -> Entry {
        let storeID = StoreID(hex: id)!
        let remote = try await location(of: storeID).open(root: .none, access: access)
        let objects = try await remote.list(prefix: "")
        let bytes = objects.reduce(UInt64(0)) { $0 + ($1.size ?? 0) }
        let manifest: StoreManifest
        do {
            guard let read = try await remote.getManifest() else {
                return Entry(id: storeID, name: nil, opened: false, isRoot: false, created: nil, bytes: bytes, objects: objects.count, problem: "its concord.json is gone")
            }
            manifest = try StoreManifest(json: read)
            guard manifest.storeID == storeID else {
                throw ConcordError(.malformed, "its concord.json is store \(manifest.storeID.hex)'s: it was copied or moved")
            }
        } catch let error as ConcordError {
            return Entry(id: storeID, name: nil, opened: false, isRoot: false, created: nil, bytes: bytes, objects: objects.count, problem: error.message)
        }
        let key = credential.flatMap { Self.unlock(manifest, with: $0) }
        let name = key.flatMap { try? manifest.name(with: $0) }
        return Entry(
            id: storeID, name: name, opened: key != nil, isRoot: false, created: manifest.created,
            bytes: bytes, objects: objects.count, problem: key != nil && name == nil ? "its sealed name does not open: concord.json was modified" : nil)
    }
}
