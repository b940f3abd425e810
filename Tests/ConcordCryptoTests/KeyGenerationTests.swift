import ConcordCore
import ConcordCrypto
import Testing

/// Key generations: objects sealed under a rotated key name their generation (format 2),
/// key objects seal the key to recipients and chain the older keys, and the keyring
/// converges on one current key after concurrent rotations.
@Suite struct KeyGenerationTests {
    let path = "replicas/3f2a9c0d4e5b6a718293a4b5c6d7e8f9/deltas/000000000000002a"
    let base = StoreKey.random()

    func rotation(from parents: [KeyGenerationID: StoreKey], to recipients: [PublicIdentity], by signer: DeviceIdentity) throws -> (key: StoreKey, object: KeyObject) {
        let id = KeyGenerationID.random()
        let key = StoreKey.random().of(KeyGeneration([id])!)
        return (key, try KeyObject.create(key: key, parents: parents, recipients: recipients, signer: signer, path: Keyring.path(id)))
    }

    @Test func generationZeroSealsFormatOneAndOthersNameTheirGeneration() throws {
        let plaintext = Array("hello".utf8)
        #expect(EncryptedObject.encrypt(plaintext, path: path, key: base.subkey(for: .batches)).prefix(4).elementsEqual(EncryptedObject.prefix))
        let generation = KeyGeneration([KeyGenerationID.random(), KeyGenerationID.random()])!
        let key = StoreKey.random().of(generation).subkey(for: .batches)
        let sealed = EncryptedObject.encrypt(plaintext, path: path, key: key)
        #expect(sealed[3] == EncryptedObject.generationFormatVersion)
        #expect(sealed.count == plaintext.count + EncryptedObject.overheadByteCount(for: generation))
        #expect(try EncryptedObject.generation(of: sealed, path: path) == generation)
        #expect(try EncryptedObject.open(sealed, path: path, key: key) == plaintext)
        #expect(try EncryptedObject.open(consuming: sealed, path: path, key: key) == plaintext)
        // Deterministic sealing names the generation too, and gives the same bytes.
        #expect(EncryptedObject.encryptDeterministically(plaintext, path: path, key: key) == EncryptedObject.encryptDeterministically(plaintext, path: path, key: key))
        // A relabelled generation (one id byte changed) or the same bytes under another
        // generation's label fail authentication.
        var relabelled = sealed
        relabelled[6] ^= 1
        #expect(throws: ConcordError.self) { try EncryptedObject.open(relabelled, path: path, key: key) }
        let sameBytesOtherLabel = StoreKey.random().of(generation).subkey(for: .batches)
        #expect(throws: ConcordError.self) { try EncryptedObject.open(sealed, path: path, key: sameBytesOtherLabel) }
        #expect(throws: ConcordError.self) { try EncryptedObject.open(sealed, path: path, key: base.subkey(for: .batches)) }
    }

    @Test func mergedKeyNeedsEveryKeyAndIsTheSameForAll() throws {
        let (a, b) = (KeyGenerationID.random(), KeyGenerationID.random())
        let (keyA, keyB) = (StoreKey.random(), StoreKey.random())
        let merged = try #require(StoreKey.merged([a: keyA, b: keyB]))
        #expect(merged == StoreKey.merged([b: keyB, a: keyA]))
        #expect(merged.generation == KeyGeneration([a, b]))
        #expect(merged != keyA && merged != keyB)
        #expect(merged != StoreKey.merged([a: keyA, b: StoreKey.random()]))
        #expect(StoreKey.merged([a: keyA]) == keyA)
    }

    @Test func keyObjectOpensForRecipientsOnlyAndChainsTheParentKey() throws {
        let (owner, member, removed) = (DeviceIdentity.generate(), DeviceIdentity.generate(), DeviceIdentity.generate())
        let (key, object) = try rotation(from: [.zero: base], to: [owner.publicIdentity, member.publicIdentity], by: owner)
        #expect(object.key(openedBy: owner) == key)
        #expect(object.key(openedBy: member) == key)
        #expect(object.key(openedBy: removed) == nil)
        let chain = try object.chain(openedWith: key, path: Keyring.path(object.id))
        #expect(chain.signer == owner.publicIdentity)
        #expect(chain.parentKeys[.zero] == base)
        // No key in plaintext: neither the new key nor the parent's appears in the bytes.
        for secret in [key, base] {
            let raw = Array(secret.keyFileContents.prefix(64))
            #expect(!String(decoding: object.bytes, as: UTF8.self).contains(String(decoding: raw, as: UTF8.self)))
        }
    }

