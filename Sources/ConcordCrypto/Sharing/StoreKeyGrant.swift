import CSodium
import ConcordCore

/// How a member receives a shared store's key: the key, bound to its store's id, sealed
/// to the member's public identity (`crypto_box_seal`), which only the member's
/// ``DeviceIdentity`` opens. The one place a store key is handed to a member.
///
/// The grant also names the root of the store's membership: the Ed25519 key of the owner
/// who shared the store. The member trusts only that owner's `share` operation (anyone
/// holding the store key could write another), and every membership operation from there.
///
/// The sealed plaintext is `"cgr1"`, the 16-byte store id, the 32-byte key, then the
/// 32-byte root key (84 bytes; 132 sealed). A sealed box names no recipient, so whoever lists a remote's grants
/// learns how many there are, never for whom: a member finds its own by trying each.
public enum StoreKeyGrant {
    static let magic: [UInt8] = Array("cgr1".utf8)

    /// `key` of the store `storeID`, sealed to `member`.
    public static func seal(_ key: StoreKey, of storeID: StoreID, root: [UInt8], to member: PublicIdentity) -> [UInt8] {
        precondition(root.count == 32, "the membership root is an Ed25519 public key")
        return member.seal(magic + storeID.bytes + key.secret.copiedBytes + root)
    }

    /// The store key and membership root in `sealed` when it was sealed to `identity` for
    /// the store `storeID`; nil when it was sealed to another identity or another store.
    /// Throws `authenticationFailed` when it opens but does not hold a grant (planted).
    public static func open(_ sealed: [UInt8], of storeID: StoreID, with identity: DeviceIdentity) throws(ConcordError) -> (key: StoreKey, root: [UInt8])? {
        guard let plain = try? identity.openSealed(sealed) else { return nil }
        guard plain.count == magic.count + storeID.bytes.count + StoreKey.byteCount + 32, Array(plain.prefix(magic.count)) == magic else {
            throw ConcordError(.authenticationFailed, "a key grant sealed to this identity does not hold a store key: it was not written by Concord")
        }
        guard Array(plain.dropFirst(magic.count).prefix(storeID.bytes.count)) == storeID.bytes else { return nil }
        let key = try StoreKey(bytes: plain.dropFirst(magic.count + storeID.bytes.count).prefix(StoreKey.byteCount))
        return (key, Array(plain.suffix(32)))
    }

    /// The name a grant is stored under: the BLAKE2b-256 of its sealed bytes, in hex.
    public static func name(of sealed: [UInt8]) -> String {
        ContentHasher.hash(sealed).hex
    }
}

/// Signed objects of a shared store (docs/ARCHITECTURE.md §5, "Signatures"): the plaintext
/// of every batch, head and snapshot written by a member is an envelope
///
/// ```
/// "csg1" | signer's Ed25519 public key (32) | Ed25519 signature (64) | payload
/// ```
///
/// whose signature covers `"concord signed object v1\0" | path | "\0" | payload`: the object
/// cannot be moved to another name, or its payload changed, without the signer's key. The
/// envelope is then sealed as every object is; Ed25519 is deterministic, so a batch
/// sealed again after a crash is the same bytes.
public enum SignedEnvelope {
    /// The envelope's first four bytes. A payload of the unsigned formats never starts so
    /// (a batch and a snapshot start with `CNCD`, a head with `{`).
    public static let magic: [UInt8] = Array("csg1".utf8)
    /// The bytes before the payload.
    public static let headerSize = 4 + 32 + 64

    /// `payload`, signed by `identity` for the object at `path`.
    public static func sign(_ payload: [UInt8], path: String, by identity: DeviceIdentity) -> [UInt8] {
        let signature = identity.sign(message(payload[...], path: path))
        return magic + identity.publicIdentity.signingKey + signature + payload
    }

    /// Whether `plaintext` is an envelope (not an unsigned object).
    public static func isSigned(_ plaintext: [UInt8]) -> Bool {
        plaintext.count >= headerSize && Array(plaintext.prefix(4)) == magic
    }

    /// The signer's Ed25519 key and the payload of the envelope `plaintext` found at `path`,
    /// once its signature checks; nil when it is not an envelope. Throws `authenticationFailed`
    /// when the signature does not check (forged, altered, or moved from another name).
    public static func open(_ plaintext: [UInt8], path: String) throws(ConcordError) -> (signer: [UInt8], payload: [UInt8])? {
        guard isSigned(plaintext) else { return nil }
        let signer = Array(plaintext[4..<36])
        let signature = Array(plaintext[36..<100])
        let payload = plaintext[100...]
        Sodium.ensureInitialized()
        let text = message(payload, path: path)
        let valid = text.withUnsafeBufferPointer { crypto_sign_verify_detached(signature, $0.baseAddress, UInt64(text.count), signer) == 0 }
        guard valid else {
            throw ConcordError(.authenticationFailed, "remote object \(path) is unauthentic: its signature does not check (forged, altered, or moved from another name)")
        }
        return (signer, Array(payload))
    }

    static func message(_ payload: ArraySlice<UInt8>, path: String) -> [UInt8] {
        Array("concord signed object v1\0".utf8) + Array(path.utf8) + [0] + payload
    }
}

extension SubKey {
    /// A keyed BLAKE2b-128 of `bytes` in hex (32 digits): a name that says nothing without the
    /// store key (a membership log's, from its owner's signing key).
    public func keyedTag(of bytes: [UInt8]) -> String {
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: 16)
        secret.withKeyPointer { keyPointer in
            _ = crypto_generichash(&out, 16, bytes, UInt64(bytes.count), keyPointer, SubKey.byteCount)
        }
        return Hex.encode(out)
    }
}
