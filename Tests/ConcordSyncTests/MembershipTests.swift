import ConcordCore
import ConcordCrypto
import Foundation
import Testing
@testable import ConcordSync

/// The membership of a shared store as a function of its signed operations: the same
/// set gives the same members in any order, removal wins, and only owners count.
@Suite struct MembershipTests {
    let store = StoreID.random()
    let alice = DeviceIdentity.generate()
    let bob = DeviceIdentity.generate()
    let carol = DeviceIdentity.generate()
    let dave = DeviceIdentity.generate()

    func op(_ action: String, by issuer: DeviceIdentity, _ counter: UInt64, lamport: UInt64, member: DeviceIdentity? = nil,
            name: String? = nil, role: String? = nil, cut: [String: UInt64]? = nil, opCut: UInt64? = nil) -> SignedOperation {
        SignedOperation(signing: MembershipOperation(
            action: action, store: store.hex, issuer: issuer.publicIdentity.description, counter: counter, lamport: lamport,
            member: member?.publicIdentity.description, name: name, role: role, cut: cut, opCut: opCut), with: issuer)
    }

    /// Alice shares the store and adds Bob as a second owner and Carol as a writer.
    var start: [SignedOperation] {
        [op("share", by: alice, 1, lamport: 1, name: "alice", cut: [:]),
         op("add", by: alice, 2, lamport: 2, member: bob, name: "bob", role: "owner"),
         op("add", by: alice, 3, lamport: 3, member: carol, name: "carol", role: "writer")]
    }

    /// The membership from Alice's `share`, the root her grants name.
    func resolve(_ operations: [SignedOperation]) -> Membership {
        Membership.resolve(operations, root: alice.publicIdentity.signingKey)
    }

    func role(_ membership: Membership, _ identity: DeviceIdentity) -> String? {
        membership.member(signingKey: identity.publicIdentity.signingKey).map { $0.isRemoved ? "removed" : $0.role.name }
    }

    @Test func twoOwnersActingAtOnceConvergeInAnyOrderAndRemovalWins() {
        // At once: Bob removes Carol (he had seen none of her operations); Alice, not having
        // seen that, makes Carol an owner and adds Dave.
        let concurrent = [
            op("remove", by: bob, 1, lamport: 4, member: carol, cut: [:], opCut: 0),
            op("add", by: alice, 4, lamport: 4, member: carol, name: "carol", role: "owner"),
            op("add", by: alice, 5, lamport: 5, member: dave, name: "dave", role: "reader"),
        ]
        let all = start + concurrent
        let expected = resolve(all)
        #expect(role(expected, carol) == "removed", "the removal wins over the concurrent add")
        #expect(role(expected, dave) == "reader" && role(expected, bob) == "owner" && role(expected, alice) == "owner")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            #expect(resolve(all.shuffled(using: &generator)) == expected)
        }
        // Each owner's view before merging differs; merged, both agree.
        #expect(role(resolve(start + [concurrent[0]]), carol) == "removed")
        #expect(role(resolve(start + concurrent[1...]), carol) == "owner")
    }

    @Test func aRemovedOwnersConcurrentOrBackdatedOperationsDoNotCount() {
        // Alice removes Bob having seen none of his operations; Bob, concurrently, adds Dave
        // as an owner, stamped before the removal — and once removed, backdates another.
        let all = start + [
            op("remove", by: alice, 4, lamport: 9, member: bob, cut: [:], opCut: 0),
            op("add", by: bob, 1, lamport: 4, member: dave, name: "dave", role: "owner"),
            op("add", by: bob, 2, lamport: 1, member: carol, name: "carol", role: "owner"),
        ]
        let membership = resolve(all)
        #expect(role(membership, bob) == "removed")
        #expect(role(membership, dave) == nil)
        #expect(role(membership, carol) == "writer")
        // What Bob did that Alice had seen when she removed him stays.
        let seen = start + [
            op("add", by: bob, 1, lamport: 4, member: dave, name: "dave", role: "writer"),
            op("remove", by: alice, 4, lamport: 9, member: bob, cut: [:], opCut: 1),
        ]
        #expect(role(resolve(seen), dave) == "writer")
    }

    @Test func onlyOwnersOperationsCountAndForgedOrReplayedOnesAreRefused() throws {
        // Carol, a writer, signs an operation making herself an owner and adding Dave.
        let forged = start + [
            op("add", by: carol, 1, lamport: 10, member: carol, name: "carol", role: "owner"),
            op("add", by: carol, 2, lamport: 11, member: dave, name: "dave", role: "writer"),
            op("share", by: dave, 1, lamport: 0, name: "dave", cut: [:]),
        ]
        let membership = resolve(forged)
        #expect(role(membership, carol) == "writer" && role(membership, dave) == nil)
        #expect(membership.ignored.count == 3)
        // Without a root, Dave's earlier-stamped `share` would take the store: the root
        // from the grant is what keeps a holder of the store key from doing so.
        #expect(role(Membership.resolve(forged), dave) == "owner")

        // An operation whose role was changed after signing, or signed by another key than
        // its issuer, or of another store, does not read.
        let signed = op("add", by: alice, 4, lamport: 4, member: dave, name: "dave", role: "reader")
        let tampered = Array(String(decoding: signed.body, as: UTF8.self).replacingOccurrences(of: "\"reader\"", with: "\"owner\"").utf8)
        #expect(tampered != signed.body)
        #expect(throws: ConcordError.self) { try SignedOperation(body: tampered, signature: signed.signature, store: store) }
        #expect(throws: ConcordError.self) { try SignedOperation(body: signed.body, signature: carol.sign(SignedOperation.domain + signed.body), store: store) }
        #expect(throws: ConcordError.self) { try SignedOperation(body: signed.body, signature: signed.signature, store: StoreID.random()) }
        #expect(try SignedOperation(body: signed.body, signature: signed.signature, store: store) == signed)

        // Two different operations under one counter of one issuer: neither counts.
        let equivocated = start + [signed, op("add", by: alice, 4, lamport: 4, member: dave, name: "dave", role: "owner")]
        #expect(role(resolve(equivocated), dave) == nil)
    }
}
