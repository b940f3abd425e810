import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

/// Members of a shared store (docs/ARCHITECTURE.md §5, "Members"): reading the owners'
/// membership logs, and adding and removing members.
extension SyncEngine {
    // MARK: Reading

    /// The store's members, as the remote's membership logs and every operation this
    /// replica verified before say. Empty for a store that is not shared.
    public func members() async throws(ConcordError) -> Membership {
        var report = SyncReport()
        try await refreshMembership(into: &report, checkRemoval: false)
        return gate.current ?? Membership()
    }

    /// ``refreshMembership(into:checkRemoval:)`` when the store is known to be shared; a
    /// store that is not costs no request (a signed object met later makes the sync read
    /// the members and start again).
    func refreshMembershipIfShared(into report: inout SyncReport, checkRemoval: Bool = true) async throws(ConcordError) {
        guard gate.current != nil else { return }
        try await refreshMembership(into: &report, checkRemoval: checkRemoval)
    }

    /// Reads every membership log, merges its authentic operations with the ones kept, keeps
    /// the union, and puts the membership in force. Logs that do not open are named in
    /// `report.rejected`. Throws `removedFromStore` when
    /// this device's identity has been removed (unless `checkRemoval` is false).
    func refreshMembership(into report: inout SyncReport, checkRemoval: Bool = true) async throws(ConcordError) {
        var operations = try Self.keptOperations(store, storeID: storeID)
        let keptCount = operations.count
        for object in try await remote.list(prefix: RemoteLayout.membersPrefix) {
            guard case .memberLog? = RemoteLayout.parse(object.path) else { continue }
            do throws(ConcordError) {
                guard let sealed = try await objects.fetch(object.path) else { continue }
                let plain = try EncryptedObject.open(sealed, path: object.path, key: keys.members)
                let (found, rejected) = try MemberLog.decode(plain, store: storeID, path: object.path)
                operations.formUnion(found)
                report.rejected += rejected
            } catch where Self.isDamage(error) {
                report.rejected.append("\(object.path): unauthentic: \(error.message)")
            }
        }
        if operations.count > keptCount {
            try store.setSharingRecord(.operations, String(decoding: MemberLog.encode(operations.sorted(by: SignedOperation.precedes)), as: UTF8.self))
        }
        let membership = Membership.resolve(operations, root: try Self.membershipRoot(store))
        gate.update(membership.isShared ? membership : nil, bindings: [:], read: true)
        try keepBindings()
        if let line = removedByMembership() {
            // Recorded like a removal the keyring shows: local writes are refused from now on.
            if try Self.removal(in: store) == nil { try store.setSyncState(.removedFromStore, line) }
            if checkRemoval { throw ConcordError(.removedFromStore, line) }
        }
    }

    /// The line saying this device's identity was removed from the shared store, when the
    /// membership in force says so; nil otherwise.
    func removedByMembership() -> String? {
        guard let identity, let membership = gate.current,
            let me = membership.member(signingKey: identity.publicIdentity.signingKey), me.isRemoved
        else { return nil }
        return "this device (\"\(me.name)\") was removed from this shared store: nothing was pulled or pushed; the local copy stays as it is, read-only"
    }

    /// Why this device may not write to the store, when it may not; nil when it may.
    func writeRefusal() -> String? {
        guard let membership = gate.current, membership.isShared else { return nil }
        guard let identity else {
            return "this store is shared and this device has no identity: its changes stay local (create one with `concord id create` and have an owner add it)"
        }
        guard let me = membership.member(signingKey: identity.publicIdentity.signingKey) else {
            return "this store is shared and this device's identity is not a member: its changes stay local (have an owner add it)"
        }
        guard me.role.canWrite else {
            return "this device is a reader of the shared store: its changes stay local"
        }
        return nil
    }

    /// Keeps the replica bindings the gate learned since the last call.
    func keepBindings() throws(ConcordError) {
        guard let bindings = gate.takeChangedBindings() else { return }
        let object = Dictionary(uniqueKeysWithValues: bindings.map { ($0.key.description, $0.value) })
        let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        try store.setSharingRecord(.bindings, String(decoding: data, as: UTF8.self))
    }

