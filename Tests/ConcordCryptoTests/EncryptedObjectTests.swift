import CSodium
import ConcordCore
import ConcordCrypto
import Testing

@Suite struct EncryptedObjectTests {
    let key = StoreKey.random().subkey(for: .batches)
    let path = "replicas/3f2a9c0d4e5b6a718293a4b5c6d7e8f9/deltas/000000000000002a"

    @Test(arguments: [0, 1, 17, 4096, 8192 + 123, 1 << 20, 5 * (1 << 20) + 3])
    func roundTripsAnySize(size: Int) throws {
        let plaintext = seededBytes(size, seed: UInt64(size))
        let sealed = EncryptedObject.encrypt(plaintext, path: path, key: key)
        #expect(sealed.count == size + EncryptedObject.overheadByteCount)
        #expect(Array(sealed.prefix(4)) == EncryptedObject.prefix)
        #expect(try EncryptedObject.open(sealed, path: path, key: key) == plaintext)
        // Opened in its own memory (how a snapshot is opened): the same plaintext.
        #expect(try EncryptedObject.open(consuming: sealed, path: path, key: key) == plaintext)
    }

    /// Opening in place fails exactly as opening into new memory does, for every damaged
    /// header byte, a flip in each of the first 300 ciphertext bytes and the tag, each
    /// truncation near the end, another path and another key — with the same error.
    @Test func openingInPlaceFailsExactlyAsOpeningDoes() {
        let plaintext = seededBytes(4096 + 5, seed: 9)
        let sealed = EncryptedObject.encrypt(plaintext, path: path, key: key)
        var damaged: [(bytes: [UInt8], path: String, key: SubKey)] = []
        for offset in Array(0..<(EncryptedObject.headerByteCount + 300)) + Array((sealed.count - 16)..<sealed.count) {
            var bytes = sealed
            bytes[offset] ^= 0x20
            damaged.append((bytes, path, key))
        }
        for cut in 0..<20 { damaged.append((Array(sealed.dropLast(cut + 1)), path, key)) }
        damaged.append((Array(sealed.prefix(10)), path, key))
        damaged.append((sealed, path + "0", key))
        damaged.append((sealed, path, StoreKey.random().subkey(for: .batches)))
        for (index, (bytes, path, key)) in damaged.enumerated() {
            var intoNew: ConcordError?
            var inPlace: ConcordError?
            do { _ = try EncryptedObject.open(bytes, path: path, key: key) } catch { intoNew = error }
            do { _ = try EncryptedObject.open(consuming: bytes, path: path, key: key) } catch { inPlace = error }
            #expect(intoNew != nil && intoNew == inPlace, "case \(index): \(String(describing: intoNew)) vs \(String(describing: inPlace))")
        }
    }

    @Test func sealingTwiceGivesDifferentObjects() throws {
        let plaintext = Array("same bytes".utf8)
        let a = EncryptedObject.encrypt(plaintext, path: path, key: key)
        let b = EncryptedObject.encrypt(plaintext, path: path, key: key)
        #expect(a != b, "random nonces must differ")
        #expect(try EncryptedObject.open(a, path: path, key: key) == plaintext)
        #expect(try EncryptedObject.open(b, path: path, key: key) == plaintext)
    }

    /// Every single-bit flip of the header, the first 4 KiB of ciphertext and the tag is
    /// rejected with a typed error and never yields plaintext. Flips of the version byte
    /// report `unsupportedVersion`; every other flip `authenticationFailed`.
    @Test func everySingleBitFlipIsRejected() {
        let seed: UInt64 = 0xC0_4C_0D
        let plaintext = seededBytes(8192 + 123, seed: seed)
        var sealed = EncryptedObject.encrypt(plaintext, path: path, key: key)
        let offsets = Array(0..<(EncryptedObject.headerByteCount + 4096)) + Array((sealed.count - 16)..<sealed.count)
        var failures: [String] = []
        var checked = 0
        for offset in offsets {
            for bit in 0..<8 {
                sealed[offset] ^= 1 << bit
                defer { sealed[offset] ^= 1 << bit }
                checked += 1
                do {
                    _ = try EncryptedObject.open(sealed, path: path, key: key)
                    failures.append("byte \(offset) bit \(bit): opened")
                } catch {
                    let expected: ConcordError.Code = offset == 3 ? .unsupportedVersion : .authenticationFailed
                    if error.code != expected || !error.message.contains(path) {
                        failures.append("byte \(offset) bit \(bit): \(error)")
                    }
                }
            }
        }
        #expect(checked == offsets.count * 8)
        #expect(failures.isEmpty, "seed \(seed): \(failures.prefix(10))")
        // The object is intact again after the flips were undone.
        #expect((try? EncryptedObject.open(sealed, path: path, key: key)) == plaintext)
    }

