import CSodium
import ConcordCore

/// One key generation on the remote, the object `heads/keys/<id>` (docs/ARCHITECTURE.md §5): the
/// new store key sealed to each recipient, the generations it follows (its parents), and
/// — encrypted under the new key — the parents' keys (key chaining: whoever holds a
/// generation's key reads every older object), the signer's public key and its signature.
///
/// Layout (lengths in bytes; `p` parents, `b` recipients):
///
/// | offset | length | content |
/// |---|---|---|
/// | 0 | 4 | magic `"CNK"` and format version `01` |
/// | 4 | 16 | the generation's id |
/// | 20 | 1 | `p`, 1…16 |
/// | 21 | 16·p | the parents' ids, sorted |
/// | … | 2 | `b`, 1…1024, big-endian |
/// | … | 80·b | the new key sealed (`crypto_box_seal`) to each recipient's X25519 key, in random order |
/// | … | 24 | nonce |
/// | … | 192 + 32·p | XChaCha20-Poly1305 under the new key's ``KeyPurpose/keyring`` sub-key: the signer's X25519 and Ed25519 keys, the parents' keys in order, the signature |
///
/// The associated data is everything before the nonce and the object's path. The signer's
/// Ed25519 signature covers `"concord key object v1"`, a zero byte, the same bytes before
/// the nonce, the path, the signer's keys and the parents' keys. No key is in plaintext, and
/// neither are the recipients nor the signer: a replica tries its identity on each sealed box.
///
/// Format 2 (version byte `02`, what this release writes) adds, right after the sealed boxes,
/// the signer's *attestation*, which every holder of generation 0's key checks — a member that
/// is not a recipient too — so that who made a generation (and whether it was an owner) is
/// known to all without its key:
///
/// | … | 24 | nonce |
/// | … | 128 + 16 | XChaCha20-Poly1305 under generation 0's ``KeyPurpose/keyring`` sub-key: the signer's X25519 and Ed25519 keys, and its signature over `"concord key object signer v1"`, a zero byte, the bytes before this nonce and the path |
///
/// The attestation is part of the bytes before the chained part's nonce (its associated data,
/// and what the inner signature covers), and the inner signer must be the attested one.
public struct KeyObject: Sendable {
    /// The magic and format version 1 (no attestation).
    public static let prefix: [UInt8] = [0x43, 0x4E, 0x4B, 1]
    /// The magic and format version 2 (with the signer's attestation), which this release writes.
    public static let attestedPrefix: [UInt8] = [0x43, 0x4E, 0x4B, 2]
    /// The size of the attestation: nonce, the signer's keys, signature, tag.
    static let attestationByteCount = 24 + 64 + 64 + 16
    /// The most recipients one key object seals the key to.
    public static let maxRecipients = 1024
    /// The size of one sealed box of a key.
    public static let boxByteCount = 48 + StoreKey.byteCount
    /// The largest key object there is.
    public static let maxByteCount = 4 + 16 + 1 + 16 * 16 + 2 + 80 * 1024 + attestationByteCount + 24 + 64 + 32 * 16 + 64 + 16

    /// The generation this object makes.
    public let id: KeyGenerationID
    /// The generations it follows: the frontier of the key graph its signer saw.
    public let parents: [KeyGenerationID]
    /// The whole object, as stored.
    public let bytes: [UInt8]
    let boxes: [[UInt8]]
    /// The length of the bytes before the nonce.
    let headerLength: Int
    /// Where the attestation starts (format 2); nil for format 1.
    let attestationOffset: Int?

    /// The format version: 1, or 2 (attested).
    public var format: UInt8 { bytes[3] }

    private static let signatureContext = Array("concord key object v1".utf8) + [0]
    private static let attestationContext = Array("concord key object signer v1".utf8) + [0]

