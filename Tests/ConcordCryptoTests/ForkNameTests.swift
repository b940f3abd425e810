import ConcordCore
import ConcordCrypto
import Testing

/// The fresh id a merged fork's renamed side moves to (docs/ARCHITECTURE.md §4, "Merging a
/// fork"): the same for every replica holding the store key, another for another fork,
/// another side, or another store.
@Suite struct ForkNameTests {
    @Test func theFreshIDIsKeyedAndDependsOnReplicaSeqAndFingerprint() throws {
        let key = try StoreKey(bytes: Array(0..<32)).subkey(for: .forkNames)
        let a = ReplicaID(high: 1, low: 2)
        let fresh = ForkName.renamedReplica(a, seq: 2, fingerprint: 0xABCD, key: key)
        #expect(KeyPurpose.forkNames.subkeyID == 11 && KeyPurpose.all.contains(.forkNames))
        #expect(fresh == ForkName.renamedReplica(a, seq: 2, fingerprint: 0xABCD, key: try StoreKey(bytes: Array(0..<32)).subkey(for: .forkNames)))
        #expect(fresh != a)
        let others = [
            ForkName.renamedReplica(a, seq: 3, fingerprint: 0xABCD, key: key),
            ForkName.renamedReplica(a, seq: 2, fingerprint: 0xABCE, key: key),
            ForkName.renamedReplica(ReplicaID(high: 1, low: 3), seq: 2, fingerprint: 0xABCD, key: key),
            ForkName.renamedReplica(a, seq: 2, fingerprint: 0xABCD, key: StoreKey.random().subkey(for: .forkNames)),
        ]
        #expect(Set(others + [fresh]).count == 5)
    }
}
