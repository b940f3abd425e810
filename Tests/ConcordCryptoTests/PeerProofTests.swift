import ConcordCore
import ConcordCrypto
import Testing

/// The peer channel's handshake proofs: they check only for the same store key, the same
/// role and the same two hellos.
@Suite struct PeerProofTests {
    static func hello(_ replica: String) -> PeerProof.Hello { PeerProof.Hello(replica: replica, nonce: PeerProof.nonce()) }

    @Test func aProofChecksOnlyForTheSameKeyRoleAndHellos() {
        let key = StoreKey.random().subkey(for: .peers)
        let (dialer, listener) = (Self.hello("aa"), Self.hello("bb"))
        let proof = PeerProof.proof(.dialer, dialer: dialer, listener: listener, key: key)
        #expect(proof.count == PeerProof.proofCount)
        #expect(PeerProof.verify(proof, .dialer, dialer: dialer, listener: listener, key: key))
        #expect(!PeerProof.verify(proof, .listener, dialer: dialer, listener: listener, key: key), "a proof reflected to its maker fails")
        #expect(!PeerProof.verify(proof, .dialer, dialer: listener, listener: dialer, key: key), "the sides swapped")
        #expect(!PeerProof.verify(proof, .dialer, dialer: dialer, listener: Self.hello("bb"), key: key), "another nonce: a replay")
        #expect(!PeerProof.verify(proof, .dialer, dialer: dialer, listener: listener, key: StoreKey.random().subkey(for: .peers)), "another store's key")
        var credentialed = dialer
        credentialed.credential = [1]
        #expect(!PeerProof.verify(proof, .dialer, dialer: credentialed, listener: listener, key: key), "the credential is covered")
        #expect(!PeerProof.verify(Array(proof.dropLast()), .dialer, dialer: dialer, listener: listener, key: key))
        #expect(PeerProof.nonce() != PeerProof.nonce())
        #expect(KeyPurpose.peers.subkeyID == 8 && KeyPurpose.all.contains(.peers))
    }
}