    /// Reads the structure of a key object fetched at `path` (nothing is opened).
    ///
    /// - Throws: `malformed` when the bytes are not a whole key object of the id its path
    ///   names — cut short (a torn write), longer, or not a key object at all;
    ///   `unsupportedVersion` for a format version newer than 2.
    public init(bytes: [UInt8], path: String, id expected: KeyGenerationID) throws(ConcordError) {
        func malformed(_ why: String) -> ConcordError {
            ConcordError(.malformed, "key object \(path) \(why); it was cut short, modified, or is not a key object; it is ignored — run `concord doctor`")
        }
        if bytes.count >= 4, bytes[0..<3].elementsEqual(Self.prefix[0..<3]), bytes[3] > Self.attestedPrefix[3] {
            throw ConcordError(.unsupportedVersion, "key object \(path) uses key-object format version \(bytes[3]), which this release cannot read (it reads versions 1 and 2): upgrade Concord; it is left aside")
        }
        guard bytes.count >= 23, Array(bytes.prefix(4)) == Self.prefix || Array(bytes.prefix(4)) == Self.attestedPrefix else {
            throw malformed("does not start with a key-object header")
        }
        guard let id = KeyGenerationID(bytes: bytes[4..<20]), id == expected, id != .zero else { throw malformed("names another generation than its name") }
        let parentCount = Int(bytes[20])
        var offset = 21 + 16 * parentCount
        guard (1...KeyGeneration.maxCount).contains(parentCount), bytes.count >= offset + 2 else { throw malformed("has a parent count out of range") }
        let parents = stride(from: 21, to: offset, by: 16).map { KeyGenerationID(bytes: bytes[$0..<($0 + 16)])! }
        guard parents == Array(Set(parents)).sorted(), !parents.contains(id) else { throw malformed("lists its parents out of order") }
        let boxCount = Int(bytes[offset]) << 8 | Int(bytes[offset + 1])
        offset += 2
        guard (1...Self.maxRecipients).contains(boxCount) else { throw malformed("has a recipient count out of range") }
        let boxes = (0..<boxCount).map { index in Array(bytes.dropFirst(offset + index * Self.boxByteCount).prefix(Self.boxByteCount)) }
        offset += boxCount * Self.boxByteCount
        let attestationOffset = bytes[3] == Self.attestedPrefix[3] ? offset : nil
        if attestationOffset != nil { offset += Self.attestationByteCount }
        let expectedLength = offset + XChaCha20Poly1305.nonceByteCount + Self.innerByteCount(parents: parentCount) + XChaCha20Poly1305.tagByteCount
        guard bytes.count == expectedLength else { throw malformed("is \(bytes.count) bytes, not the \(expectedLength) its header says") }
        self.id = id
        self.parents = parents
        self.boxes = boxes
        self.bytes = bytes
        self.headerLength = offset
        self.attestationOffset = attestationOffset
    }

    private static func innerByteCount(parents: Int) -> Int {
        32 + 32 + StoreKey.byteCount * parents + 64
    }

