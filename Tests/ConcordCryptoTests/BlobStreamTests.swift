import CSodium
import ConcordCore
import ConcordCrypto
import ConcordTesting
import Testing

@Suite struct BlobStreamTests {
    let key = StoreKey.random().subkey(for: .blobContents)
    let name = "blobs/ab/ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789"

    /// Splits `bytes` into reads of random sizes (seeded), to exercise short reads.
    struct ShortReader {
        let bytes: [UInt8]
        var position = 0
        var random: SeededGenerator
        var largestRequest = 0

        init(_ bytes: [UInt8], seed: UInt64) {
            self.bytes = bytes
            self.random = SeededGenerator(seed: seed)
        }

        mutating func read(_ buffer: inout [UInt8], _ maxCount: Int) -> Int {
            largestRequest = max(largestRequest, maxCount)
            let count = min(maxCount, bytes.count - position, random.int(1...(2 * BlobStream.chunkByteCount)))
            guard count > 0 else { return 0 }
            buffer.replaceSubrange(0..<count, with: bytes[position..<(position + count)])
            position += count
            return count
        }
    }

    /// Encrypts `plaintext` and returns the header followed by each frame.
    func encryptToPieces(_ plaintext: [UInt8], seed: UInt64 = 1, name: String? = nil) throws -> [[UInt8]] {
        var reader = ShortReader(plaintext, seed: seed)
        var pieces: [[UInt8]] = []
        let count = try BlobStream.encrypt(key: key, name: name ?? self.name, read: { reader.read(&$0, $1) }, write: { pieces.append($0) })
        #expect(count == UInt64(plaintext.count))
        return pieces
    }

    func decrypt(_ stream: [UInt8], seed: UInt64 = 2, name: String? = nil, key: SubKey? = nil) throws -> [UInt8] {
        var reader = ShortReader(stream, seed: seed)
        var output: [UInt8] = []
        try BlobStream.decrypt(key: key ?? self.key, name: name ?? self.name, read: { reader.read(&$0, $1) }, write: { output += $0 })
        return output
    }

    static let sizes = [0, 1, 65_535, 65_536, 65_537, 3 * 65_536 + 7]

