import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// What ``SyncEngine/rotateStoreKey(recipients:)`` made.
public struct KeyRotation: Sendable, Equatable {
    /// The new generation's id (its key object is `heads/keys/<id>`).
    public let generation: KeyGenerationID
    /// The generations it follows: the frontier the rotating replica knew.
    public let parents: [KeyGenerationID]
    /// How many identities the new key was sealed to (the rotating one included).
    public let recipients: Int
}

extension SyncEngine {
    /// Rotates the store key: a new random key, sealed to each of `recipients` and to this
    /// device's identity, following every generation at the frontier of the key graph. From
    /// then on every batch, head and snapshot is sealed under the new generation; replicas
    /// whose identity is a recipient pick it up at their next sync, with no action; any
    /// other replica finds at its next sync that it was removed
    /// (`removedFromStore`) and keeps its copy read-only.
    ///
    /// ```swift
    /// let engine = SyncEngine(store: store, remote: remote, key: key, storeID: id, identity: me)
    /// try await engine.rotateStoreKey(recipients: [alice, bob])   // carol is removed
    /// ```
    ///
    /// Crash-safe: the key object is put whole (one object) before anything is sealed under
    /// the new key. A crash before the put leaves no new generation; one after leaves a
    /// generation every recipient opens, which every replica adopts from the listing of
    /// `heads/` — this one too, at its next sync.
    ///
    /// Two owners rotating at once (from the same frontier) make two generations; the
    /// current key is then derived from both (`StoreKey.merged(_:)`), so
    /// every replica converges on it, and only a recipient of both derives it.
    ///
    /// Files uploaded from then on are sealed under the new generation too; their remote
    /// names stay keyed by generation 0 (one name per content across rotations).
    ///
    /// In a shared store only an owner rotates: every replica leaves aside a key object made
    /// by anyone else (docs/ARCHITECTURE.md §5).
    ///
    /// What it does not do: take back what a removed member already has (everything sealed
    /// before — and whatever it copied), or re-seal older objects.
    ///
    /// - Throws: `invalidOperation` for an engine made without an `identity`, or in a shared
    ///   store whose active owners it is not one of,
    ///   `removedFromStore` when this replica was removed itself, `invalidParameter` for more
    ///   than 1,024 recipients or 16 concurrent generations, and what the remote throws.
    @discardableResult
    public func rotateStoreKey(recipients: [PublicIdentity]) async throws(ConcordError) -> KeyRotation {
        guard let identity else {
            throw ConcordError(.invalidOperation, "rotating the store key needs this device's identity (the new key is sealed to it and signed with it): create one with `concord id create`")
        }
        try await checkStoreIdentityOnce()
        // A shared store's membership as it is now: who may rotate, and who made the key
        // objects read below.
        var members = SyncReport()
        try await refreshMembershipIfShared(into: &members)
        try await readListedKeyObjects()
        try checkNotRemoved()
        if let mayRotate = rotationAuthority(), !mayRotate(identity.publicIdentity) {
            throw ConcordError(.invalidOperation, "only an owner of this shared store rotates its key; every replica would leave a key object of this device aside")
        }
        let kept = try Self.keptKeyObjects(in: store)
        let keyring = try Keyring(base: baseKey, objects: kept, identity: identity, adopted: Set(kept.map(\.id)))
        var parents: [KeyGenerationID: StoreKey] = [:]
        for id in keyring.frontier.ids {
            guard let key = keyring.keys[id] else { throw ConcordError(.removedFromStore, Self.removedMessage(keyring, identity: identity)) }
            parents[id] = key
        }
        let id = KeyGenerationID.random()
        let key = StoreKey.random().of(KeyGeneration([id])!)
        let everyone = Array(Set(recipients + [identity.publicIdentity]))
        let object = try KeyObject.create(key: key, parents: parents, recipients: everyone, signer: identity, path: Keyring.path(id), attestedUnder: baseKey)
        // 1. The key object, whole, before anything is sealed under its key.
        try await writes.putKeyObject(object)
        // 2. This replica seals under it from now on.
        try adopt(kept + [object], adopted: Set(kept.map(\.id)))
        // 3. Its head, sealed again under the new generation.
        try await putHead(seq: try pushedSeq())
        logger(ConcordLogLabel.sync).info("store key rotated", metadata: ["generation": "\(id)", "recipients": "\(everyone.count)"])
        return KeyRotation(generation: id, parents: parents.keys.sorted(), recipients: everyone.count)
    }

    /// Reads and adopts the newest frontier: every key object the remote lists now (only
    /// those: the heads are left to the next sync, which reports what it finds in them).
    func readListedKeyObjects() async throws(ConcordError) {
        try await readKeyObjects(try await remote.list(prefix: RemoteLayout.keyObjectsPrefix).compactMap { Self.keyGeneration(at: $0.path) })
    }

    /// The key generation whose key object is at `path` (`heads/keys/<id>`), if it is one.
    static func keyGeneration(at path: String) -> KeyGenerationID? {
        guard case let .keyObject(id)? = RemoteLayout.parse(path) else { return nil }
        return KeyGenerationID(hex: id)
    }
}
