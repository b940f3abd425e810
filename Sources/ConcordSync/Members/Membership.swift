import ConcordCore
import ConcordCrypto

/// A member of a shared store as the membership operations say.
public struct Member: Hashable, Sendable {
    /// The member's public identity.
    public let identity: PublicIdentity
    /// The name the owner gave.
    public var name: String
    /// What the member may do.
    public var role: MemberRole
    /// Set once the member is removed: per replica that wrote as the member, the last seq
    /// accepted from it (anything later is rejected).
    public var removedCut: [ReplicaID: UInt64]?
    /// With ``removedCut``: the last own membership operation of the member accepted.
    var removedOpCut: UInt64 = 0

    /// Whether the member was removed.
    public var isRemoved: Bool { removedCut != nil }
    /// `active`, or `removed`.
    public var status: String { isRemoved ? "removed" : "active" }
}

/// Who may do what in a shared store: the result of every authentic membership operation,
/// applied in one order every replica agrees on (docs/ARCHITECTURE.md §5, "Members").
///
/// Convergence: the state is a function of the *set* of operations. Operations are applied
/// in (Lamport stamp, issuer, counter) order; an operation counts only when its issuer is an
/// active owner at that point. A removal carries a cut of the removed member's own
/// operations: the removed member's operations past it are left out however they are
/// stamped (a removal wins over what the removed owner did concurrently, and a removed owner
/// cannot backdate), and the application repeats until the set left out is stable. A
/// removed key stays removed: a later or concurrent `add` of it changes nothing. Two
/// bodies of one issuer under one counter (equivocation) are both left out.
public struct Membership: Hashable, Sendable {
    /// Members by Ed25519 key (hex), removed ones included.
    public private(set) var members: [String: Member] = [:]
    /// The unsigned history accepted: per replica, the last seq written before the store
    /// was shared.
    public private(set) var legacyCut: [ReplicaID: UInt64] = [:]
    /// Operations that did not count, one line each.
    public private(set) var ignored: [String] = []

    /// Whether the store is shared (some owner shared it).
    public var isShared: Bool { !members.isEmpty }

    /// The member whose Ed25519 key is `signingKey`.
    public func member(signingKey: [UInt8]) -> Member? {
        members[Hex.encode(signingKey)]
    }

    /// The members sorted by name, then key.
    public var sorted: [Member] {
        members.values.sorted { ($0.name, $0.identity.description) < ($1.name, $1.identity.description) }
    }

    /// The state `operations` (authentic, of one store) lead to, from the `share` of the
    /// owner whose Ed25519 key is `root` (the key the member's grant named). Without a
    /// root, the first `share` in order counts — which anyone holding the store key could
    /// forge: only a replica that has no grant (a passphrase device) resolves so.
    static func resolve(_ operations: some Sequence<SignedOperation>, root: [UInt8]? = nil) -> Membership {
        var byIssuerCounter: [String: Set<SignedOperation>] = [:]
        for operation in operations {
            byIssuerCounter["\(operation.operation.issuer)#\(operation.operation.counter)", default: []].insert(operation)
        }
        var equivocations: [String] = []
        let distinct = byIssuerCounter.flatMap { key, versions -> [SignedOperation] in
            if versions.count > 1 {
                equivocations.append("membership operation \(key.prefix(20))…: two different operations under one counter; both ignored")
                return []
            }
            return Array(versions)
        }.sorted(by: SignedOperation.precedes)
        var excluded: [String: UInt64] = [:]
        var state = Membership()
        for _ in 0..<8 {
            state = apply(root: root, distinct.filter { op in excluded[op.operation.issuer].map { op.operation.counter <= $0 } ?? true })
            var next: [String: UInt64] = [:]
            for member in state.members.values where member.isRemoved { next[member.identity.description] = member.removedOpCut }
            if next == excluded { break }
            excluded = next
        }
        state.ignored = equivocations.sorted() + state.ignored
        return state
    }

    private static func apply(root: [UInt8]?, _ ordered: [SignedOperation]) -> Membership {
        var state = Membership()
        for signed in ordered {
            let op = signed.operation
            let issuerKey = Hex.encode(signed.issuer.signingKey)
            if op.action == MembershipOperation.share {
                guard root.map({ $0 == signed.issuer.signingKey }) ?? true else {
                    state.ignored.append("a `share` by \(op.issuer.prefix(16))…, who is not the owner that shared the store, ignored")
                    continue
                }
                guard state.members.isEmpty, let name = op.name else {
                    state.ignored.append("a second `share` by \(op.issuer.prefix(16))… ignored: the store was already shared")
                    continue
                }
                state.members[issuerKey] = Member(identity: signed.issuer, name: name, role: .owner)
                state.legacyCut = op.replicaCut
                continue
            }
            guard let issuer = state.members[issuerKey], !issuer.isRemoved, issuer.role == .owner else {
                state.ignored.append("a membership operation by \(op.issuer.prefix(16))…, who was not an owner then, ignored")
                continue
            }
            guard let memberText = op.member, let identity = try? PublicIdentity(string: memberText) else {
                state.ignored.append("a membership operation without a member ignored")
                continue
            }
            let key = Hex.encode(identity.signingKey)
            switch op.action {
            case MembershipOperation.add:
                guard let name = op.name, let role = op.role.flatMap(MemberRole.init) else { continue }
                if let existing = state.members[key] {
                    if existing.isRemoved { continue }  // removal is final
                    state.members[key]?.name = name
                    state.members[key]?.role = role
                } else {
                    state.members[key] = Member(identity: identity, name: name, role: role)
                }
            case MembershipOperation.remove:
                guard var member = state.members[key], !member.isRemoved else { continue }
                member.removedCut = op.replicaCut
                member.removedOpCut = op.opCut ?? 0
                state.members[key] = member
            default:
                state.ignored.append("a membership operation \"\(op.action)\" this release does not know ignored")
            }
        }
        return state
    }
}