    @Test(arguments: sizes)
    func roundTrips(size: Int) throws {
        let plaintext = seededBytes(size, seed: UInt64(size) &+ 99)
        let pieces = try encryptToPieces(plaintext, seed: UInt64(size))
        let chunkCount = max(1, (size + 65_535) / 65_536)
        #expect(pieces.count == 1 + chunkCount)
        #expect(pieces[0].count == BlobStream.headerByteCount)
        #expect(Array(pieces[0].prefix(4)) == BlobStream.prefix)
        for frame in pieces.dropFirst().dropLast() { #expect(frame.count == BlobStream.frameByteCount) }
        #expect(pieces.last!.count == size - (chunkCount - 1) * 65_536 + BlobStream.frameOverheadByteCount)
        let stream = pieces.flatMap { $0 }
        #expect(UInt64(stream.count) == BlobStream.sealedByteCount(plaintextByteCount: UInt64(size)))
        #expect(try decrypt(stream, seed: UInt64(size) &+ 5) == plaintext)
    }

    /// A stream of frames of the 3×64 KiB + 7 blob (header, 3 full frames, 1 short).
    func sampleFrames() throws -> (plaintext: [UInt8], header: [UInt8], frames: [[UInt8]]) {
        let plaintext = seededBytes(3 * 65_536 + 7, seed: 0xB10B)
        let pieces = try encryptToPieces(plaintext)
        return (plaintext, pieces[0], Array(pieces.dropFirst()))
    }

    @Test func truncationIsRejected() throws {
        let (_, header, frames) = try sampleFrames()
        // Drop the final chunk: every remaining frame authenticates, but the end is missing.
        let error = expectConcordError(.authenticationFailed) { _ = try decrypt(header + frames.dropLast().flatMap { $0 }) }
        #expect(error?.message.contains(name) == true)
        #expect(error?.message.contains("final chunk") == true)
        // Cuts at other points: inside the header, at the header, inside frames.
        let stream = header + frames.flatMap { $0 }
        for cut in [0, 3, 27, 28, 29, 28 + 17, 28 + 65_553, 28 + 65_553 + 100, stream.count - 1] {
            expectConcordError(.authenticationFailed, "cut at \(cut)") { _ = try decrypt(Array(stream.prefix(cut))) }
        }
    }

    @Test func reorderedDuplicatedAndDroppedChunksAreRejected() throws {
        let (_, header, frames) = try sampleFrames()
        var swapped = frames
        swapped.swapAt(0, 1)
        expectConcordError(.authenticationFailed, "reordered") { _ = try decrypt(header + swapped.flatMap { $0 }) }
        let duplicated = [frames[0]] + frames
        expectConcordError(.authenticationFailed, "duplicated") { _ = try decrypt(header + duplicated.flatMap { $0 }) }
        let dropped = [frames[0]] + frames.dropFirst(2)
        expectConcordError(.authenticationFailed, "middle chunk dropped") { _ = try decrypt(header + dropped.flatMap { $0 }) }
        let lastTwiceAtEnd = frames + [frames.last!]
        expectConcordError(.authenticationFailed, "data after final") { _ = try decrypt(header + lastTwiceAtEnd.flatMap { $0 }) }
        expectConcordError(.authenticationFailed, "trailing byte") { _ = try decrypt(header + frames.flatMap { $0 } + [0]) }
    }

    @Test func bitFlipsAreRejected() throws {
        let (plaintext, header, frames) = try sampleFrames()
        let stream = header + frames.flatMap { $0 }
        var failures: [String] = []
        // Every bit of the header, a spread of bits across every frame, and the last bytes.
        var offsets = Array(0..<BlobStream.headerByteCount)
        offsets += stride(from: BlobStream.headerByteCount, to: stream.count, by: 4_099)
        offsets += Array((stream.count - 20)..<stream.count)
        for offset in offsets {
            for bit in [0, 3, 7] {
                var flipped = stream
                flipped[offset] ^= 1 << bit
                let error = concordError { _ = try decrypt(flipped) }
                let expected: ConcordError.Code = offset == 3 ? .unsupportedVersion : .authenticationFailed
                if error?.code != expected { failures.append("byte \(offset) bit \(bit): \(String(describing: error))") }
            }
        }
        #expect(failures.isEmpty, "\(failures.prefix(10))")
        #expect(try decrypt(stream) == plaintext)
    }

    @Test func wrongNameOrKeyIsRejected() throws {
        let (_, header, frames) = try sampleFrames()
        let stream = header + frames.flatMap { $0 }
        let error = expectConcordError(.authenticationFailed) { _ = try decrypt(stream, name: "blobs/cd/cdef") }
        #expect(error?.message.contains("blobs/cd/cdef") == true)
        expectConcordError(.authenticationFailed) {
            _ = try decrypt(stream, key: StoreKey.random().subkey(for: .blobContents))
        }
    }

    /// Memory does not grow with the blob: 8 MiB flow through while the reader is never
    /// asked for more than one frame and the writer never gets more than one frame.
    @Test func streamsInBoundedPieces() throws {
        let total = 8 << 20
        var produced = 0
        var largestRead = 0
        var plainHasher: ContentHasher? = ContentHasher()
        var stream: [[UInt8]] = []
        var largestWrite = 0
        try BlobStream.encrypt(
            key: key, name: name,
            read: { buffer, maxCount in
                largestRead = max(largestRead, maxCount)
                let count = min(maxCount, total - produced)
                for index in 0..<count { buffer[index] = UInt8(truncatingIfNeeded: (produced + index) &* 31) }
                plainHasher!.update(buffer[0..<count])
                produced += count
                return count
            },
            write: { piece in
                largestWrite = max(largestWrite, piece.count)
                stream.append(piece)
            })
        #expect(largestRead <= BlobStream.frameByteCount)
        #expect(largestWrite <= BlobStream.frameByteCount)
        #expect(stream.count == 1 + total / BlobStream.chunkByteCount)

        var frameIndex = 0, offset = 0
        var largestPlainWrite = 0
        var decryptedHasher: ContentHasher? = ContentHasher()
        let decrypted = try BlobStream.decrypt(
            key: key, name: name,
            read: { buffer, maxCount in
                largestRead = max(largestRead, maxCount)
                guard frameIndex < stream.count else { return 0 }
                let piece = stream[frameIndex]
                let count = min(maxCount, piece.count - offset)
                buffer.replaceSubrange(0..<count, with: piece[offset..<(offset + count)])
                offset += count
                if offset == piece.count { frameIndex += 1; offset = 0 }
                return count
            },
            write: { chunk in
                largestPlainWrite = max(largestPlainWrite, chunk.count)
                decryptedHasher!.update(chunk)
            })
        #expect(decrypted == UInt64(total))
        #expect(largestPlainWrite <= BlobStream.chunkByteCount)
        #expect(largestRead <= BlobStream.frameByteCount)
        let decryptedHash = decryptedHasher.take()!.finalize()
        let plainHash = plainHasher.take()!.finalize()
        #expect(decryptedHash == plainHash)
    }

    @Test func incrementalEncryptorEnforcesTheLayout() throws {
        var encryptor = BlobEncryptor(key: key, name: name)
        expectConcordError(.invalidParameter) { _ = try encryptor.seal(chunk: [UInt8](repeating: 0, count: 10), isFinal: false) }
        expectConcordError(.invalidParameter) { _ = try encryptor.seal(chunk: [UInt8](repeating: 0, count: 65_537), isFinal: true) }
        let frame = try encryptor.seal(chunk: [1, 2, 3], isFinal: true)
        let encryptorFinished = encryptor.isFinished
        #expect(encryptorFinished)
        expectConcordError(.invalidOperation) { _ = try encryptor.seal(chunk: [UInt8](), isFinal: true) }

        var decryptor = try BlobDecryptor(header: encryptor.header, key: key, name: name)
        expectConcordError(.authenticationFailed) { try decryptor.finish() }
        #expect(try decryptor.open(frame: frame) == [1, 2, 3])
        let decryptorFinished = decryptor.isFinished
        #expect(decryptorFinished)
        try decryptor.finish()
        expectConcordError(.authenticationFailed) { _ = try decryptor.open(frame: frame) }
    }

    @Test func decryptorRefusesFramesAfterAFailure() throws {
        var encryptor = BlobEncryptor(key: key, name: name)
        let full = [UInt8](repeating: 5, count: BlobStream.chunkByteCount)
        let first = try encryptor.seal(chunk: full, isFinal: false)
        let second = try encryptor.seal(chunk: [9], isFinal: true)
        var decryptor = try BlobDecryptor(header: encryptor.header, key: key, name: name)
        var damaged = first
        damaged[100] ^= 1
        expectConcordError(.authenticationFailed) { _ = try decryptor.open(frame: damaged) }
        expectConcordError(.authenticationFailed) { _ = try decryptor.open(frame: first) }
        expectConcordError(.authenticationFailed) { _ = try decryptor.open(frame: second) }
    }

    @Test func sealedSizeFormula() {
        #expect(BlobStream.sealedByteCount(plaintextByteCount: 0) == 28 + 17)
        #expect(BlobStream.sealedByteCount(plaintextByteCount: 65_536) == 28 + 65_536 + 17)
        #expect(BlobStream.sealedByteCount(plaintextByteCount: 65_537) == 28 + 65_537 + 34)
    }
}
