import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// How a replica reads the remote's batches, snapshots and heads: each fetched within the
/// size its name allows, opened under the key of its kind, decoded, and checked against
/// its name. The one place pull, push, compaction, file sweeping, the loss checks and
/// doctor open what they fetch (docs/ARCHITECTURE.md §5).
///
/// In a shared store every object is also checked by its signature and its signer's role
/// (``SignatureGate``), and throws `unauthentic` when it fails.
///
/// Opening throws ``ConcordCore/ConcordError/Code/authenticationFailed`` for a torn or
/// modified object (or one sealed for another name), `unsupportedVersion`, `truncated`,
/// `limitExceeded` or `malformed` when it does not parse — and `malformed` when it parses
/// but belongs to another name (moved or swapped). ``SyncEngine/isDamage(_:)`` tells these
/// apart from the remote failing.
struct RemoteObjects: Sendable {
    let remote: any Remote
    let keys: SyncEngine.Keys
    /// In a shared store, checks each object's signature and its signer's role.
    let gate: SignatureGate

    /// The bytes at `path`, refused past the size its kind may have; nil when not there.
    func fetch(_ path: String) async throws(ConcordError) -> [UInt8]? {
        try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path))
    }

    // MARK: Opening fetched bytes

    /// The batch `sealed`, found at `path`, authenticated and decoded — without checking
    /// that it is the batch the name says (what it references counts wherever it lies).
    func openBatch(_ sealed: [UInt8], at path: String) throws(ConcordError) -> Delta {
        try DeltaCodec.decode(try gate.open(try EncryptedObject.open(sealed, path: path, key: try keys.opening(.batches, sealed, at: path)), path: path))
    }

    /// Batch `seq` of `origin`, from the bytes fetched at its name.
    func openBatch(_ sealed: [UInt8], origin: ReplicaID, seq: UInt64) throws(ConcordError) -> Delta {
        try openFingerprintedBatch(sealed, origin: origin, seq: seq).delta
    }

    /// Batch `seq` of `origin`, from the bytes fetched at its name, with its fingerprint
    /// (``ConcordCrypto/EncryptedObject/fingerprint(of:path:key:)``).
    func openFingerprintedBatch(_ sealed: [UInt8], origin: ReplicaID, seq: UInt64) throws(ConcordError) -> (delta: Delta, fingerprint: BatchFingerprint) {
        let path = RemoteLayout.batch(origin, seq: seq)
        let plaintext = try EncryptedObject.open(sealed, path: path, key: try keys.opening(.batches, sealed, at: path))
        let delta = try DeltaCodec.decode(try gate.open(plaintext, path: path))
        guard delta.origin == origin, delta.seq == seq else {
            throw ConcordError(.malformed, "remote object \(path) holds delta \(delta.seq) of \(delta.origin): it was moved or swapped; run `concord doctor`")
        }
        return (delta, BatchFingerprint(digest: EncryptedObject.fingerprint(of: plaintext, path: path, key: keys.fingerprints), size: UInt64(sealed.count)))
    }

    /// What the snapshot `sealed`, found at `path`, covers (per origin, the seq of its newest
    /// batch in it) and the files its records reference, one per file entry: every record
    /// read and checked as it streams by, none kept, so that a large snapshot is never held
    /// as a state.
    func snapshotFiles(_ sealed: consuming [UInt8], at path: String) throws(ConcordError) -> (appliedSeqs: [ReplicaID: UInt64], files: [FileReference]) {
        let object = try openSnapshotReader(sealed, at: path)
        return (object.appliedSeqs, try fileReferences(in: object))
    }

    /// The file references of the records of `snapshot` (read from a copy of its reader,
    /// none kept): the sizes its files are fetched within.
    func fileReferences(in snapshot: SnapshotObjectReader) throws(ConcordError) -> [FileReference] {
        var records = snapshot.records
        var files: [FileReference] = []
        while let (_, slots) = try records.nextSlots() {
            for slot in slots { files += slot.entries.fileReferences }
        }
        return files
    }

    /// The snapshot `sealed`, found at `path`, opened in its own memory and read as far as
    /// its first record: its records are checked as they are read.
    func openSnapshotReader(_ sealed: consuming [UInt8], at path: String) throws(ConcordError) -> SnapshotObjectReader {
        let key = try keys.opening(.snapshots, sealed, at: path)
        return try SnapshotObjectReader(try gate.open(try EncryptedObject.open(consuming: sealed, path: path, key: key), path: path), path: path)
    }

    /// The head of `replica` at `seq`, from the bytes fetched at its name.
    func openHead(_ sealed: [UInt8], replica: ReplicaID, seq: UInt64) throws(ConcordError) -> Head {
        let path = RemoteLayout.head(replica, seq: seq)
        let head = try Head.decode(try gate.open(try EncryptedObject.open(sealed, path: path, key: try keys.opening(.heads, sealed, at: path)), path: path), path: path)
        guard head.replica == replica.description, head.seq == seq else {
            throw ConcordError(.malformed, "remote head \(path) holds the head of \(head.replica) at \(head.seq): it was moved or swapped")
        }
        return head
    }

    /// Whether `sealed` authenticates as the object at `path` under its kind's key (only
    /// batches and snapshots are asked about), without decoding it.
    func authenticates(_ sealed: [UInt8], at path: String) -> Bool {
        plaintext(of: sealed, at: path) != nil
    }

    /// The plaintext of `sealed` as the object at `path` (a batch, snapshot or head), under
    /// the key of the generation it names; nil when it does not authenticate.
    func plaintext(of sealed: [UInt8], at path: String) -> [UInt8]? {
        let purpose: KeyPurpose
        switch RemoteLayout.parse(path) {
        case .batch?: purpose = .batches
        case .snapshot?: purpose = .snapshots
        case .head?: purpose = .heads
        default: return nil
        }
        guard let key = try? keys.opening(purpose, sealed, at: path),
            let plaintext = try? EncryptedObject.open(sealed, path: path, key: key),
            (try? gate.open(plaintext, path: path)) != nil
        else { return nil }
        return plaintext
    }

    /// Whether `there` (read at `path`) and `sealed` are the same object: the same bytes,
    /// or the same plaintext sealed under two key generations (a batch sealed again after a
    /// rotation holds the same changes under the same name).
    func same(_ there: [UInt8], as sealed: [UInt8], at path: String) -> Bool {
        if there == sealed { return true }
        guard let a = plaintext(of: there, at: path), let b = plaintext(of: sealed, at: path) else { return false }
        return a == b
    }

    // MARK: Fetching and opening

    /// Batch `seq` of `origin`; nil when the remote has no such object. Throws when it is
    /// there but does not open as that batch, and whatever the remote throws.
    func batch(_ origin: ReplicaID, seq: UInt64) async throws(ConcordError) -> Delta? {
        guard let sealed = try await fetch(RemoteLayout.batch(origin, seq: seq)) else { return nil }
        return try openBatch(sealed, origin: origin, seq: seq)
    }

    /// Batch `seq` of `origin` if it is there and opens as that batch; nil otherwise —
    /// damage counts as not there. Throws only when the remote fails.
    func authenticBatch(_ origin: ReplicaID, seq: UInt64) async throws(ConcordError) -> Delta? {
        do throws(ConcordError) {
            return try await batch(origin, seq: seq)
        } catch where SyncEngine.isDamage(error) {
            return nil
        }
    }

    /// The head of `replica` at `seq`; nil when the remote has no such object.
    func head(_ replica: ReplicaID, seq: UInt64) async throws(ConcordError) -> Head? {
        guard let sealed = try await fetch(RemoteLayout.head(replica, seq: seq)) else { return nil }
        return try openHead(sealed, replica: replica, seq: seq)
    }

    /// The bytes at `path` if they authenticate as the object there; nil when not there,
    /// or not a readable, authentic object (torn, planted, too large). Throws only when the
    /// remote fails.
    func authenticBytes(at path: String) async throws(ConcordError) -> [UInt8]? {
        let there: [UInt8]?
        do throws(ConcordError) {
            there = try await fetch(path)
        } catch where SyncEngine.isDamage(error) {
            return nil
        }
        guard let there, authenticates(there, at: path) else { return nil }
        return there
    }
}