    @Test func tamperedKeyObjectIsRejectedWithATypedError() throws {
        let (owner, member) = (DeviceIdentity.generate(), DeviceIdentity.generate())
        let (key, object) = try rotation(from: [.zero: base], to: [owner.publicIdentity, member.publicIdentity], by: owner)
        let path = Keyring.path(object.id)
        let boxesStart = 4 + 16 + 1 + 16 + 2
        // Another recipient's box, the chained keys, the signature (last bytes before the
        // tag), the parent list: each rejected by whoever opens the key.
        for offset in [boxesStart + 10, boxesStart + 80 + 10, object.bytes.count - 30, object.bytes.count - 1, 21] {
            var bytes = object.bytes
            bytes[offset] ^= 0x01
            let error = #expect(throws: ConcordError.self) {
                let tampered = try KeyObject(bytes: bytes, path: path, id: object.id)
                let opened = tampered.key(openedBy: owner) ?? tampered.key(openedBy: member) ?? key
                _ = try tampered.chain(openedWith: opened, path: path)
            }
            #expect(error?.code == .authenticationFailed || error?.code == .malformed)
        }
        // A key object cut short (a torn write), or under another name: malformed.
        #expect(throws: ConcordError.self) { try KeyObject(bytes: Array(object.bytes.dropLast(7)), path: path, id: object.id) }
        #expect(throws: ConcordError.self) { try KeyObject(bytes: object.bytes, path: path, id: .random()) }
        // A forged chain: a recipient re-signs the object with its own identity, chaining a
        // wrong parent key; whoever holds the real parent key rejects it.
        let forger = DeviceIdentity.generate()
        let forged = try KeyObject.create(key: key, parents: [.zero: StoreKey.random()], recipients: [owner.publicIdentity], signer: forger, path: path)
        let error = #expect(throws: ConcordError.self) { try Keyring(base: base, objects: [forged], identity: owner) }
        #expect(error?.code == .authenticationFailed)
    }

    /// Two owners rotate from the same parent at once: A and B each removing one member.
    /// Everyone holding both keys converges on one current key; each removed member holds
    /// only one and derives nothing current.
    @Test func concurrentRotationsConvergeAndExcludeEitherRemovedMember() throws {
        let (a, b, c, d) = (DeviceIdentity.generate(), DeviceIdentity.generate(), DeviceIdentity.generate(), DeviceIdentity.generate())
        let (_, dropsD) = try rotation(from: [.zero: base], to: [a, b, c].map(\.publicIdentity), by: a)
        let (_, dropsC) = try rotation(from: [.zero: base], to: [a, b, d].map(\.publicIdentity), by: b)
        let ringA = try Keyring(base: base, objects: [dropsD, dropsC], identity: a)
        let ringB = try Keyring(base: base, objects: [dropsC, dropsD], identity: b)
        #expect(ringA.frontier == KeyGeneration([dropsD.id, dropsC.id]))
        let current = try #require(ringA.current)
        #expect(ringB.current == current)
        #expect(current.generation == ringA.frontier)
        for removed in [c, d] {
            let ring = try Keyring(base: base, objects: [dropsD, dropsC], identity: removed)
            #expect(ring.isRemoved)
            #expect(ring.unopened.count == 1)
            // Every key it holds fails to open an object sealed under the current key.
            let sealed = EncryptedObject.encrypt([1, 2, 3], path: path, key: current.subkey(for: .batches))
            for key in ring.keys.values {
                #expect(throws: ConcordError.self) { try EncryptedObject.open(sealed, path: path, key: key.of(current.generation).subkey(for: .batches)) }
            }
        }
        // A later rotation by A from the merged frontier: B gets it, and through its chain
        // every older key; a passphrase-only replica is removed.
        let (next, after) = try rotation(from: ringA.keys.filter { ringA.frontier.ids.contains($0.key) }, to: [a, b].map(\.publicIdentity), by: a)
        let later = try Keyring(base: base, objects: [dropsD, dropsC, after], identity: b)
        #expect(later.frontier == KeyGeneration([after.id]))
        #expect(later.current == next)
        #expect(later.key(for: ringA.frontier) == current)
        let chainedOnly = try Keyring(base: base, objects: [dropsD, dropsC, after], identity: nil)
        #expect(chainedOnly.isRemoved)
        // An object whose parent is missing waits; the frontier ignores it.
        let (_, orphan) = try rotation(from: [.random(): StoreKey.random()], to: [a.publicIdentity], by: a)
        let waiting = try Keyring(base: base, objects: [orphan], identity: a)
        #expect(waiting.frontier == .zero)
        #expect(waiting.waiting == [orphan.id])
    }
}
