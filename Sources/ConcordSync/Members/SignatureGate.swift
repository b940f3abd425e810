import ConcordCore
import ConcordCrypto
import ConcordRemote
import Foundation

/// The check every fetched batch, head and snapshot of a shared store passes before it is
/// used (docs/ARCHITECTURE.md §5, "Signatures"), and the signature every written one gets.
/// ``RemoteObjects`` and ``RemoteWrites`` call it; a store that is not shared passes through.
///
/// An object is authentic when its envelope's signature checks, its signer is a member
/// who may write (an owner or writer), the replica it belongs to writes as that signer
/// (bound to the first signer seen for it), and — for a member since removed — its seq is
/// within the removal's cut for that replica. Unsigned objects are accepted only within the
/// unsigned history the store had when it was shared (`share`'s cut). Anything else throws
/// `unauthentic`, which every reader treats as damage: it
/// is named, never applied, and everything else still syncs.
final class SignatureGate: @unchecked Sendable {
    private let lock = NSLock()
    private var membership: Membership?
    private var bindings: [ReplicaID: String] = [:]
    private var bindingsChanged = false
    /// Whether the remote's membership logs were read by this engine.
    private var membersRead = false
    /// This device's identity, which signs what it writes.
    let identity: DeviceIdentity?

    init(identity: DeviceIdentity?) {
        self.identity = identity
    }

    /// Sets the membership in force and the bindings kept locally; `read`: the remote's
    /// membership logs were just read.
    func update(_ membership: Membership?, bindings: [ReplicaID: String], read: Bool = false) {
        lock.withLock {
            if read { membersRead = true }
            self.membership = membership
            self.bindings.merge(bindings) { current, _ in current }
        }
    }

    /// The membership in force; nil while the store is not shared.
    var current: Membership? { lock.withLock { membership } }

    /// The bindings learned since the last call, to keep; nil when none changed.
    func takeChangedBindings() -> [ReplicaID: String]? {
        lock.withLock {
            guard bindingsChanged else { return nil }
            bindingsChanged = false
            return bindings
        }
    }

    /// `payload` as written at `path`: signed by this device's identity once the store is
    /// shared, else unchanged. An object within the unsigned history (its seq within the
    /// legacy cut of its replica) stays unsigned: sealed again, a batch pushed before the
    /// store was shared is the very same bytes.
    func sign(_ payload: [UInt8], path: String) -> [UInt8] {
        guard let identity, signs(path) else { return payload }
        return SignedEnvelope.sign(payload, path: path, by: identity)
    }

    /// Whether what this device writes at `path` is signed (``sign(_:path:)``).
    func signs(_ path: String) -> Bool {
        guard identity != nil, let membership = current, membership.isShared else { return false }
        switch RemoteLayout.parse(path) {
        case let .batch(replica, seq)?, let .head(replica, seq)?, let .snapshot(replica, seq)?:
            guard let cut = membership.legacyCut[replica] else { return true }
            return seq > cut
        default:
            return true
        }
    }

    /// The payload of a peer announcement opened at `path`, once it is authentic: in a
    /// shared store signed by a member not removed, and — when `replica` (which the caller
    /// reads from the payload) is bound to a signer already — by that one. An announcement
    /// never binds a replica: only its batches, heads and snapshots do.
    func openAnnouncement(_ plaintext: [UInt8], path: String, replica: ([UInt8]) throws(ConcordError) -> ReplicaID) throws(ConcordError) -> [UInt8] {
        let (membership, bindings) = lock.withLock { (self.membership, self.bindings) }
        guard let membership, membership.isShared else {
            guard !SignedEnvelope.isSigned(plaintext) else {
                throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed, but this store has no members this replica knows of")
            }
            return plaintext
        }
        let opened = try Self.envelope(plaintext, path: path)
        guard let (signer, payload) = opened else {
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is not signed, and this store is shared")
        }
        guard let member = membership.member(signingKey: signer), !member.isRemoved else {
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed by a key that is not a member")
        }
        let announced = try replica(payload)
        if let bound = bindings[announced], bound != Hex.encode(signer) {
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed by \"\(member.name)\", but replica \(announced) writes as another member")
        }
        return payload
    }

    /// The payload of `plaintext`, opened at `path`, once it is authentic.
    func open(_ plaintext: [UInt8], path: String) throws(ConcordError) -> [UInt8] {
        let (membership, bindings) = lock.withLock { (self.membership, self.bindings) }
        guard let membership, membership.isShared else {
            guard !SignedEnvelope.isSigned(plaintext) else {
                // The store was shared since this replica last read its members (it reads
                // them only once it knows the store is shared: a store that is not costs
                // no request more). The sync reads them and starts again.
                guard lock.withLock({ membersRead }) else {
                    throw ConcordError(.membershipUnknown, "remote object \(path) is signed: the store was shared since this replica last read its members; sync again to read them")
                }
                throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed, but this store has no members")
            }
            return plaintext
        }
        let replica: ReplicaID
        let seq: UInt64
        switch RemoteLayout.parse(path) {
        case let .batch(r, s)?, let .head(r, s)?, let .snapshot(r, s)?: (replica, seq) = (r, s)
        default: throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: not an object a member signs")
        }
        let opened = try Self.envelope(plaintext, path: path)
        guard let (signer, payload) = opened else {
            if let cut = membership.legacyCut[replica], seq <= cut { return plaintext }
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is not signed, and this store is shared")
        }
        guard let member = membership.member(signingKey: signer) else {
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed by a key that is not a member")
        }
        let signerKey = Hex.encode(signer)
        if let bound = bindings[replica], bound != signerKey {
            let owner = membership.members[bound]?.name ?? "another member"
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed by \"\(member.name)\", but replica \(replica) writes as \"\(owner)\"")
        }
        if let cut = member.removedCut {
            guard let last = cut[replica], seq <= last else {
                throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: \"\(member.name)\" wrote it after being removed")
            }
        } else if !member.role.canWrite {
            throw ConcordError(.unauthentic, "remote object \(path) is unauthentic: it is signed by \"\(member.name)\", a \(member.role), who may not write")
        }
        if bindings[replica] == nil {
            lock.withLock {
                if self.bindings[replica] == nil {
                    self.bindings[replica] = signerKey
                    bindingsChanged = true
                }
            }
        }
        return payload
    }

    /// The signer and payload of `plaintext`'s signed envelope, nil when it is not signed; a
    /// malformed envelope or a signature that does not verify is `unauthentic`.
    private static func envelope(_ plaintext: [UInt8], path: String) throws(ConcordError) -> (signer: [UInt8], payload: [UInt8])? {
        do throws(ConcordError) {
            return try SignedEnvelope.open(plaintext, path: path)
        } catch {
            throw ConcordError(.unauthentic, error.message)
        }
    }
}

extension ConcordError.Code {
    /// A remote object of a shared store that is not signed by a member who may write it
    /// then: a reader's write, a forged signer, a removed member's later write, an unsigned
    /// object. Never applied; named in the sync report and by doctor.
    public static let unauthentic = ConcordError.Code("unauthentic")
    /// A signed object met before this replica read the store's members: the sync reads
    /// them and starts again (`SyncEngine.sync(mode:progress:)`); other calls say to sync.
    public static let membershipUnknown = ConcordError.Code("membershipUnknown")
}
