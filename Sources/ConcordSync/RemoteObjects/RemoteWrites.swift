import ConcordCore
import ConcordCrypto
import ConcordRemote

/// How a replica writes to the remote: every batch, head and snapshot signed by this
/// device's identity once the store is shared (``SignatureGate``) and sealed under the key
/// of its kind for its name, and every delete of an object of its own — the one door out,
/// as ``RemoteObjects`` is the one door in (docs/ARCHITECTURE.md §5). Push, snapshots,
/// compaction, the file sweep, rollback recovery, the restored copy and doctor's repair
/// write through it; files go through ``BlobTransfer``, streamed.
///
/// Sealing is split from putting where a caller must compare bytes before it writes (one
/// name, one content: a batch or snapshot name never gets other bytes).
struct RemoteWrites: Sendable {
    let remote: any Remote
    let keys: SyncEngine.Keys
    /// In a shared store, signs each object with this device's identity.
    let gate: SignatureGate

    // MARK: Sealing

    /// The bytes of this replica's batch `seq`: `plaintext` sealed deterministically for
    /// its name, so a retry after a crash puts the very same bytes.
    func sealBatch(_ plaintext: [UInt8], of replica: ReplicaID, seq: UInt64) -> (path: String, bytes: [UInt8]) {
        let path = RemoteLayout.batch(replica, seq: seq)
        return (path, EncryptedObject.encryptDeterministically(gate.sign(plaintext, path: path), path: path, key: keys.batches))
    }

    /// The bytes of the snapshot at `path`, sealed deterministically: the same state gives
    /// the same bytes.
    func sealSnapshot(_ plaintext: [UInt8], at path: String) -> [UInt8] {
        EncryptedObject.encryptDeterministically(gate.sign(plaintext, path: path), path: path, key: keys.snapshots)
    }

    /// Whether `size` is what the sealed bytes of this replica's batch `seq`, whose plaintext
    /// is `count` bytes (``sealBatch(_:of:seq:)``), measure whole on the remote: signed or
    /// not as the store is, under any key generation.
    func isSealedBatchSize(_ size: UInt64, ofPlaintext count: Int, of replica: ReplicaID, seq: UInt64) -> Bool {
        let signed = gate.signs(RemoteLayout.batch(replica, seq: seq)) ? SignedEnvelope.headerSize : 0
        return EncryptedObject.isSealedSize(size, ofPlaintext: count + signed)
    }

    // MARK: Putting

    /// Puts sealed bytes (``sealBatch(_:of:seq:)``, ``sealSnapshot(_:at:)``) at `path`.
    func put(_ bytes: [UInt8], at path: String) async throws(ConcordError) {
        try checkMember()
        try await remote.put(path, bytes)
    }

    /// Seals and puts batch `seq` of `replica`.
    func putBatch(_ plaintext: [UInt8], of replica: ReplicaID, seq: UInt64) async throws(ConcordError) {
        try checkMember()
        let (path, bytes) = sealBatch(plaintext, of: replica, seq: seq)
        try await remote.put(path, bytes)
    }

    /// Puts a key generation's key object at `heads/keys/<id>`.
    func putKeyObject(_ object: KeyObject) async throws(ConcordError) {
        try checkMember()
        try await remote.put(Keyring.path(object.id), object.bytes)
    }

    /// Throws `removedFromStore` when the keyring says this
    /// replica lacks the current key: it was removed, and writes nothing more (what it
    /// would seal, a removed member could read).
    private func checkMember() throws(ConcordError) {
        if let keyring = keys.keyring, keyring.isRemoved {
            throw ConcordError(.removedFromStore, SyncEngine.removedMessage(keyring, identity: nil))
        }
    }

    /// Seals `head` (with a random nonce: a head is rewritten in place) and puts it at its
    /// name, `heads/<replica>-<seq>`.
    func putHead(_ head: Head, of replica: ReplicaID) async throws(ConcordError) {
        try checkMember()
        let path = RemoteLayout.head(replica, seq: head.seq)
        try await remote.put(path, EncryptedObject.encrypt(gate.sign(head.json(), path: path), path: path, key: keys.heads))
    }

    /// Puts `concord.json`, which is not encrypted (its key is wrapped inside it). Static:
    /// it is written before there is an engine (creating a store, putting back the kept copy).
    static func putManifest(_ bytes: [UInt8], to remote: any Remote) async throws(ConcordError) {
        try await remote.put(RemoteLayout.manifestPath, bytes)
    }

    // MARK: Deleting

    /// Deletes the head `heads/<replica>-<seq>`.
    func deleteHead(of replica: ReplicaID, seq: UInt64) async throws(ConcordError) {
        try checkMember()
        try await remote.delete(RemoteLayout.head(replica, seq: seq))
    }

    /// Deletes the object at `path`: a batch or snapshot compaction dropped, a file the
    /// sweep found unreferenced, a stale head doctor's repair removes.
    func delete(_ path: String) async throws(ConcordError) {
        try checkMember()
        try await remote.delete(path)
    }
}
