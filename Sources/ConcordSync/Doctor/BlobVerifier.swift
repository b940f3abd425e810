import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

/// Decrypts a blob stream chunk by chunk as it arrives and hashes the plaintext. The first
/// failure is kept, and ``feed(_:)`` throws it so that the download stops there: a planted
/// 4 GiB file at a blob's name costs one frame, not 4 GiB read. The stream opens under the
/// key generation its header names, any this replica holds.
final class BlobVerifier {
    private let keys: SyncEngine.Keys
    private let name: String
    private var buffer: [UInt8] = []
    private var decryptor: BlobDecryptor?
    private var hasher: ContentHasher? = ContentHasher()
    private var finished = false
    private var failure: ConcordError?

    init(keys: SyncEngine.Keys, name: String) {
        self.keys = keys
        self.name = name
    }

    /// Takes the next bytes; throws the first failure (now or earlier) to stop the download.
    func feed(_ chunk: [UInt8]) throws(ConcordError) {
        if let failure { throw failure }
        buffer += chunk
        do throws(ConcordError) { try drain(final: false) } catch {
            failure = error
            throw error
        }
    }

    /// Why the stream failed to authenticate, once it has.
    var failed: ConcordError? { failure }

    private func drain(final: Bool) throws(ConcordError) {
        if decryptor == nil {
            guard buffer.count >= BlobStream.leadByteCount || final else { return }
            let length = BlobStream.headerByteCount(startingWith: buffer)
            guard buffer.count >= length || final else { return }
            let keys = keys, name = name
            decryptor = try BlobDecryptor(header: buffer.prefix(length), name: name) { (generation: KeyGeneration) throws(ConcordError) -> SubKey in
                try keys.key(.blobContents, of: generation, at: name)
            }
            buffer.removeFirst(min(buffer.count, length))
        }
        while buffer.count >= BlobStream.frameByteCount || (final && !buffer.isEmpty) {
            guard !finished else {
                throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it has data after its final chunk; it was modified")
            }
            let count = min(buffer.count, BlobStream.frameByteCount)
            let plaintext = try decryptor!.open(frame: buffer.prefix(count))
            buffer.removeFirst(count)
            hasher!.update(plaintext)
            finished = decryptor?.isFinished ?? false
        }
    }

    /// The content hash, once the whole stream authenticated.
    func finish() throws(ConcordError) -> ContentHash {
        if let failure { throw failure }
        try drain(final: true)
        guard decryptor != nil else {
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it is empty; it was truncated")
        }
        try decryptor?.finish()
        return hasher.take()!.finalize()
    }
}
