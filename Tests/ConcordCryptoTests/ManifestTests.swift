import ConcordCore
import ConcordCrypto
import Foundation
import Testing

@Suite struct ManifestTests {
    let minimum = PasswordHashLimits.minimum

    @Test func passphraseWrapsAndUnwrapsTheStoreKey() throws {
        let storeKey = StoreKey.random()
        let manifest = try StoreManifest.create(storeKey: storeKey, passphrase: "correct horse", limits: minimum)
        #expect(manifest.kdf == .argon2id13)
        #expect(manifest.salt?.count == 16)
        #expect(manifest.limits == minimum)
        #expect(manifest.wrappedKey?.count == StoreManifest.wrappedKeyByteCount)
        #expect(try manifest.unlock(passphrase: "correct horse") == storeKey)
        #expect(manifest.matches(storeKey))
        try manifest.verify(storeKey)
    }

    @Test func wrongPassphraseIsATypedErrorBeforeAnythingElse() throws {
        let manifest = try StoreManifest.create(storeKey: .random(), passphrase: "correct horse", limits: minimum)
        let error = expectConcordError(.wrongKey) { _ = try manifest.unlock(passphrase: "correct horsE") }
        #expect(error?.message.contains(manifest.storeID.hex) == true)
        expectConcordError(.wrongKey) { _ = try manifest.unlock(passphrase: "") }
        expectConcordError(.wrongKey) { try manifest.verify(.random()) }
        #expect(!manifest.matches(.random()))
    }

    @Test func changingThePassphraseKeepsTheStoreKey() throws {
        let storeKey = StoreKey.random()
        let old = try StoreManifest.create(storeKey: storeKey, passphrase: "old one", limits: minimum)
        let sealed = EncryptedObject.encrypt(Array("data".utf8), path: "p", key: storeKey.subkey(for: .batches))

        let new = try old.changingPassphrase(from: "old one", to: "new one", limits: minimum)
        #expect(new.storeID == old.storeID)
        #expect(new.keyCheck == old.keyCheck)
        #expect(new.salt != old.salt)
        #expect(new.wrappedKey != old.wrappedKey)
        let unlocked = try new.unlock(passphrase: "new one")
        #expect(unlocked == storeKey)
        expectConcordError(.wrongKey) { _ = try new.unlock(passphrase: "old one") }
        // No data re-encryption: the old object opens with the key unlocked by the new passphrase.
        #expect(try EncryptedObject.open(sealed, path: "p", key: unlocked.subkey(for: .batches)) == Array("data".utf8))
        // A wrong old passphrase changes nothing.
        expectConcordError(.wrongKey) { _ = try old.changingPassphrase(from: "nope", to: "x", limits: minimum) }
        // A foreign key can never be wrapped into this store's manifest.
        expectConcordError(.wrongKey) { _ = try old.settingPassphrase("x", storeKey: .random(), limits: minimum) }
    }

    @Test func passphraseIsNormalizedToNFC() throws {
        let storeKey = StoreKey.random()
        let composed = "caf\u{E9} cr\u{E8}me"
        let decomposed = "cafe\u{301} cre\u{300}me"
        #expect(Array(composed.utf8) != Array(decomposed.utf8))
        let manifest = try StoreManifest.create(storeKey: storeKey, passphrase: composed, limits: minimum)
        #expect(try manifest.unlock(passphrase: decomposed) == storeKey)
    }

    @Test func interactiveLimitsWork() throws {
        let storeKey = StoreKey.random()
        let manifest = try StoreManifest.create(storeKey: storeKey, passphrase: "interactive")
        #expect(manifest.limits == .interactive)
        #expect(manifest.limits?.opsLimit == 2 && manifest.limits?.memLimit == 64 << 20)
        #expect(try manifest.unlock(passphrase: "interactive") == storeKey)
    }

    @Test func badParametersAreRejected() throws {
        expectConcordError(.invalidParameter) { _ = try StoreManifest.create(storeKey: .random(), passphrase: "", limits: minimum) }
        let tooMuch = PasswordHashLimits(opsLimit: 1_000, memLimit: 1 << 20)
        expectConcordError(.invalidParameter) { _ = try StoreManifest.create(storeKey: .random(), passphrase: "x", limits: tooMuch) }
        let tooLittle = PasswordHashLimits(opsLimit: 1, memLimit: 1_024)
        expectConcordError(.invalidParameter) { _ = try StoreManifest.create(storeKey: .random(), passphrase: "x", limits: tooLittle) }
    }

