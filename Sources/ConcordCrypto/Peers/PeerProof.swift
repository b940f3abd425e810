import CSodium
import ConcordCore

/// The proofs of the LAN peer channel's handshake: each side shows it holds the store key
/// by a keyed BLAKE2b-256 over both sides' hellos, never the key itself.
///
/// The key is derived from the ``KeyPurpose/peers`` sub-key with
/// `crypto_kdf_derive_from_key(32, 1, "concpeer", peersSubKey)`, so the sub-key itself can
/// later seal other peer objects (announcements) without sharing a key with the proofs.
///
/// A proof covers a fixed label, the role of the side that makes it (dialer or listener,
/// so that a proof reflected back to its maker fails), and both hellos: each side's replica
/// id, 32 random bytes of nonce, and the credential it offers (empty today: a member
/// identity's public key and signature go there when stores are shared by members).
/// Fresh nonces on both sides make a recorded handshake useless to replay.
public enum PeerProof {
    /// The length of a hello's nonce and of a proof.
    public static let nonceCount = 32
    public static let proofCount = 32

    /// Which side of a connection makes a proof.
    public enum Role: UInt8, Sendable {
        case dialer = 0x44  // "D"
        case listener = 0x4c  // "L"
    }

    /// What one side says in its hello.
    public struct Hello: Hashable, Sendable {
        /// The replica id of the side, as text.
        public var replica: String
        /// ``PeerProof/nonceCount`` random bytes, fresh for each connection.
        public var nonce: [UInt8]
        /// The credential offered beside the store key: empty today. The hook for a member
        /// identity (its public key and a signature over the nonces) once stores have members.
        public var credential: [UInt8]

        public init(replica: String, nonce: [UInt8], credential: [UInt8] = []) {
            self.replica = replica
            self.nonce = nonce
            self.credential = credential
        }
    }

    /// ``nonceCount`` bytes from libsodium's secure random generator.
    public static func nonce() -> [UInt8] {
        Sodium.ensureInitialized()
        var bytes = [UInt8](repeating: 0, count: nonceCount)
        randombytes_buf(&bytes, nonceCount)
        return bytes
    }

    /// The proof `role` makes, under `key` (the ``KeyPurpose/peers`` sub-key), of the
    /// handshake between `dialer` and `listener`.
    ///
    /// - Precondition: `key.purpose == .peers` (a programming error otherwise).
    public static func proof(_ role: Role, dialer: Hello, listener: Hello, key: SubKey) -> [UInt8] {
        precondition(key.purpose == .peers, "peer proofs are keyed by the peers sub-key, not \(key.purpose)")
        Sodium.ensureInitialized()
        var macKey = [UInt8](repeating: 0, count: 32)
        defer { sodium_memzero(&macKey, macKey.count) }
        key.secret.withKeyPointer { keyPointer in
            _ = "concpeer".withCString { context in
                crypto_kdf_derive_from_key(&macKey, 32, 1, context, keyPointer)
            }
        }
        var message = Array("concord peer handshake v1".utf8)
        message.append(role.rawValue)
        for hello in [dialer, listener] {
            for field in [Array(hello.replica.utf8), hello.nonce, hello.credential] {
                let count = UInt32(clamping: field.count)
                message += [UInt8(count >> 24), UInt8(truncatingIfNeeded: count >> 16), UInt8(truncatingIfNeeded: count >> 8), UInt8(truncatingIfNeeded: count)]
                message += field
            }
        }
        var out = [UInt8](repeating: 0, count: proofCount)
        message.withNonNullBytes { pointer, count in
            _ = crypto_generichash(&out, proofCount, pointer, UInt64(count), macKey, 32)
        }
        return out
    }

    /// Whether `proof` is the one `role` makes of this handshake, compared in constant time.
    public static func verify(
        _ proof: [UInt8], _ role: Role, dialer: Hello, listener: Hello, key: SubKey
    ) -> Bool {
        let expected = self.proof(role, dialer: dialer, listener: listener, key: key)
        guard proof.count == expected.count else { return false }
        return sodium_memcmp(proof, expected, expected.count) == 0
    }
}
