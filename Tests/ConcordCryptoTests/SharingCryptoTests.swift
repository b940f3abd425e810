import ConcordCore
import ConcordCrypto
import Foundation
import Testing

/// The signatures and sealed boxes a shared store rests on: Ed25519 against RFC 8032's
/// vectors, X25519 against RFC 7748's, the signed envelope and the key grant refusing every altered byte.
@Suite struct SharingCryptoTests {
    /// RFC 8032 §7.1, tests 1–3: secret seed, public key, message, signature.
    static let rfc8032: [(seed: String, publicKey: String, message: String, signature: String)] = [
        ("9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60", "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
         "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
        ("4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb", "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
         "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
        ("c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7", "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
         "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ]

    /// RFC 7748 §6.1: Alice's and Bob's X25519 secret and public keys.
    static let rfc7748: [(secret: String, publicKey: String)] = [
        ("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"),
        ("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"),
    ]

    static func identity(seed: String, exchangeSecret: String = String(repeating: "11", count: 32)) throws -> DeviceIdentity {
        let file = "{\"exchangeSecret\":\"\(exchangeSecret)\",\"format\":1,\"signingSeed\":\"\(seed)\"}"
        return try DeviceIdentity(secretFileContents: Array(file.utf8))
    }

    @Test func x25519MatchesRFC7748AndASealedBoxOpensOnlyForItsKey() throws {
        let identities = try Self.rfc7748.map { try Self.identity(seed: Self.rfc8032[0].seed, exchangeSecret: $0.secret) }
        for (identity, vector) in zip(identities, Self.rfc7748) {
            #expect(Hex.encode(identity.publicIdentity.exchangeKey) == vector.publicKey)
        }
        let (alice, bob) = (identities[0], identities[1])
        let key = Array("a store key of thirty-two bytes!".utf8)
        let sealed = bob.publicIdentity.seal(key)
        #expect(try bob.openSealed(sealed) == key)
        #expect(throws: ConcordError.self) { try alice.openSealed(sealed) }
        for index in [0, 31, 32, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(throws: ConcordError.self) { try bob.openSealed(altered) }
        }
    }

    @Test func ed25519MatchesRFC8032AndRefusesAlteredSignatures() throws {
        for vector in Self.rfc8032 {
            let identity = try Self.identity(seed: vector.seed)
            let message = try #require(Hex.decode(vector.message))
            let expected = try #require(Hex.decode(vector.signature))
            #expect(Hex.encode(identity.publicIdentity.signingKey) == vector.publicKey)
            #expect(identity.sign(message) == expected)
            #expect(identity.publicIdentity.isValidSignature(expected, of: message))
            for index in [0, 31, 32, 63] {
                var altered = expected
                altered[index] ^= 0x01
                #expect(!identity.publicIdentity.isValidSignature(altered, of: message))
            }
            #expect(!identity.publicIdentity.isValidSignature(expected, of: message + [0]))
        }
    }

    @Test func aSignedEnvelopeOpensOnlyAtItsNameAndUnaltered() throws {
        let writer = DeviceIdentity.generate()
        let payload = Array("CNCD a batch".utf8)
        let path = "replicas/0123456789abcdef0123456789abcdef/deltas/0000000000000001"
        let envelope = SignedEnvelope.sign(payload, path: path, by: writer)
        #expect(SignedEnvelope.sign(payload, path: path, by: writer) == envelope, "deterministic: a batch sealed again is the same bytes")
        let opened = try #require(try SignedEnvelope.open(envelope, path: path))
        #expect(opened.signer == writer.publicIdentity.signingKey && opened.payload == payload)
        #expect(try SignedEnvelope.open(payload, path: path) == nil, "an unsigned payload is not an envelope")
        #expect(throws: ConcordError.self) { try SignedEnvelope.open(envelope, path: path.replacingOccurrences(of: "01", with: "02")) }
        for index in [5, 40, 99, 100, envelope.count - 1] {
            var altered = envelope
            altered[index] ^= 0x01
            #expect(throws: ConcordError.self) { try SignedEnvelope.open(altered, path: path) }
        }
        // Another key cannot pass its signature off as the writer's.
        var swapped = envelope
        swapped.replaceSubrange(4..<36, with: DeviceIdentity.generate().publicIdentity.signingKey)
        #expect(throws: ConcordError.self) { try SignedEnvelope.open(swapped, path: path) }
    }

    @Test func aKeyGrantOpensOnlyForItsMemberAndStoreAndRefusesTampering() throws {
        let member = DeviceIdentity.generate()
        let key = StoreKey.random()
        let store = StoreID.random()
        let root = DeviceIdentity.generate().publicIdentity.signingKey
        let sealed = StoreKeyGrant.seal(key, of: store, root: root, to: member.publicIdentity)
        let opened = try #require(try StoreKeyGrant.open(sealed, of: store, with: member))
        #expect(opened.key == key && opened.root == root)
        #expect(try StoreKeyGrant.open(sealed, of: store, with: DeviceIdentity.generate()) == nil, "another identity finds nothing")
        #expect(try StoreKeyGrant.open(sealed, of: StoreID.random(), with: member) == nil, "a grant of another store is not this one's")
        for index in [0, 31, 32, 47, 48, sealed.count - 1] {
            var altered = sealed
            altered[index] ^= 0x01
            #expect(try StoreKeyGrant.open(altered, of: store, with: member) == nil)
        }
        #expect(try StoreKeyGrant.open(Array(sealed.dropLast()), of: store, with: member) == nil)
        #expect(StoreKeyGrant.name(of: sealed).count == 64)
        // A sealed box of something else, sealed to the member, is refused as not a grant.
        #expect(throws: ConcordError.self) { try StoreKeyGrant.open(member.publicIdentity.seal([1, 2, 3]), of: store, with: member) }
    }
}