    /// `concord.json` is not authenticated: the storage could demand any Argon2id cost
    /// before "wrong passphrase". Limits past SENSITIVE (4 passes, 1 GiB) are refused before
    /// Argon2id runs; the costliest a person can choose still unlocks.
    @Test func aManifestDemandingAnExcessiveArgon2CostIsRefusedBeforeDeriving() throws {
        let manifest = try StoreManifest.create(storeKey: .random(), passphrase: "cost", limits: minimum)
        for (ops, mem) in [(32, UInt64(4) << 30), (5, UInt64(1) << 30), (4, (UInt64(1) << 30) + 1)] {
            let edited = try StoreManifest(json: try editedJSON(manifest) { $0["opsLimit"] = ops; $0["memLimit"] = mem })
            do {
                _ = try edited.unlock(passphrase: "cost")
                Issue.record("limits (\(ops), \(mem)) were accepted")
            } catch {
                #expect(error.code == .invalidParameter && error.message.contains("modified"), "\(error)")
            }
        }
        #expect(PasswordHashLimits.maximumAccepted == .sensitive)
        try PasswordHashLimits.sensitive.validate()
        try PasswordHashLimits.moderate.validate()
    }

    // MARK: Key files

    @Test func keyFilesRoundTripInBothForms() throws {
        let storeKey = StoreKey.random()
        let contents = storeKey.keyFileContents
        #expect(contents.count == 65 && contents.last == 0x0a)
        #expect(try StoreKey(keyFileContents: contents) == storeKey)

        let raw = (0..<32).map { UInt8($0 * 7) }
        #expect(try StoreKey(keyFileContents: raw) == StoreKey(bytes: raw))
        let upperHex = "  " + TestHex.encode(raw).uppercased() + "\r\n"
        #expect(try StoreKey(keyFileContents: Array(upperHex.utf8)) == StoreKey(bytes: raw))

        expectConcordError(.invalidKey) { _ = try StoreKey(keyFileContents: [UInt8](repeating: 1, count: 31)) }
        expectConcordError(.invalidKey) { _ = try StoreKey(keyFileContents: Array(String(repeating: "g", count: 64).utf8)) }
        expectConcordError(.invalidKey) { _ = try StoreKey(keyFileContents: [UInt8]()) }
        expectConcordError(.invalidKey) { _ = try StoreKey(bytes: [UInt8](repeating: 0, count: 33)) }
    }

    @Test func keyFileOnDiskUnlocksAKeyFileStore() throws {
        let storeKey = StoreKey.random()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("concord-crypto-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let path = directory.appendingPathComponent("store.key").path
        #expect(FileManager.default.createFile(atPath: path, contents: Data(storeKey.keyFileContents)))

        let manifest = StoreManifest.createForKeyFile(storeKey: storeKey)
        #expect(manifest.kdf == .keyFile)
        #expect(manifest.salt == nil && manifest.limits == nil && manifest.wrappedKey == nil)
        let loaded = try StoreKey(contentsOfKeyFile: path)
        try manifest.verify(loaded)
        #expect(loaded == storeKey)

        let otherPath = directory.appendingPathComponent("other.key").path
        #expect(FileManager.default.createFile(atPath: otherPath, contents: Data(StoreKey.random().keyFileContents)))
        expectConcordError(.wrongKey) { try manifest.verify(StoreKey(contentsOfKeyFile: otherPath)) }

        let missing = directory.appendingPathComponent("missing.key").path
        let error = expectConcordError(.invalidKey) { _ = try StoreKey(contentsOfKeyFile: missing) }
        #expect(error?.message.contains(missing) == true)
        expectConcordError(.invalidOperation) { _ = try manifest.unlock(passphrase: "anything") }
    }

    @Test func switchingBetweenKeyFileAndPassphraseKeepsTheKey() throws {
        let storeKey = StoreKey.random()
        let keyFileManifest = StoreManifest.createForKeyFile(storeKey: storeKey)
        let withPassphrase = try keyFileManifest.settingPassphrase("now a passphrase", storeKey: storeKey, limits: minimum)
        #expect(withPassphrase.storeID == keyFileManifest.storeID)
        #expect(try withPassphrase.unlock(passphrase: "now a passphrase") == storeKey)
        let back = try withPassphrase.removingPassphrase(storeKey: storeKey)
        #expect(back.kdf == .keyFile && back.storeID == keyFileManifest.storeID)
        try back.verify(storeKey)
        expectConcordError(.wrongKey) { _ = try withPassphrase.removingPassphrase(storeKey: .random()) }
    }

    // MARK: concord.json

    @Test func manifestJSONRoundTrips() throws {
        let manifest = try StoreManifest.create(storeKey: .random(), passphrase: "json", limits: minimum)
        let json = manifest.jsonBytes()
        #expect(manifest.jsonBytes() == json, "encoding is deterministic")
        let decoded = try StoreManifest(json: json)
        #expect(decoded == manifest)
        let object = try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any]
        #expect(object?["formatVersion"] as? Int == 1)
        #expect(object?["kdf"] as? String == "argon2id13")
        #expect(object?["storeID"] as? String == manifest.storeID.hex)
        #expect((object?["salt"] as? String)?.count == 32)
        #expect(Set(object?.keys.map { $0 } ?? []) == ["formatVersion", "storeID", "kdf", "salt", "opsLimit", "memLimit", "wrappedKey", "keyCheck"])

        let keyFileManifest = StoreManifest.createForKeyFile(storeKey: .random())
        #expect(try StoreManifest(json: keyFileManifest.jsonBytes()) == keyFileManifest)
    }

