import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// The copy of `concord.json` each replica keeps (docs/ARCHITECTURE.md §4, "concord.json").
///
/// `concord.json` is the one object no replica can rebuild: it holds the store key wrapped
/// by the passphrase. Deleted, it would stop every replica (nothing can be unlocked) and
/// strand every write not pushed yet. So each replica keeps the `concord.json` it unlocked,
/// byte for byte, in its sync state, and puts it back when the remote holds none or a
/// damaged one — only when the copy is of the store this replica syncs with. A readable
/// `concord.json` of another store is never overwritten.
extension SyncEngine {
    /// Keeps `manifest` as the copy of the remote's `concord.json`, when it is the store
    /// `store` syncs with (or has not synced yet).
    public static func keepManifest(_ manifest: StoreManifest, in store: Store) throws(ConcordError) {
        if let recorded = try remoteStoreID(in: store), recorded != manifest.storeID.hex { return }
        let bytes = manifest.jsonBytes()
        if try store.syncState(.manifest) != bytes { try store.setSyncState(.manifest, bytes) }
    }

    /// The copy of `concord.json` `store` keeps, if it has one and it is of the store it
    /// synced with.
    public static func keptManifest(in store: Store) throws(ConcordError) -> StoreManifest? {
        guard let bytes = try store.syncState(.manifest),
              let manifest = try? StoreManifest(json: bytes) else { return nil }
        if let recorded = try remoteStoreID(in: store), recorded != manifest.storeID.hex { return nil }
        return manifest
    }

    /// Puts back the copy of `concord.json` `store` keeps when `remote` holds none, or holds
    /// one that is damaged (torn, truncated, not a manifest at all: ``isDamagedManifest(_:)``).
    /// A readable `concord.json` — another store's, or one of a newer format — is never
    /// overwritten. Returns the manifest put back, or nil when the remote holds a readable
    /// one or there is no copy to put. Reads `concord.json` again just before it writes, so
    /// a store created meanwhile is never overwritten, and once after, so a put the storage
    /// tore while reporting it done is put again (once; the next check tries again).
    public static func restoreManifest(_ remote: any Remote, from store: Store) async throws(ConcordError) -> StoreManifest? {
        guard let kept = try keptManifest(in: store) else { return nil }
        let bytes = kept.jsonBytes()
        for attempt in 0..<2 {
            if let found = try await remote.getManifest() {
                if found == bytes { return attempt == 0 ? nil : kept }
                guard isDamagedManifest(found) else { return nil }
            }
            try await RemoteWrites.putManifest(bytes, to: remote)
        }
        return kept
    }

    /// Whether `bytes` at `concord.json` are damage rather than a manifest: they do not
    /// decode (torn, truncated, tampered, or not JSON at all). A manifest of another format
    /// version is not damage: this release just cannot read it.
    public static func isDamagedManifest(_ bytes: [UInt8]) -> Bool {
        // A web page is not a torn manifest: a captive portal or a proxy answered in the
        // store's place, and writing to it would be writing to the wrong place.
        if looksLikeWebPage(bytes) { return false }
        do {
            _ = try StoreManifest(json: bytes)
            return false
        } catch {
            return error.code == .malformed
        }
    }

    /// Whether `bytes` read at `concord.json` are a web page (HTML) — what a captive portal
    /// or a proxy answers in the store's place — rather than anything the store wrote.
    public static func looksLikeWebPage(_ bytes: [UInt8]) -> Bool {
        let start = String(decoding: bytes.prefix(512), as: UTF8.self).drop { $0.isWhitespace }.prefix(64).lowercased()
        return start.hasPrefix("<!doctype html") || start.hasPrefix("<html") || start.hasPrefix("<head") || start.hasPrefix("<body")
    }

    /// Whether `remote` holds any object of a store's layout (a head, a batch or a
    /// snapshot): a remote without `concord.json` that does is a store whose `concord.json`
    /// was deleted, not an empty place to create one in.
    public static func holdsStoreLayout(_ remote: any Remote) async throws(ConcordError) -> Bool {
        for prefix in [RemoteLayout.headsPrefix, RemoteLayout.snapshotsPrefix, RemoteLayout.replicasPrefix] {
            if try await remote.list(prefix: prefix).contains(where: { RemoteLayout.parse($0.path) != nil }) { return true }
        }
        return false
    }
}
