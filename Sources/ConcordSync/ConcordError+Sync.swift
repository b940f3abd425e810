import ConcordCore

/// The sync engine's error codes, beside the core's (``ConcordCore/ConcordError``).
extension ConcordError.Code {
    /// A batch name of this replica already holds other authentic contents on the remote:
    /// this store is an older copy of itself (restored from a backup). Push throws it
    /// before writing anything; ``SyncEngine/sync(mode:progress:)`` handles it by
    /// continuing under a new replica id, so callers of `sync` do not see it.
    public static let storeRestored = ConcordError.Code("storeRestored")
}

extension SyncEngine {
    /// Continues this store under a fresh replica id (``Store/adoptIdentity(_:sharedThrough:)``),
    /// keeping what the remote held of the old id through the pushed seq this copy
    /// remembers, and retires the old id as if forgotten: it will never write again.
    func recoverRestoredCopy(evidence: String, oldHead: Head?) throws(ConcordError) -> IdentityChange {
        var generator = SystemRandomNumberGenerator()
        let fresh = ReplicaID.random(using: &generator)
        let old = try store.adoptIdentity(fresh, sharedThrough: try pushedSeq())
        // What this engine remembered of pushing under the old id no longer applies.
        for key in [SyncKey.pushedSeq, SyncKey.snapshotSeq, SyncKey.snapshotCovered, SyncKey.headAdvertised, SyncKey.headWrittenAt, SyncKey.sealedToForget, SyncKey.snapshotDigest, SyncKey.snapshotAttempt] {
            try store.setSyncValue(key, nil)
        }
        // Retired up to its newest head's time, like `forget`: it never writes again.
        try store.setSyncNumber(SyncKey.retiredPrefix + old.description, oldHead?.syncedAt ?? clock.millisecondsSinceEpoch())
        return IdentityChange(old: old, new: fresh, evidence: evidence)
    }
}