    /// A new key object for generation `key.generation` (one id), following `parents` (the
    /// frontier's ids and keys), its key sealed to each of `recipients`, signed by `signer`;
    /// format 2, attested under `base` (generation 0's key) when it is given, else format 1.
    public static func create(
        key: StoreKey, parents: [KeyGenerationID: StoreKey], recipients: [PublicIdentity], signer: DeviceIdentity, path: String,
        attestedUnder base: StoreKey? = nil
    ) throws(ConcordError) -> KeyObject {
        guard key.generation.ids.count == 1, let id = key.generation.ids.first, id != .zero else {
            throw ConcordError(.invalidParameter, "a key object makes one new generation")
        }
        let parentIDs = parents.keys.sorted()
        guard (1...KeyGeneration.maxCount).contains(parentIDs.count), !parents.keys.contains(id) else {
            throw ConcordError(.invalidParameter, "a key object follows 1 to \(KeyGeneration.maxCount) generations, not \(parentIDs.count)")
        }
        let distinct = Array(Set(recipients))
        guard (1...maxRecipients).contains(distinct.count) else {
            throw ConcordError(.invalidParameter, "a key object is sealed to 1 to \(maxRecipients) recipients, not \(distinct.count)")
        }
        var header = (base == nil ? prefix : attestedPrefix) + id.bytes + [UInt8(parentIDs.count)] + parentIDs.flatMap(\.bytes)
        header += [UInt8(distinct.count >> 8), UInt8(distinct.count & 0xff)]
        let raw = key.secret.copiedBytes
        // Random order: the boxes' order tells nothing of who was added when.
        for recipient in distinct.shuffled() { header += recipient.seal(raw) }
        let signerKeys = signer.publicIdentity.exchangeKey + signer.publicIdentity.signingKey
        if let base {
            let attestation = signer.sign(attestationContext + header + Array(path.utf8))
            let nonce = Sodium.randomBytes(XChaCha20Poly1305.nonceByteCount)
            let sealed = base.subkey(for: .keyring).secret.withKeyPointer { keyPointer in
                XChaCha20Poly1305.seal(key: keyPointer, nonce: nonce, plaintext: signerKeys + attestation, ad: header + Array(path.utf8))
            }
            header += nonce + sealed
        }
        let parentKeys = parentIDs.flatMap { parents[$0]!.secret.copiedBytes }
        let signature = signer.sign(signatureContext + header + Array(path.utf8) + signerKeys + parentKeys)
        let nonce = Sodium.randomBytes(XChaCha20Poly1305.nonceByteCount)
        let sealer = key.subkey(for: .keyring)
        let body = sealer.secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.seal(key: keyPointer, nonce: nonce, plaintext: signerKeys + parentKeys + signature, ad: header + Array(path.utf8))
        }
        return try KeyObject(bytes: header + nonce + body, path: path, id: id)
    }

    /// The generation's key, if one of the sealed boxes opens with `identity`; nil when none
    /// does (the identity is not a recipient — or its own box was modified).
    public func key(openedBy identity: DeviceIdentity) -> StoreKey? {
        for box in boxes {
            guard let raw = try? identity.openSealed(box), let key = try? StoreKey(bytes: raw) else { continue }
            return key.of(KeyGeneration([id])!)
        }
        return nil
    }

    /// Who made this generation, as its attestation says (format 2), checked with `base`
    /// (generation 0's key): readable by every holder of that key, recipient or not. Nil for
    /// a format-1 object, which names its signer only in the chained part.
    ///
    /// - Throws: `authenticationFailed` naming `path` when the attestation does not open
    ///   under `base` or its signature does not verify (modified, or forged).
    public func attestedSigner(base: StoreKey, path: String) throws(ConcordError) -> PublicIdentity? {
        guard let start = attestationOffset else { return nil }
        let before = Array(bytes.prefix(start))
        let nonce = Array(bytes[start..<(start + XChaCha20Poly1305.nonceByteCount)])
        let opened = base.subkey(for: .keyring).secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.open(key: keyPointer, nonce: nonce, ciphertext: bytes[(start + nonce.count)..<headerLength], ad: before + Array(path.utf8))
        }
        guard let inner = opened, inner.count == 128,
              let signer = PublicIdentity(exchangeKey: Array(inner[0..<32]), signingKey: Array(inner[32..<64])),
              signer.isValidSignature(Array(inner[64...]), of: Self.attestationContext + before + Array(path.utf8)) else {
            throw ConcordError(.authenticationFailed, "key object \(path) failed authentication: its signer's attestation does not open or verify under the store's first key; it was modified or forged — nothing is sealed under it; run `concord doctor`")
        }
        return signer
    }

    /// What the chained part says, opened with the generation's `key` (from a sealed box, or
    /// from a newer generation's chain): who signed it, and the parents' keys.
    public struct Chain: Sendable {
        /// The device that made the generation.
        public let signer: PublicIdentity
        /// Each parent generation's key.
        public let parentKeys: [KeyGenerationID: StoreKey]
    }

    /// Opens the chained part with `key` and checks the signature.
    ///
    /// - Throws: `authenticationFailed` naming `path` when it does not open under `key`
    ///   (modified, or not this generation's key) or the signature does not verify
    ///   (modified, or forged).
    public func chain(openedWith key: StoreKey, path: String) throws(ConcordError) -> Chain {
        let header = Array(bytes.prefix(headerLength))
        let nonce = Array(bytes[headerLength..<(headerLength + XChaCha20Poly1305.nonceByteCount)])
        let opened = key.subkey(for: .keyring).secret.withKeyPointer { keyPointer in
            XChaCha20Poly1305.open(key: keyPointer, nonce: nonce, ciphertext: bytes[(headerLength + nonce.count)...], ad: header + Array(path.utf8))
        }
        guard let inner = opened else {
            throw ConcordError(.authenticationFailed, "key object \(path) failed authentication: its chained keys do not open under the generation's key; it was modified — nothing is sealed under it; run `concord doctor`")
        }
        let signer = PublicIdentity(exchangeKey: Array(inner[0..<32]), signingKey: Array(inner[32..<64]))!
        let keysEnd = 64 + StoreKey.byteCount * parents.count
        let signature = Array(inner[keysEnd...])
        guard signer.isValidSignature(signature, of: Self.signatureContext + header + Array(path.utf8) + Array(inner[0..<keysEnd])) else {
            throw ConcordError(.authenticationFailed, "key object \(path) failed authentication: its signature does not verify; it was modified or forged — nothing is sealed under it; run `concord doctor`")
        }
        var parentKeys: [KeyGenerationID: StoreKey] = [:]
        for (index, parent) in parents.enumerated() {
            let start = 64 + StoreKey.byteCount * index
            parentKeys[parent] = try StoreKey(bytes: inner[start..<(start + StoreKey.byteCount)]).of(KeyGeneration([parent])!)
        }
        return Chain(signer: signer, parentKeys: parentKeys)
    }
}
