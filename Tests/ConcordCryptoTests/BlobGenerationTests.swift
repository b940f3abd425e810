import ConcordCore
import ConcordCrypto
import ConcordTesting
import Testing

/// Blob streams under a key generation other than 0 (format 2): the header names the
/// generation, every chunk is bound to it, a generation-0 stream is what it always was, and
/// a tampered generation header is a typed error.
@Suite struct BlobGenerationTests {
    let name = "blobs/cd/cd0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
    let base = StoreKey.random()

    func seal(_ plaintext: [UInt8], key: SubKey) throws -> [UInt8] {
        var offset = 0
        var stream: [UInt8] = []
        try BlobStream.encrypt(key: key, name: name, read: { buffer, max in
            let count = min(max, plaintext.count - offset)
            buffer.replaceSubrange(0..<count, with: plaintext[offset..<(offset + count)])
            offset += count
            return count
        }, write: { stream += $0 })
        return stream
    }

    func open(_ stream: [UInt8], key: SubKey) throws -> [UInt8] {
        var offset = 0
        var output: [UInt8] = []
        try BlobStream.decrypt(key: key, name: name, read: { buffer, max in
            let count = min(max, stream.count - offset)
            buffer.replaceSubrange(0..<count, with: stream[offset..<(offset + count)])
            offset += count
            return count
        }, write: { output += $0 })
        return output
    }

    @Test(arguments: [1, 2, 16])
    func aStreamNamesItsGenerationAndOpensOnlyUnderItsKey(count: Int) throws {
        let generation = KeyGeneration((0..<count).map { _ in KeyGenerationID.random() })!
        let key = StoreKey.random().of(generation).subkey(for: .blobContents)
        let plaintext = seededBytes(2 * BlobStream.chunkByteCount + 5, seed: UInt64(count))
        let stream = try seal(plaintext, key: key)
        let header = BlobStream.headerByteCount(for: generation)
        #expect(header == 5 + 16 * count + 24)
        #expect(BlobStream.headerByteCount(startingWith: stream.prefix(BlobStream.leadByteCount)) == header)
        #expect(Array(stream.prefix(5)) == [0x43, 0x4E, 0x42, 2, UInt8(count)])
        #expect(try BlobStream.generation(ofHeader: stream.prefix(header), name: name) == generation)
        #expect(UInt64(stream.count) == BlobStream.sealedByteCount(plaintextByteCount: UInt64(plaintext.count), generation: generation))
        #expect(BlobStream.isSealedSize(UInt64(stream.count), ofPlaintext: UInt64(plaintext.count)))
        #expect(!BlobStream.isSealedSize(UInt64(stream.count - 1), ofPlaintext: UInt64(plaintext.count)))
        #expect(UInt64(stream.count) <= BlobStream.maxSealedByteCount(plaintextByteCount: UInt64(plaintext.count)))
        #expect(try open(stream, key: key) == plaintext)
        // The same secret of another generation, and generation 0's key: neither opens it.
        for other in [base.subkey(for: .blobContents), StoreKey.random().of(generation).subkey(for: .blobContents)] {
            let error = #expect(throws: ConcordError.self) { try open(stream, key: other) }
            #expect(error?.code == .authenticationFailed && error?.message.contains(name) == true)
        }
    }

    @Test func generationZeroStaysFormatOne() throws {
        let key = base.subkey(for: .blobContents)
        let stream = try seal(Array("same as ever".utf8), key: key)
        #expect(Array(stream.prefix(4)) == BlobStream.prefix)
        #expect(UInt64(stream.count) == BlobStream.sealedByteCount(plaintextByteCount: 12))
        #expect(BlobStream.headerByteCount(startingWith: stream) == BlobStream.headerByteCount)
        #expect(try BlobStream.generation(ofHeader: stream.prefix(BlobStream.headerByteCount), name: name).isZero)
        #expect(try open(stream, key: key) == Array("same as ever".utf8))
        // A format-1 stream relabelled as format 2 does not open under any key.
        var relabelled = stream
        relabelled[3] = 2
        #expect(throws: ConcordError.self) { try open(relabelled, key: key) }
    }

    /// Every byte of the generation header changed — version, count, each id byte — gives a
    /// typed error, also for a reader that holds a key for any generation it is shown.
    @Test func aTamperedGenerationHeaderIsATypedError() throws {
        let generation = KeyGeneration([KeyGenerationID.random(), KeyGenerationID.random()])!
        let store = StoreKey.random()
        let key = store.of(generation).subkey(for: .blobContents)
        let plaintext = seededBytes(70_000, seed: 7)
        let stream = try seal(plaintext, key: key)
        for offset in 3..<(5 + 32) {
            var tampered = stream
            tampered[offset] ^= 0x10
            // A reader that holds a key for whatever generation the header names.
            let error = #expect(throws: ConcordError.self) {
                let length = BlobStream.headerByteCount(startingWith: tampered)
                var opening = try BlobDecryptor(header: tampered.prefix(length), name: name) { (named: KeyGeneration) throws(ConcordError) -> SubKey in
                    store.of(named).subkey(for: .blobContents)
                }
                _ = try opening.open(frame: tampered[length..<(length + BlobStream.frameByteCount)])
            }
            #expect(error?.code == .authenticationFailed || error?.code == .unsupportedVersion, "byte \(offset): \(String(describing: error))")
            let plain = #expect(throws: ConcordError.self) { try open(tampered, key: key) }
            #expect(plain?.code == .authenticationFailed || plain?.code == .unsupportedVersion, "byte \(offset)")
        }
    }
}