    /// Rewrites one field of a manifest's JSON.
    func editedJSON(_ manifest: StoreManifest, _ edit: (inout [String: Any]) -> Void) throws -> [UInt8] {
        var object = try #require(try JSONSerialization.jsonObject(with: Data(manifest.jsonBytes())) as? [String: Any])
        edit(&object)
        return Array(try JSONSerialization.data(withJSONObject: object))
    }

    @Test func unknownVersionsAndAlgorithmsAreReported() throws {
        let manifest = try StoreManifest.create(storeKey: .random(), passphrase: "v", limits: minimum)
        for version in [0, 2, 99] {
            let json = try editedJSON(manifest) { $0["formatVersion"] = version }
            let error = expectConcordError(.unsupportedVersion) { _ = try StoreManifest(json: json) }
            #expect(error?.message.contains("\(version)") == true)
        }
        // A future version may change every other field: the version is checked first.
        let future = Array(#"{"formatVersion": 2, "somethingNew": true}"#.utf8)
        expectConcordError(.unsupportedVersion) { _ = try StoreManifest(json: future) }
        let scrypt = try editedJSON(manifest) { $0["kdf"] = "scrypt" }
        expectConcordError(.unsupportedVersion) { _ = try StoreManifest(json: scrypt) }
    }

    @Test func malformedManifestsAreTypedErrors() throws {
        let manifest = try StoreManifest.create(storeKey: .random(), passphrase: "m", limits: minimum)
        let cases: [(String, [UInt8])] = [
            ("not JSON", Array("{not json".utf8)),
            ("empty", []),
            ("array", Array("[]".utf8)),
            ("truncated", Array(manifest.jsonBytes().prefix(40))),
            ("no version", try editedJSON(manifest) { $0["formatVersion"] = nil }),
            ("version as string", try editedJSON(manifest) { $0["formatVersion"] = "1" }),
            ("no store id", try editedJSON(manifest) { $0["storeID"] = nil }),
            ("bad store id", try editedJSON(manifest) { $0["storeID"] = "xyz" }),
            ("bad salt hex", try editedJSON(manifest) { $0["salt"] = "zz" }),
            ("short salt", try editedJSON(manifest) { $0["salt"] = "00ff" }),
            ("no key check", try editedJSON(manifest) { $0["keyCheck"] = nil }),
            ("short wrapped key", try editedJSON(manifest) { $0["wrappedKey"] = "00" }),
            ("limits half missing", try editedJSON(manifest) { $0["memLimit"] = nil }),
            ("negative limit", try editedJSON(manifest) { $0["opsLimit"] = -1 }),
            ("key file with salt", try editedJSON(StoreManifest.createForKeyFile(storeKey: .random())) { $0["salt"] = String(repeating: "0", count: 32) }),
        ]
        for (label, json) in cases {
            expectConcordError(.malformed, "\(label)") { _ = try StoreManifest(json: json) }
        }
    }

    @Test func tamperedManifestsNeverUnlock() throws {
        let storeKey = StoreKey.random()
        let manifest = try StoreManifest.create(storeKey: storeKey, passphrase: "tamper", limits: minimum)
        let otherSalt = try StoreManifest(json: editedJSON(manifest) { $0["salt"] = String(repeating: "ab", count: 16) })
        expectConcordError(.wrongKey) { _ = try otherSalt.unlock(passphrase: "tamper") }

        var wrapped = try #require(manifest.wrappedKey)
        wrapped[40] ^= 1
        let flipped = try StoreManifest(json: editedJSON(manifest) { $0["wrappedKey"] = TestHex.encode(wrapped) })
        expectConcordError(.wrongKey) { _ = try flipped.unlock(passphrase: "tamper") }

        let otherCheck = try StoreManifest(json: editedJSON(manifest) { $0["keyCheck"] = String(repeating: "00", count: 32) })
        expectConcordError(.malformed) { _ = try otherCheck.unlock(passphrase: "tamper") }

        let moved = try StoreManifest(json: editedJSON(manifest) { $0["storeID"] = StoreID.random().hex })
        expectConcordError(.wrongKey) { _ = try moved.unlock(passphrase: "tamper") }

        let greedy = try StoreManifest(json: editedJSON(manifest) { $0["memLimit"] = 1 << 40 })
        expectConcordError(.invalidParameter) { _ = try greedy.unlock(passphrase: "tamper") }
    }

    @Test func storeIDsAreRandomAndComparable() throws {
        let a = StoreID.random(), b = StoreID.random()
        #expect(a != b)
        #expect(a.hex.count == 32)
        #expect(StoreID(hex: a.hex) == a)
        #expect(StoreID(hex: a.hex.uppercased()) == a)
        #expect(StoreID(bytes: a.bytes) == a)
        #expect(StoreID(hex: "00") == nil)
        let manifest = StoreManifest.createForKeyFile(storeKey: .random(), storeID: a)
        try manifest.requireStoreID(a)
        let error = expectConcordError(.storeMismatch) { try manifest.requireStoreID(b) }
        #expect(error?.message.contains(a.hex) == true && error?.message.contains(b.hex) == true)
    }
}
