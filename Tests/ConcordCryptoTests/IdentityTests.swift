import ConcordCore
import ConcordCrypto
import Foundation
import Testing

/// Device identities (X25519 + Ed25519) and named stores' sealed names.
@Suite struct IdentityTests {
    @Test func anIdentitySignsAndOpensWhatIsSealedToItAndNothingElse() throws {
        let alice = DeviceIdentity.generate()
        let bob = DeviceIdentity.generate()
        #expect(alice.publicIdentity != bob.publicIdentity)
        let message = Array("add member bob as writer".utf8)
        let signature = alice.sign(message)
        #expect(alice.publicIdentity.isValidSignature(signature, of: message))
        #expect(!bob.publicIdentity.isValidSignature(signature, of: message))
        var tampered = signature
        tampered[10] ^= 1
        #expect(!alice.publicIdentity.isValidSignature(tampered, of: message))
        #expect(!alice.publicIdentity.isValidSignature(signature, of: Array("add member eve as owner".utf8)))
        #expect(alice.publicIdentity.isValidSignature(alice.sign([]), of: [UInt8]()))

        let storeKey = Array(repeating: UInt8(7), count: 32)
        let sealed = bob.publicIdentity.seal(storeKey)
        #expect(sealed.count == storeKey.count + 48)
        #expect(try bob.openSealed(sealed) == storeKey)
        #expect(throws: ConcordError.self) { try alice.openSealed(sealed) }
        var torn = sealed
        torn[torn.count - 1] ^= 0x80
        #expect(throws: ConcordError.self) { try bob.openSealed(torn) }
        #expect(throws: ConcordError.self) { try bob.openSealed(Array(sealed.prefix(20))) }
    }

    @Test func theSecretFileRoundTripsAndThePublicStringRefusesTypos() throws {
        let identity = DeviceIdentity.generate()
        let restored = try DeviceIdentity(secretFileContents: identity.secretFileContents)
        #expect(restored.publicIdentity == identity.publicIdentity)
        let message = Array("m".utf8)
        #expect(identity.publicIdentity.isValidSignature(restored.sign(message), of: message))

        let text = identity.publicIdentity.description
        #expect(text.hasPrefix("cpk1") && text.count == 4 + 136)
        #expect(try PublicIdentity(string: text) == identity.publicIdentity)
        #expect(try PublicIdentity(string: " \(text)\n") == identity.publicIdentity)
        var digits = Array(text)
        digits[20] = digits[20] == "0" ? "1" : "0"
        for bad in [String(digits), String(text.dropLast()), "cpk2" + text.dropFirst(4), ""] {
            #expect(throws: ConcordError.self) { try PublicIdentity(string: bad) }
        }
        for bad in ["", "{}", "{\"format\":2}", "{\"format\":1,\"exchangeSecret\":\"00\",\"signingSeed\":\"00\"}"] {
            #expect(throws: ConcordError.self) { try DeviceIdentity(secretFileContents: Array(bad.utf8)) }
        }
    }

    @Test func theSecretFileIsModeSixHundredAndNeverOverwritten() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("concord-id-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("store.db.identity").path
        let identity = DeviceIdentity.generate()
        try identity.writeNewSecretFile(at: path)
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        #expect(try DeviceIdentity(contentsOfSecretFile: path).publicIdentity == identity.publicIdentity)
        #expect(throws: ConcordError.self) { try DeviceIdentity.generate().writeNewSecretFile(at: path) }
        #expect(try DeviceIdentity(contentsOfSecretFile: path).publicIdentity == identity.publicIdentity)
    }

    @Test func aStoreNameIsSealedUnderItsOwnKeyAndSurvivesAPassphraseChange() throws {
        let key = StoreKey.random()
        let manifest = try StoreManifest.create(storeKey: key, passphrase: "p", limits: .minimum).naming("family recipes", storeKey: key, created: 1_700_000_000_000)
        let json = String(decoding: manifest.jsonBytes(), as: UTF8.self)
        #expect(!json.contains("family") && json.contains("\"created\" : 1700000000000"))
        let read = try StoreManifest(json: manifest.jsonBytes())
        #expect(read == manifest)
        #expect(try read.name(with: key) == "family recipes")
        #expect(throws: ConcordError.self) { try read.name(with: StoreKey.random()) }
        let changed = try read.settingPassphrase("q", storeKey: key, limits: .minimum)
        #expect(try changed.name(with: key) == "family recipes" && changed.created == manifest.created)
        #expect(try changed.removingPassphrase(storeKey: key).name(with: key) == "family recipes")
        // A sealed name copied into another store's concord.json does not open there, even
        // under the same key.
        let other = StoreManifest.createForKeyFile(storeKey: key)
        let copied = try StoreManifest(
            storeID: other.storeID, kdf: other.kdf, salt: nil, limits: nil, wrappedKey: nil, keyCheck: other.keyCheck,
            created: manifest.created, sealedName: manifest.sealedName)
        #expect(throws: ConcordError.self) { try copied.name(with: key) }
        #expect(try StoreManifest.create(storeKey: key, passphrase: "p", limits: .minimum).name(with: key) == nil)
        for bad in ["", "a\nb", String(repeating: "x", count: 201)] {
            #expect(throws: ConcordError.self) { try manifest.naming(bad, storeKey: key, created: 0) }
        }
    }
}
