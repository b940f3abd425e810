import ConcordCore

/// The sync engine's error codes, beside the core's (``ConcordCore/ConcordError``).
extension ConcordError.Code {
    /// A batch name of this replica already holds other authentic contents on the remote:
    /// this store is an older copy of itself (restored from a backup). Push throws it
    /// before writing anything; ``SyncEngine/sync(mode:progress:)`` handles it by
    /// continuing under a new replica id, so callers of `sync` do not see it.
    public static let storeRestored = ConcordError.Code("storeRestored")
}

extension ConcordError.Code {
    /// No store of that name on the remote that the credential given unlocks
    /// (``RemoteStores/find(named:credential:)``).
    public static let noSuchStore = ConcordError.Code("noSuchStore")
    /// A store another device synced within the recent window: deleting it would pull it
    /// out from under that device (``RemoteStores/delete(_:key:now:recentWindow:force:excluding:)``).
    public static let storeInUse = ConcordError.Code("storeInUse")
}
