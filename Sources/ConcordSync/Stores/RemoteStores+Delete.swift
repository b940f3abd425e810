import ConcordCore
import ConcordCrypto
import ConcordRemote

extension RemoteStores {
    /// How long after another device's last sync a store counts as in use: 24 hours.
    public static let defaultRecentWindow: UInt64 = 24 * 3_600_000

    /// What ``delete(_:key:now:recentWindow:force:excluding:)`` did.
    public struct Deletion: Hashable, Sendable {
        /// The store deleted.
        public let id: StoreID
        /// How many objects this run deleted (an earlier, interrupted run's not counted).
        public let objectsDeleted: Int
        /// Their listed bytes.
        public let bytesDeleted: UInt64
    }

    /// Deletes the named store `id` — every object below `stores/<id>/`, its `concord.json`
    /// last — after checking that `key` unlocks it.
    ///
    /// **Refuses while the store is in use**: unless `force`, it first opens every head and
    /// throws `storeInUse` (naming the device and how long
    /// ago) when a replica other than those in `excluding` synced within `recentWindow`
    /// before `now`. *Why*: a device that synced the store keeps its `concord.json` and
    /// its own batches, and puts them back when it finds them gone (the remote's rollback
    /// promise); deleting under a live device half-deletes the store. A head that does not
    /// open (torn, planted) proves nothing and does not block.
    ///
    /// **Resumable**: `concord.json` goes last, so a run cut off anywhere leaves a store
    /// that still opens by its name, and running it again deletes the rest. Every object
    /// deleted was listed below the store's own root: no other store's object is touched.
    public func delete(
        _ id: StoreID, key: StoreKey, now: UInt64, recentWindow: UInt64 = RemoteStores.defaultRecentWindow,
        force: Bool = false, excluding: Set<ReplicaID> = []
    ) async throws -> Deletion {
        let remote = try await open(id)
        guard let bytes = try await remote.getManifest() else {
            throw ConcordError(.noSuchStore, "\(root.display) holds no store \(id.hex)")
        }
        let manifest = try StoreManifest(json: bytes)
        try manifest.verify(key)
        if !force {
            try await refuseIfInUse(remote, key: key, now: now, window: recentWindow, excluding: excluding, name: (try? manifest.name(with: key)) ?? id.hex)
        }
        var deleted = 0
        var freed: UInt64 = 0
        // A listing may be stale or incomplete: list again until it shows nothing left.
        for _ in 0..<8 {
            let left = try await remote.list(prefix: "").filter { $0.path != RemoteLayout.manifestPath }
            if left.isEmpty { break }
            // Heads first: a device that lists them sees the store going, before its batches.
            for object in left.sorted(by: { Self.deletionOrder($0.path) < Self.deletionOrder($1.path) }) {
                try await remote.delete(object.path)
                deleted += 1
                freed += object.size ?? 0
            }
        }
        try await remote.delete(RemoteLayout.manifestPath)
        return Deletion(id: id, objectsDeleted: deleted + 1, bytesDeleted: freed + UInt64(bytes.count))
    }

    /// Heads, then snapshots, then batches, then files, each by name.
    static func deletionOrder(_ path: String) -> String {
        let rank: Character = switch RemoteLayout.parse(path) {
        case .head?: "0"
        case .snapshot?: "1"
        case .batch?: "2"
        default: "3"
        }
        return String(rank) + path
    }

    /// Throws `storeInUse` when a head of a replica not in `excluding` says it synced within
    /// `window` before `now` — or, sealed under a rotated key (a key generation the store key
    /// alone does not open), was written within `window` as its listing says.
    func refuseIfInUse(_ remote: any Remote, key: StoreKey, now: UInt64, window: UInt64, excluding: Set<ReplicaID>, name: String) async throws {
        let headsKey = key.subkey(for: .heads)
        var newest: Head?
        for object in try await remote.list(prefix: RemoteLayout.headsPrefix) {
            guard case let .head(replica, _)? = RemoteLayout.parse(object.path), !excluding.contains(replica) else { continue }
            guard let sealed = try? await remote.get(object.path, limit: RemoteLayout.maxHeadSize) else { continue }
            if let generation = try? EncryptedObject.generation(of: sealed, path: object.path), !generation.isZero {
                if let written = object.modified, written + window > now, written > (newest?.syncedAt ?? 0) {
                    newest = Head(replica: replica.description, seq: 0, device: nil, syncedAt: written, applied: [:], vector: [:])
                }
                continue
            }
            guard let plain = try? EncryptedObject.open(sealed, path: object.path, key: headsKey),
                  let head = try? Head.decode(plain, path: object.path),
                  head.replica == replica.description
            else { continue }
            if head.syncedAt > (newest?.syncedAt ?? 0) { newest = head }
        }
        guard let newest, newest.syncedAt + window > now else { return }
        let ago = now > newest.syncedAt ? (now - newest.syncedAt) / 60_000 : 0
        let device = newest.device.map { "device \"\($0)\" (replica \(newest.replica))" } ?? "replica \(newest.replica)"
        throw ConcordError(.storeInUse, "\(device) synced store \"\(name)\" \(ago) minute\(ago == 1 ? "" : "s") ago: deleting it now would pull it out from under that device (which puts back what it holds); stop syncing it there first, or pass --force")
    }
}
