import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// Key generations (docs/ARCHITECTURE.md §5): the key objects this replica knows, kept in
/// its store; reading the new ones a listing of `heads/` shows; and what follows when a
/// generation does not open with this device's identity — the replica was removed.
extension SyncEngine {
    // MARK: Kept key objects

    /// The key objects `store` keeps (those its last keyring knew), as read from the remote.
    static func keptKeyObjects(in store: Store) throws(ConcordError) -> [KeyObject] {
        guard let bytes = try store.syncState(.keyObjects) else { return [] }
        var objects: [KeyObject] = []
        var offset = 0
        while offset < bytes.count {
            guard offset + 4 <= bytes.count else { break }
            let length = bytes[offset..<(offset + 4)].reduce(0) { $0 << 8 | Int($1) }
            offset += 4
            guard length >= 20, offset + length <= bytes.count, let id = KeyGenerationID(bytes: bytes[(offset + 4)..<(offset + 20)]) else {
                throw ConcordError(.corrupt, "the key objects this store keeps are damaged; sync again to read them from the remote")
            }
            objects.append(try KeyObject(bytes: Array(bytes[offset..<(offset + length)]), path: Keyring.path(id), id: id))
            offset += length
        }
        return objects
    }

    private static func keep(_ objects: [KeyObject], in store: Store) throws(ConcordError) {
        var bytes: [UInt8] = []
        for object in objects.sorted(by: { $0.id < $1.id }) {
            let length = object.bytes.count
            bytes += [UInt8(length >> 24 & 0xff), UInt8(length >> 16 & 0xff), UInt8(length >> 8 & 0xff), UInt8(length & 0xff)] + object.bytes
        }
        try store.setSyncState(.keyObjects, bytes.isEmpty ? nil : bytes)
    }

    /// The line that says `store` was removed from its remote store, if it found so at its
    /// last sync (its copy is read-only since).
    public static func removal(in store: Store) throws(ConcordError) -> String? {
        try store.syncState(.removedFromStore)
    }

    /// The current key generation of this replica's keyring (`KeyGeneration.zero` before any
    /// rotation it knows of).
    public func keyGeneration() -> KeyGeneration {
        keys.keyring?.frontier ?? .zero
    }

    // MARK: Reading key objects

    /// Reads the key objects `listed` (generation ids from the listing of `heads/`) that this
    /// replica does not keep yet, and adopts the keyring they make with those it keeps. A key
    /// object cut short or not one is left aside (not there yet); so is one that does not
    /// count — in a shared store, one not made by an owner in the membership in force. Either
    /// is named in ``keyObjectsRejected`` (the sync's report, `doctor`), and read and judged
    /// again at every listing, with the membership then in force: one request a sync while it
    /// stays.
    ///
    /// The membership is read before a new key object is judged: a replica that has not seen
    /// the store shared reads the members first (one listing of `members/`).
    ///
    /// A replica that finds it cannot derive the current key records its removal
    /// (``checkNotRemoved()`` throws it) and writes nothing more.
    ///
    /// - Throws: `authenticationFailed` when a key object this
    ///   replica can open was modified or forged (nothing is sealed then).
    func readKeyObjects(_ listed: [KeyGenerationID]) async throws(ConcordError) {
        keyObjectsRejected = []
        guard listed.contains(where: { keys.keyring?.objects[$0] == nil }) else { return }
        let kept = try Self.keptKeyObjects(in: store)
        var objects = kept
        let held = Set(kept.map(\.id))
        for id in listed where !held.contains(id) {
            let path = Keyring.path(id)
            do throws(ConcordError) {
                guard let bytes = try await remote.get(path, limit: RemoteLayout.maxKeyObjectSize) else { continue }
                objects.append(try KeyObject(bytes: bytes, path: path, id: id))
            } catch where Self.isDamage(error) {
                logger(ConcordLogLabel.sync).warning("key object left aside: \(error.message)")
                keyObjectsRejected.append((path, error))
            }
        }
        guard objects.count > kept.count || keys.keyring == nil && !kept.isEmpty else { return }
        if objects.count > kept.count, gate.current == nil {
            // Judged by the membership in force: read it first, if the store may have been
            // shared since this replica last read its members.
            var unused = SyncReport()
            try await refreshMembership(into: &unused, checkRemoval: false)
        }
        let keyring = try adopt(objects, adopted: held)
        for (id, why) in keyring.leftAside.sorted(by: { $0.key < $1.key }) where listed.contains(id) {
            keyObjectsRejected.append((Keyring.path(id), ConcordError(.unauthentic, why)))
        }
        // Head names remembered as not opening may have failed for want of a generation
        // adopted only now (a listing that showed a head but not yet its key object): every
        // one is read again.
        if keyring.objects.count > held.count { try store.setUnopenedHeads(try store.unopenedHeads().keys.map { ($0, nil) }) }
    }

    /// Who may rotate the store key, by the membership in force: in a shared store, an active
    /// owner; nil (anyone holding the store key) in a store that is not shared.
    func rotationAuthority() -> ((PublicIdentity) -> Bool)? {
        guard let membership = gate.current, membership.isShared else { return nil }
        return { signer in
            guard let member = membership.member(signingKey: signer.signingKey) else { return false }
            return !member.isRemoved && member.role == .owner
        }
    }

    /// Adopts the keyring `objects` make: keeps those that count, seals under its current
    /// generation from now on — or, when this replica cannot derive that generation's key,
    /// records the removal (local writes are refused from then on; ``checkNotRemoved()``
    /// throws it). `adopted`: the key objects this replica already adopted (they stay).
    @discardableResult
    func adopt(_ objects: [KeyObject], adopted: Set<KeyGenerationID>) throws(ConcordError) -> Keyring {
        let keyring = try Keyring(base: baseKey, objects: objects, identity: identity, mayRotate: rotationAuthority(), adopted: adopted)
        try Self.keep(Array(keyring.objects.values), in: store)
        install(keyring)
        if keyring.isRemoved {
            try store.setSyncState(.removedFromStore, Self.removedMessage(keyring, identity: identity))
            return keyring
        }
        if try Self.removal(in: store) != nil, removedByMembership() == nil {
            // Sealed to this device again by a later rotation, and not removed by the
            // membership: a member once more.
            try store.setSyncState(.removedFromStore, nil)
        }
        return keyring
    }

    /// Seals under `keyring`'s current generation from now on, and opens every generation it holds.
    func install(_ keyring: Keyring) {
        keys = Keys(baseKey, keyring: keyring)
        objects = RemoteObjects(remote: remote, keys: keys, gate: gate)
        writes = RemoteWrites(remote: remote, keys: keys, gate: gate)
    }

    static func removedMessage(_ keyring: Keyring, identity: DeviceIdentity?) -> String {
        let generations = keyring.unopened.map(\.description).joined(separator: ", ")
        let why = identity == nil
            ? "this replica has no identity (only the passphrase or key file)"
            : "none of its sealed keys opens with this device's identity"
        return "you were removed from this store: its key was rotated to generation \(generations) and \(why); "
            + "this copy keeps everything it had, read-only, and syncs no more"
    }

    /// Throws `removedFromStore` when this replica found it
    /// was removed: nothing more is written to the remote.
    func checkNotRemoved() throws(ConcordError) {
        if let line = try Self.removal(in: store) { throw ConcordError(.removedFromStore, line) }
    }
}