    @Test func movedOrReplayedObjectIsRejected() throws {
        let sealed = EncryptedObject.encrypt(Array("batch 42".utf8), path: path, key: key)
        let otherPath = "replicas/3f2a9c0d4e5b6a718293a4b5c6d7e8f9/deltas/000000000000002b"
        let error = expectConcordError(.authenticationFailed) {
            _ = try EncryptedObject.open(sealed, path: otherPath, key: key)
        }
        #expect(error?.message.contains(otherPath) == true)
        #expect(error?.message.contains("concord doctor") == true)
        expectConcordError(.authenticationFailed) { _ = try EncryptedObject.open(sealed, path: "", key: key) }
    }

    @Test func otherKeysCannotOpen() throws {
        let sealed = EncryptedObject.encrypt(Array("snapshot".utf8), path: path, key: key)
        let otherStore = StoreKey.random().subkey(for: .batches)
        expectConcordError(.authenticationFailed) { _ = try EncryptedObject.open(sealed, path: path, key: otherStore) }
        let storeKey = StoreKey.random()
        let sealedBatch = EncryptedObject.encrypt(Array("x".utf8), path: path, key: storeKey.subkey(for: .batches))
        expectConcordError(.authenticationFailed) {
            _ = try EncryptedObject.open(sealedBatch, path: path, key: storeKey.subkey(for: .snapshots))
        }
    }

    @Test func everyTruncationIsRejected() {
        let plaintext = seededBytes(1000, seed: 7)
        let sealed = EncryptedObject.encrypt(plaintext, path: path, key: key)
        var failures: [Int] = []
        for length in 0..<sealed.count {
            let error = concordError { _ = try EncryptedObject.open(sealed.prefix(length), path: path, key: key) }
            if error?.code != .authenticationFailed || error?.message.contains(path) != true { failures.append(length) }
        }
        #expect(failures.isEmpty, "truncations not rejected: \(failures.prefix(20))")
        expectConcordError(.authenticationFailed) { _ = try EncryptedObject.open(sealed + [0], path: path, key: key) }
        expectConcordError(.authenticationFailed) { _ = try EncryptedObject.open([UInt8](), path: path, key: key) }
    }

    @Test func emptyPlaintextIsAuthenticatedToo() {
        var sealed = EncryptedObject.encrypt([UInt8](), path: path, key: key)
        #expect(sealed.count == EncryptedObject.overheadByteCount)
        #expect((try? EncryptedObject.open(sealed, path: path, key: key)) == [])
        sealed[sealed.count - 1] ^= 0x80
        expectConcordError(.authenticationFailed) { _ = try EncryptedObject.open(sealed, path: path, key: key) }
    }

    @Test func unknownFormatVersionIsReportedAsSuch() {
        var sealed = EncryptedObject.encrypt(Array("v1".utf8), path: path, key: key)
        // Version 2 names a key generation (KeyGenerationTests); 3 is one no release wrote.
        sealed[3] = 3
        let error = expectConcordError(.unsupportedVersion) { _ = try EncryptedObject.open(sealed, path: path, key: key) }
        #expect(error?.message.contains("upgrade") == true)
    }

