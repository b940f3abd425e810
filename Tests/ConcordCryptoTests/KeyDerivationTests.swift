import CSodium
import ConcordCore
import ConcordCrypto
import Testing

@Suite struct KeyDerivationTests {
    @Test func purposesHaveFixedDistinctIDs() {
        #expect(KeyPurpose.batches.subkeyID == 1)
        #expect(KeyPurpose.heads.subkeyID == 2)
        #expect(KeyPurpose.snapshots.subkeyID == 3)
        #expect(KeyPurpose.blobContents.subkeyID == 4)
        #expect(KeyPurpose.blobNames.subkeyID == 5)
        #expect(KeyPurpose.keyCheck.subkeyID == 6)
        #expect(Set(KeyPurpose.all.map(\.subkeyID)).count == KeyPurpose.all.count)
        #expect(KeyPurpose.kdfContext.utf8.count == 8)
    }

    @Test func subkeysAreDistinctPerPurposeAndDeterministic() {
        let storeKey = StoreKey.random()
        let keys = KeyPurpose.all.map { storeKey.subkey(for: $0).rawBytesForTesting }
        #expect(Set(keys).count == KeyPurpose.all.count, "every purpose has its own sub-key")
        for (purpose, bytes) in zip(KeyPurpose.all, keys) {
            #expect(storeKey.subkey(for: purpose).rawBytesForTesting == bytes)
            #expect(storeKey.subkey(for: purpose) == storeKey.subkey(for: purpose))
            #expect(StoreKey.random().subkey(for: purpose).rawBytesForTesting != bytes)
        }
        #expect(storeKey.subkey(for: .batches) != storeKey.subkey(for: .snapshots))
    }

    /// The derivation is exactly `crypto_kdf_derive_from_key(32, id, "concord1", key)`.
    @Test func subkeysMatchLibsodiumDirectly() {
        let keyBytes = (0..<32).map { UInt8($0) }
        let storeKey = fixedStoreKey()
        for purpose in KeyPurpose.all {
            var expected = [UInt8](repeating: 0, count: 32)
            _ = "concord1".withCString { crypto_kdf_derive_from_key(&expected, 32, purpose.subkeyID, $0, keyBytes) }
            #expect(storeKey.subkey(for: purpose).rawBytesForTesting == expected, "\(purpose)")
        }
    }

    @Test func storeKeysAreRandomAndRedacted() {
        let a = StoreKey.random(), b = StoreKey.random()
        #expect(a != b)
        #expect(a == a)
        #expect(a.description == "StoreKey(redacted)")
        #expect(!"\(a.subkey(for: .batches))".contains(TestHex.encode(a.subkey(for: .batches).rawBytesForTesting)))
    }

    // MARK: Blob names

    @Test func keyedNamesAreDeterministicPerKeyAndDifferAcrossKeys() throws {
        let storeKey = StoreKey.random()
        let key = storeKey.subkey(for: .blobNames)
        let hash = ContentHasher.hash(Array("file contents".utf8))
        let name = BlobName.keyedName(for: hash, key: key)
        #expect(name.count == 64)
        #expect(name.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(BlobName.keyedName(for: hash, key: storeKey.subkey(for: .blobNames)) == name)
        #expect(BlobName.keyedName(for: hash, key: StoreKey.random().subkey(for: .blobNames)) != name)
        #expect(BlobName.keyedName(for: ContentHasher.hash(Array("other".utf8)), key: key) != name)
        #expect(name != hash.hex, "the storage must not see the content hash")

        var expected = [UInt8](repeating: 0, count: 32)
        let subkey = key.rawBytesForTesting
        _ = crypto_generichash(&expected, 32, hash.bytes, 32, subkey, 32)
        #expect(name == TestHex.encode(expected))

        let path = BlobName.remotePath(for: hash, key: key)
        #expect(path == "blobs/\(name.prefix(2))/\(name)")
        #expect(BlobName.remotePath(keyedName: name) == path)
    }

    // MARK: Content hashes

    @Test func contentHasherMatchesKnownBLAKE2b256Values() {
        #expect(ContentHasher.hash([UInt8]()).hex == "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8")
        #expect(ContentHasher.hash(Array("abc".utf8)).hex == "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319")
        var hasher = ContentHasher()
        hasher.update(Array("a".utf8))
        hasher.update([UInt8]())
        hasher.update(Array("bc".utf8))
        #expect(hasher.finalize().hex == "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319")
    }

    @Test(arguments: [1, 127, 128, 129, 1_000, 65_536, 300_001])
    func streamingHashMatchesOneShotLibsodium(size: Int) {
        let bytes = seededBytes(size, seed: UInt64(size) &* 3)
        var expected = [UInt8](repeating: 0, count: 32)
        _ = crypto_generichash(&expected, 32, bytes, UInt64(bytes.count), nil, 0)
        var hasher = ContentHasher()
        var offset = 0, step = 1
        while offset < bytes.count {
            let end = min(bytes.count, offset + step)
            hasher.update(bytes[offset..<end])
            offset = end
            step = step * 3 + 1
        }
        #expect(hasher.finalize().bytes == expected)
        #expect(ContentHasher.hash(bytes).bytes == expected)
        bytes.withUnsafeBytes { raw in
            var rawHasher = ContentHasher()
            rawHasher.update(raw)
            #expect(rawHasher.finalize().bytes == expected)
        }
    }
}
