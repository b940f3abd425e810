import ConcordCore
import ConcordCrypto
import Foundation
import Testing

/// Project Wycheproof's XChaCha20-Poly1305 vectors against ``XChaCha20Poly1305``.
@Suite struct WycheproofTests {
    struct File: Decodable {
        let algorithm: String
        let numberOfTests: Int
        let testGroups: [Group]
    }

    struct Group: Decodable {
        let ivSize: Int
        let keySize: Int
        let tagSize: Int
        let tests: [Case]
    }

    struct Case: Decodable {
        let tcId: Int
        let comment: String
        let key: String
        let iv: String
        let aad: String
        let msg: String
        let ct: String
        let tag: String
        let result: String
        let flags: [String]
    }

    static let expectedCount = 315

    @Test func allXChaCha20Poly1305VectorsAgreeWithLibsodium() throws {
        let data = try Data(contentsOf: Vectors.wycheproofXChaCha)
        let file = try JSONDecoder().decode(File.self, from: data)
        #expect(file.algorithm == "XCHACHA20-POLY1305")
        #expect(file.numberOfTests == Self.expectedCount)

        var ran = 0, valid = 0, invalid = 0, acceptable = 0
        for group in file.testGroups {
            for vector in group.tests {
                ran += 1
                let key = TestHex.decode(vector.key)
                let nonce = TestHex.decode(vector.iv)
                let ad = TestHex.decode(vector.aad)
                let message = TestHex.decode(vector.msg)
                let sealed = TestHex.decode(vector.ct) + TestHex.decode(vector.tag)
                let label: Comment = "tcId \(vector.tcId) (\(vector.result)): \(vector.comment) \(vector.flags)"

                let opened: Result<[UInt8], ConcordError> = Result { () throws(ConcordError) in
                    try XChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: sealed, ad: ad)
                }
                let resealed: Result<[UInt8], ConcordError> = Result { () throws(ConcordError) in
                    try XChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: message, ad: ad)
                }
                switch vector.result {
                case "valid":
                    valid += 1
                    #expect((try? opened.get()) == message, label)
                    #expect((try? resealed.get()) == sealed, label)
                case "invalid":
                    invalid += 1
                    guard case .failure(let error) = opened else {
                        Issue.record("invalid vector opened: \(label)")
                        continue
                    }
                    let expectedCode: ConcordError.Code =
                        nonce.count == XChaCha20Poly1305.nonceByteCount ? .authenticationFailed : .invalidParameter
                    #expect(error.code == expectedCode, label)
                    // Sealing the message must not reproduce the invalid ciphertext-and-tag.
                    #expect((try? resealed.get()) != sealed, label)
                case "acceptable":
                    // Whatever libsodium decides, open and seal must agree with each other.
                    acceptable += 1
                    if case .success(let plaintext) = opened {
                        #expect(plaintext == message, label)
                        #expect((try? resealed.get()) == sealed, label)
                    } else {
                        #expect((try? resealed.get()) != sealed, label)
                    }
                default:
                    Issue.record("unknown result \(vector.result): \(label)")
                }
            }
        }
        #expect(ran == Self.expectedCount, "ran \(ran) Wycheproof vectors, expected \(Self.expectedCount)")
        #expect(valid + invalid + acceptable == ran)
        #expect(valid == 246 && invalid == 69, "valid \(valid), invalid \(invalid), acceptable \(acceptable)")
    }

    @Test func rawPrimitiveIsDeterministicGivenTheNonce() throws {
        let key = [UInt8](repeating: 7, count: 32)
        let nonce = [UInt8](repeating: 9, count: 24)
        let first = try XChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: Array("hello".utf8), ad: Array("ad".utf8))
        let second = try XChaCha20Poly1305.seal(key: key, nonce: nonce, plaintext: Array("hello".utf8), ad: Array("ad".utf8))
        #expect(first == second)
        #expect(first.count == 5 + XChaCha20Poly1305.tagByteCount)
        #expect(try XChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: first, ad: Array("ad".utf8)) == Array("hello".utf8))
        expectConcordError(.authenticationFailed) {
            _ = try XChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: first, ad: Array("AD".utf8))
        }
        expectConcordError(.authenticationFailed) {
            _ = try XChaCha20Poly1305.open(key: key, nonce: nonce, ciphertext: first.prefix(10), ad: Array("ad".utf8))
        }
        expectConcordError(.invalidParameter) {
            _ = try XChaCha20Poly1305.seal(key: key.prefix(16), nonce: nonce, plaintext: [UInt8]())
        }
        expectConcordError(.invalidParameter) {
            _ = try XChaCha20Poly1305.seal(key: key, nonce: nonce.prefix(12), plaintext: [UInt8]())
        }
    }
}