    /// Locks the encrypted-object format: sub-key derivation (context "concord1", id 1), the
    /// header layout and the associated data (prefix + path). Recomputed here directly
    /// with libsodium, and pinned as bytes.
    @Test func formatIsFixtureLocked() throws {
        let storeKey = fixedStoreKey()
        let nonce = (0..<24).map { UInt8(0xA0 + $0) }
        let plaintext = Array("hello, concord".utf8)
        let objectPath = "replicas/00112233445566778899aabbccddeeff/deltas/0000000000000001"
        let sealed = EncryptedObject.encrypt(plaintext, path: objectPath, key: storeKey.subkey(for: .batches), nonce: nonce)

        var subkey = [UInt8](repeating: 0, count: 32)
        let keyBytes = (0..<32).map { UInt8($0) }
        _ = "concord1".withCString { crypto_kdf_derive_from_key(&subkey, 32, 1, $0, keyBytes) }
        let ad = [0x43, 0x4E, 0x43, 0x01] + Array(objectPath.utf8)
        let body = try XChaCha20Poly1305.seal(key: subkey, nonce: nonce, plaintext: plaintext, ad: ad)
        #expect(sealed == [0x43, 0x4E, 0x43, 0x01] + nonce + body)
        #expect(TestHex.encode(sealed) == Self.pinnedFixture, "\(TestHex.encode(sealed))")
        #expect(try EncryptedObject.open(TestHex.decode(Self.pinnedFixture), path: objectPath, key: storeKey.subkey(for: .batches)) == plaintext)
    }

    static let pinnedFixture =
        "434e4301a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7"
        + "53e7e20d6ae0beb7abbffe2aed22290b7f72070b42eaf9ed791cbf58e470"
}

@Suite struct DeterministicEncryptionTests {
    /// The synthetic nonce is the keyed BLAKE2b-192 of "concord synthetic nonce v1", 0, the
    /// path, 0 and the plaintext under the batches' sub-key, and the fingerprint its first 8
    /// bytes read little-endian: pinned by a vector computed independently (Python's
    /// hashlib.blake2b, the sub-key derived as crypto_kdf_derive_from_key does), so hashing
    /// in parts gives the bytes every release sealed before.
    @Test func theSyntheticNonceAndTheFingerprintMatchAnIndependentVector() throws {
        let key = try StoreKey(bytes: Array(0..<32)).subkey(for: .batches)
        let path = "replicas/3f2a9c0d4e5b6a718293a4b5c6d7e8f9/deltas/000000000000002a"
        let plaintext = Array("a delta of a replica".utf8)
        let sealed = EncryptedObject.encryptDeterministically(plaintext, path: path, key: key)
        #expect(Array(sealed[4..<28]) == TestHex.decode("a2d0f19e18f6354af26c2e74de0c9f9417dcc7f9405dc4f5"))
        #expect(EncryptedObject.fingerprint(of: plaintext, path: path, key: key) == 0x4a35_f618_9ef1_d0a2)
    }

    @Test func sameInputsGiveSameBytesAndOpenNormally() throws {
        let key = StoreKey.random().subkey(for: .batches)
        let plaintext = Array("a delta".utf8)
        let once = EncryptedObject.encryptDeterministically(plaintext, path: "replicas/a/deltas/1", key: key)
        let again = EncryptedObject.encryptDeterministically(plaintext, path: "replicas/a/deltas/1", key: key)
        #expect(once == again)
        #expect(try EncryptedObject.open(once, path: "replicas/a/deltas/1", key: key) == plaintext)
        // Another path or plaintext gives another nonce.
        let otherPath = EncryptedObject.encryptDeterministically(plaintext, path: "replicas/a/deltas/2", key: key)
        let otherText = EncryptedObject.encryptDeterministically(Array("b delta".utf8), path: "replicas/a/deltas/1", key: key)
        #expect(Array(once[4..<28]) != Array(otherPath[4..<28]))
        #expect(Array(once[4..<28]) != Array(otherText[4..<28]))
        #expect(throws: ConcordError.self) { try EncryptedObject.open(once, path: "replicas/a/deltas/2", key: key) }
    }
}
