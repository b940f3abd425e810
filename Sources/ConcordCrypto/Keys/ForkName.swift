import CSodium
import ConcordCore

/// The fresh replica id the renamed side of a forked history moves to when the fork is
/// merged (docs/ARCHITECTURE.md §4, "Merging a fork"): a keyed BLAKE2b-128 of the forked
/// replica, the seq where the two histories part and the fingerprint of the renamed side's
/// batch at that seq, under the `forkNames` sub-key. Every replica holding the store key
/// computes the same id; the storage cannot; two forks of one replica, or two forks at one
/// seq with other contents, get different ids.
public enum ForkName {
    /// `replica′` for the side of the fork of `replica` at `seq` whose batch there has the
    /// fingerprint `fingerprint`.
    ///
    /// - Precondition: `key.purpose == .forkNames` (a programming error otherwise).
    public static func renamedReplica(_ replica: ReplicaID, seq: UInt64, fingerprint: UInt64, key: SubKey) -> ReplicaID {
        precondition(key.purpose == .forkNames, "fork names are keyed by the forkNames sub-key, not \(key.purpose)")
        Sodium.ensureInitialized()
        let message = Array("concord fork v1".utf8) + [0] + replica.bytes + bigEndian(seq) + bigEndian(fingerprint)
        var out = [UInt8](repeating: 0, count: 16)
        key.secret.withKeyPointer { keyPointer in
            message.withNonNullBytes { bytes, count in
                _ = crypto_generichash(&out, 16, bytes, UInt64(count), keyPointer, SubKey.byteCount)
            }
        }
        // 16 bytes always make a replica id.
        return ReplicaID(bytes: out) ?? ReplicaID(high: 0, low: 1)
    }

    private static func bigEndian(_ value: UInt64) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: value >> (56 - 8 * $0)) }
    }
}
