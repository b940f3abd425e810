import Concord
import ConcordRemote
import ConcordSync
import Foundation

/// Reading and writing individual remote objects for `doctor` and `replicas forget`, with
/// the same keys and formats as the sync engine (DESIGN.md §4–§5).
struct RemoteObjects {
    let remote: any Remote
    let batches: SubKey
    let manifests: SubKey
    let snapshots: SubKey
    let blobContents: SubKey
    let blobNames: SubKey

    init(remote: any Remote, key: StoreKey) {
        self.remote = remote
        batches = key.subkey(for: .batches)
        manifests = key.subkey(for: .manifests)
        snapshots = key.subkey(for: .snapshots)
        blobContents = key.subkey(for: .blobContents)
        blobNames = key.subkey(for: .blobNames)
    }

    /// A head, opened and decoded; nil if the object is gone.
    func head(_ replica: ReplicaID, seq: UInt64) async throws(ConcordError) -> Head? {
        let path = RemoteLayout.head(replica, seq: seq)
        guard let sealed = try await remote.get(path) else { return nil }
        let plaintext = try SealedObject.open(sealed, path: path, key: manifests)
        let head: Head
        do {
            head = try JSONDecoder().decode(Head.self, from: Data(plaintext))
        } catch {
            throw ConcordError(.malformed, "remote manifest \(path) opens but does not parse as a head; it was written by another release or damaged")
        }
        guard head.replica == replica.description, head.seq == seq else {
            throw ConcordError(.malformed, "remote manifest \(path) holds the head of \(head.replica) at \(head.seq): it was moved or swapped")
        }
        return head
    }

    /// A delta batch, opened and decoded; nil if the object is gone.
    func delta(_ replica: ReplicaID, seq: UInt64) async throws(ConcordError) -> Delta? {
        let path = RemoteLayout.delta(replica, seq: seq)
        guard let sealed = try await remote.get(path) else { return nil }
        let delta = try DeltaCodec.decode(try SealedObject.open(sealed, path: path, key: batches))
        guard delta.origin == replica, delta.seq == seq else {
            throw ConcordError(.malformed, "remote object \(path) holds delta \(delta.seq) of \(delta.origin): it was moved or swapped")
        }
        return delta
    }

    /// A snapshot, opened and decoded; false if the object is gone.
    func checkSnapshot(_ replica: ReplicaID, seq: UInt64) async throws(ConcordError) -> Bool {
        let path = RemoteLayout.snapshot(replica, seq: seq)
        guard let sealed = try await remote.get(path) else { return false }
        _ = try SnapshotCodec.decode(try SealedObject.open(sealed, path: path, key: snapshots))
        return true
    }

    /// Decrypts a blob as a stream and checks that its content hashes to the hash its name
    /// is keyed from. Returns the content hash; nil if the object is gone.
    func checkBlob(keyedName: String) async throws(ConcordError) -> ContentHash? {
        let path = RemoteLayout.blob(keyedName: keyedName)
        let verifier = BlobVerifier(key: blobContents, name: path)
        let found = try await remote.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in try verifier.feed(chunk) }
        guard found else { return nil }
        let hash = try verifier.finish()
        guard BlobName.keyedName(for: hash, key: blobNames) == keyedName else {
            throw ConcordError(.authenticationFailed, "remote blob \(path) decrypts, but its content (\(hash.hex)) is not the file its name stands for: it was moved or swapped")
        }
        return hash
    }

    /// Uploads the local file `hash` to its blob path, encrypted in 64 KiB chunks.
    func uploadBlob(_ hash: ContentHash, from blobs: BlobStore) async throws(ConcordError) {
        let path = BlobName.remotePath(for: hash, key: blobNames)
        _ = try await BlobTransfer.upload(hash, from: blobs, to: remote, path: path, key: blobContents)
    }

    /// Re-seals one of this replica's delta batches exactly as push does (same bytes).
    func repushDelta(_ plaintext: [UInt8], replica: ReplicaID, seq: UInt64) async throws(ConcordError) {
        let path = RemoteLayout.delta(replica, seq: seq)
        try await remote.put(path, SealedObject.sealDeterministically(plaintext, path: path, key: batches))
    }

    /// Writes this replica's head naming `seq`, as push does.
    func putHead(of store: Store, seq: UInt64, now: UInt64) async throws {
        var applied: [String: UInt64] = [:]
        for (replica, appliedSeq) in try store.appliedSeqs() { applied[replica.description] = appliedSeq }
        var vector: [String: UInt64] = [:]
        for (replica, hlc) in try store.versionVector().entries { vector[replica.description] = hlc }
        var fields: [(String, JSON)] = [
            ("replica", .string(store.replicaID.description)), ("seq", .uint(seq)), ("syncedAt", .uint(now)),
            ("applied", .object(applied.map { ($0.key, .uint($0.value)) })),
            ("vector", .object(vector.map { ($0.key, .uint($0.value)) })),
        ]
        if let device = try store.name() { fields.append(("device", .string(device))) }
        // `Head` has no public initializer; its Codable form is its public contract.
        let json = Data(JSON.object(fields).text.utf8)
        let head = try JSONDecoder().decode(Head.self, from: json)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        let path = RemoteLayout.head(store.replicaID, seq: seq)
        try await remote.put(path, SealedObject.seal(Array(try encoder.encode(head)), path: path, key: manifests))
    }
}

/// Decrypts a blob stream chunk by chunk as it arrives and hashes the plaintext.
final class BlobVerifier {
    private let key: SubKey
    private let name: String
    private var buffer: [UInt8] = []
    private var decryptor: BlobDecryptor?
    private var hasher: ContentHasher? = ContentHasher()
    private var finished = false

    init(key: SubKey, name: String) {
        self.key = key
        self.name = name
    }

    func feed(_ chunk: [UInt8]) throws(ConcordError) {
        buffer += chunk
        try drain(final: false)
    }

    private func drain(final: Bool) throws(ConcordError) {
        if decryptor == nil {
            guard buffer.count >= BlobStream.headerByteCount || final else { return }
            decryptor = try BlobDecryptor(header: buffer.prefix(BlobStream.headerByteCount), key: key, name: name)
            buffer.removeFirst(min(buffer.count, BlobStream.headerByteCount))
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
        try drain(final: true)
        guard decryptor != nil else {
            throw ConcordError(.authenticationFailed, "remote blob \(name) failed authentication: it is empty; it was truncated")
        }
        try decryptor?.finish()
        return hasher.take()!.finalize()
    }
}