    /// The membership operations `store` kept (verified again as they are read).
    static func keptOperations(_ store: Store, storeID: StoreID) throws(ConcordError) -> Set<SignedOperation> {
        guard let text = try store.sharingRecord(.operations) else { return [] }
        return Set(try MemberLog.decode(Array(text.utf8), store: storeID, path: "the kept membership operations").operations)
    }

    /// Puts the membership and bindings `store` kept in force in `gate`: a shared store is
    /// checked and signed from the first request on, even before the remote is read.
    static func loadKeptMembership(_ store: Store, storeID: StoreID, into gate: SignatureGate) {
        let root = try? membershipRoot(store)
        let membership = (try? keptOperations(store, storeID: storeID)).map { Membership.resolve($0, root: root) }
        var bindings: [ReplicaID: String] = [:]
        if let text = try? store.sharingRecord(.bindings),
           let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: String] {
            for (replica, key) in object { if let id = ReplicaID(hex: replica) { bindings[id] = key } }
        }
        gate.update(membership.flatMap { $0.isShared ? $0 : nil }, bindings: bindings)
    }

    /// The root of `store`'s membership, if it has one (``pinMembershipRoot(_:in:)``).
    static func membershipRoot(_ store: Store) throws(ConcordError) -> [UInt8]? {
        try store.sharingRecord(.root).flatMap { Hex.decode($0) }
    }

    /// Records `root` (an owner's Ed25519 key, from the grant that let this replica join)
    /// as the root of `store`'s membership, unless one is recorded: only that owner's
    /// `share` counts from then on.
    public static func pinMembershipRoot(_ root: [UInt8], in store: Store) throws(ConcordError) {
        guard try store.sharingRecord(.root) == nil else { return }
        try store.setSharingRecord(.root, Hex.encode(root))
    }

    /// The membership `operations` lead to from this store's root.
    func resolve(_ operations: Set<SignedOperation>) throws(ConcordError) -> Membership {
        Membership.resolve(operations, root: try Self.membershipRoot(store))
    }

    // MARK: Changing

    /// Adds `member` under `name` with `role` (or changes its name and role), and grants it
    /// the store key. Only an owner may; on a store that is not shared yet, this device's
    /// identity first shares it and becomes its first owner. Returns the membership after.
    ///
    /// - Throws: `invalidOperation` when this device has no identity or is not an owner, or
    ///   the member was removed (removal is final for a key).
    @discardableResult
    public func addMember(_ member: PublicIdentity, name: String, role: MemberRole) async throws(ConcordError) -> Membership {
        let identity = try requireIdentity()
        var report = SyncReport()
        try await refreshMembership(into: &report)
        var operations = try Self.keptOperations(store, storeID: storeID)
        if !(gate.current?.isShared ?? false) {
            try Self.pinMembershipRoot(identity.publicIdentity.signingKey, in: store)
            var cut = try store.appliedSeqs()
            cut[store.replicaID] = try pushedSeq()
            operations.insert(try await issue(MembershipOperation(
                action: MembershipOperation.share, store: storeID.hex, issuer: identity.publicIdentity.description, counter: 0, lamport: 0,
                name: (try store.name()) ?? "owner", cut: MembershipOperation.hexKeyed(cut)), by: identity, after: operations))
        }
        try requireOwner(try resolve(operations), identity)
        if let existing = try resolve(operations).member(signingKey: member.signingKey), existing.isRemoved {
            throw ConcordError(.invalidOperation, "\"\(existing.name)\" was removed from this store; a removed key is never added again: the member creates a new identity")
        }
        guard try resolve(operations).member(signingKey: member.signingKey) == nil || member != identity.publicIdentity else {
            throw ConcordError(.invalidOperation, "this device is already the store's owner")
        }
        // A store whose key was rotated: the new member is reached by a rotation to every
        // active member (a grant hands out generation 0, which opens no later generation).
        // Whether it was is read from the remote's key objects, not from this replica's last
        // sync: another owner may have rotated since.
        try await readListedKeyObjects()
        try checkNotRemoved()
        let rotates = !keyGeneration().isZero
        if rotates { try store.setSharingRecord(.rotationPending, "1") }
        operations.insert(try await issue(MembershipOperation(
            action: MembershipOperation.add, store: storeID.hex, issuer: identity.publicIdentity.description, counter: 0, lamport: 0,
            member: member.description, name: name, role: role.name), by: identity, after: operations))
        try await putGrant(to: member)
        let membership = try await publish(operations, of: identity)
        if rotates { try await finishPendingRotation() }
        return membership
    }

    /// Removes the member called `name`: records the removal with its cut (per replica that
    /// writes as the member, the last seq this replica applied of it, or past it the last of
    /// the batches the member put without a gap; anything later it signs is rejected
    /// everywhere). Only an owner may, and not itself.
    @discardableResult
    public func removeMember(named name: String) async throws(ConcordError) -> Membership {
        let identity = try requireIdentity()
        var report = SyncReport()
        try await refreshMembership(into: &report)
        var operations = try Self.keptOperations(store, storeID: storeID)
        let membership = try resolve(operations)
        try requireOwner(membership, identity)
        let matches = membership.members.values.filter { $0.name == name && !$0.isRemoved }
        guard let target = matches.first, matches.count == 1 else {
            throw ConcordError(.notFound, matches.isEmpty ? "no active member is called \"\(name)\": see `concord members list`" : "\(matches.count) members are called \"\(name)\"")
        }
        guard target.identity != identity.publicIdentity else {
            throw ConcordError(.invalidOperation, "an owner does not remove itself; have another owner remove it")
        }
        let targetKey = Hex.encode(target.identity.signingKey)
        let applied = try store.appliedSeqs()
        // The newest head of each replica this one has not applied up to: opened, it binds
        // a replica of the member that this one never read an object of.
        func readBindings() throws(ConcordError) -> [String: String] {
            (try store.sharingRecord(.bindings)).flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: String] } ?? [:]
        }
        var newest: [ReplicaID: UInt64] = [:]
        for object in try await remote.list(prefix: RemoteLayout.headsPrefix) {
            if case let .head(replica, seq)? = RemoteLayout.parse(object.path), replica != store.replicaID { newest[replica] = max(newest[replica] ?? 0, seq) }
        }
        let known = try readBindings()
        for (replica, seq) in newest.sorted(by: { $0.key < $1.key }) where known[replica.description] == nil && seq > applied[replica] ?? 0 {
            _ = try? await readHead(replica, seq: seq)
        }
        try keepBindings()
        // Per replica of the member: what this one applied, and past it the run of batches
        // the member had put without a gap — written while a member, and maybe applied by
        // another replica already (which would otherwise keep them alone). A lone batch or
        // head far ahead does not widen it.
        var cut: [ReplicaID: UInt64] = [:]
        for (replica, key) in try readBindings() where key == targetKey {
            guard let id = ReplicaID(hex: replica) else { continue }
            var present: Set<UInt64> = []
            for object in try await remote.list(prefix: RemoteLayout.batchesPrefix(id)) {
                if case let .batch(_, seq)? = RemoteLayout.parse(object.path) { present.insert(seq) }
            }
            var reach = applied[id] ?? 0
            while present.contains(reach + 1) { reach += 1 }
            cut[id] = reach
        }
        let opCut = operations.filter { $0.issuer == target.identity }.map(\.operation.counter).max() ?? 0
        // Marked before the removal is published: a crash between the two leaves the
        // rotation to this device's next sync.
        try store.setSharingRecord(.rotationPending, "1")
        operations.insert(try await issue(MembershipOperation(
            action: MembershipOperation.remove, store: storeID.hex, issuer: identity.publicIdentity.description, counter: 0, lamport: 0,
            member: target.identity.description, cut: MembershipOperation.hexKeyed(cut), opCut: opCut), by: identity, after: operations))
        let after = try await publish(operations, of: identity)
        try await finishPendingRotation()
        return after
    }

    /// Rotates the store key to every active member (``rotateStoreKey(recipients:)``) when
    /// this device, an owner, marked a rotation pending (``removeMember(named:)``, or
    /// ``addMember(_:name:role:)`` on a store whose key was rotated) and has not done it
    /// yet; then clears the mark. Every later object is sealed under a key a removed member
    /// never gets. Called after the membership change and at every sync, so a crash between
    /// the two is finished by the next sync.
    func finishPendingRotation() async throws(ConcordError) {
        guard try store.sharingRecord(.rotationPending) == "1", let identity, let membership = gate.current,
            let me = membership.member(signingKey: identity.publicIdentity.signingKey), !me.isRemoved, me.role == .owner
        else { return }
        let recipients = membership.members.values.filter { !$0.isRemoved }.map(\.identity)
        try await rotateStoreKey(recipients: recipients)
        try store.setSharingRecord(.rotationPending, "0")
    }

    /// The key a member is granted: generation 0's, from which a rotation made after the
    /// grant is reached through the key objects sealed to the member.
    func grantedStoreKey() -> StoreKey { baseKey }

    private func putGrant(to member: PublicIdentity) async throws(ConcordError) {
        guard let root = try Self.membershipRoot(store) else { throw ConcordError(.invalidOperation, "this store's membership has no root: it is not shared") }
        let sealed = StoreKeyGrant.seal(grantedStoreKey(), of: storeID, root: root, to: member)
        try await writes.put(sealed, at: RemoteLayout.grant(name: StoreKeyGrant.name(of: sealed)))
    }

    /// `operation` stamped past every operation in `operations` and signed.
    private func issue(_ operation: MembershipOperation, by identity: DeviceIdentity, after operations: Set<SignedOperation>) async throws(ConcordError) -> SignedOperation {
        var stamped = operation
        stamped.counter = (operations.filter { $0.issuer == identity.publicIdentity }.map(\.operation.counter).max() ?? 0) + 1
        stamped.lamport = (operations.map(\.operation.lamport).max() ?? 0) + 1
        return SignedOperation(signing: stamped, with: identity)
    }

    /// Keeps `operations`, puts this owner's log (all its operations, sealed), and returns the
    /// membership in force.
    private func publish(_ operations: Set<SignedOperation>, of identity: DeviceIdentity) async throws(ConcordError) -> Membership {
        try store.setSharingRecord(.operations, String(decoding: MemberLog.encode(operations.sorted(by: SignedOperation.precedes)), as: UTF8.self))
        let mine = operations.filter { $0.issuer == identity.publicIdentity }.sorted { $0.operation.counter < $1.operation.counter }
        let path = RemoteLayout.memberLog(tag: keys.members.keyedTag(of: identity.publicIdentity.signingKey))
        try await writes.put(EncryptedObject.encrypt(MemberLog.encode(mine), path: path, key: keys.members), at: path)
        let membership = try resolve(operations)
        gate.update(membership, bindings: [:])
        return membership
    }

    private func requireIdentity() throws(ConcordError) -> DeviceIdentity {
        guard let identity else {
            throw ConcordError(.invalidOperation, "managing members takes this device's identity: create one with `concord id create`")
        }
        return identity
    }

    private func requireOwner(_ membership: Membership, _ identity: DeviceIdentity) throws(ConcordError) {
        guard let me = membership.member(signingKey: identity.publicIdentity.signingKey), !me.isRemoved, me.role == .owner else {
            throw ConcordError(.invalidOperation, "only an owner of this shared store manages its members; this device is \(membership.member(signingKey: identity.publicIdentity.signingKey).map { "a \($0.role)" } ?? "not a member")")
        }
    }

    // MARK: Joining

    /// The store key a grant on `remote` (a store's own root) gives `identity`, checked
    /// against the store's `concord.json`, and the root of its membership the grant names
    /// (``pinMembershipRoot(_:in:)``); nil when no grant there opens with it.
    public static func grantedKey(_ remote: any Remote, identity: DeviceIdentity) async throws(ConcordError) -> (key: StoreKey, storeID: StoreID, root: [UInt8])? {
        let manifest = try await manifest(of: remote)
        var found: (key: StoreKey, root: [UInt8])?
        for object in try await remote.list(prefix: RemoteLayout.grantsPrefix) {
            guard case .grant? = RemoteLayout.parse(object.path),
                  let sealed = try? await remote.get(object.path, limit: RemoteLayout.maxManifestSize),
                  let opened = try? StoreKeyGrant.open(sealed, of: manifest.storeID, with: identity),
                  manifest.matches(opened.key) else { continue }
            // Two grants naming different roots: one was planted by someone holding the
            // store key, to hand this member a forged membership. Neither is trusted.
            if let found, found.root != opened.root {
                throw ConcordError(.unauthentic, "two key grants for this identity name different owners as the store's root: one was planted; ask the owner who invited you to check the store")
            }
            found = opened
        }
        return found.map { ($0.key, manifest.storeID, $0.root) }
    }
}
