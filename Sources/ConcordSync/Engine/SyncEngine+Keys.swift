import ConcordCore
import ConcordCrypto

extension SyncEngine {
    /// The sub-keys objects are sealed under — the current key generation's for batches,
    /// heads, snapshots and file contents; generation 0's for files' remote names
    /// (docs/ARCHITECTURE.md §5) — and the keyring that opens objects of every generation
    /// this replica holds.
    struct Keys: Sendable {
        let batches: SubKey
        let heads: SubKey
        let snapshots: SubKey
        let blobContents: SubKey
        /// Generation 0's, whatever the current generation: a file keeps one remote name
        /// across rotations (content addressing, uploads deduplicated).
        let blobNames: SubKey
        /// Generation 0's batch key: fingerprints of batches are keyed with it whatever
        /// generation sealed them, so a batch re-sealed under a newer key keeps its fingerprint.
        let fingerprints: SubKey
        let base: StoreKey
        let keyring: Keyring?
        /// Generation 0's key for a shared store's membership logs: a member granted the store
        /// key reads them before it holds any later generation.
        let members: SubKey
        /// Generation 0's key for the fresh ids of merged forks' renamed sides
        /// (`ForkName`): every replica names one alike whatever generation it holds.
        let forkNames: SubKey
        /// Seals peer announcements (the current generation's), and names them (generation 0's).
        let announcements: SubKey
        let announcementNames: SubKey

        init(_ key: StoreKey, keyring: Keyring? = nil) {
            let current = keyring?.current ?? key
            base = key
            self.keyring = keyring
            batches = current.subkey(for: .batches)
            heads = current.subkey(for: .heads)
            snapshots = current.subkey(for: .snapshots)
            blobContents = current.subkey(for: .blobContents)
            blobNames = key.subkey(for: .blobNames)
            fingerprints = key.subkey(for: .batches)
            members = key.subkey(for: .members)
            forkNames = key.subkey(for: .forkNames)
            announcements = current.subkey(for: .peerAnnouncements)
            announcementNames = key.subkey(for: .peerAnnouncementNames)
        }

        /// The `purpose` key that opens `sealed`, found at `path`: of the generation its header
        /// names. Throws `authenticationFailed` for a header
        /// that is not an object's, or names a generation this replica does not hold (its key
        /// object not listed yet, or never written): damage, "not there yet".
        func opening(_ purpose: KeyPurpose, _ sealed: some Collection<UInt8>, at path: String) throws(ConcordError) -> SubKey {
            try key(purpose, of: try EncryptedObject.generation(of: sealed, path: path), at: path)
        }

        /// The most bytes the stream of a file of `size` bytes may take: its sealed size
        /// under generation 0 in a store whose key was never rotated; under a generation
        /// naming the most ids there may be (``KeyGeneration/maxCount``) once it was.
        func maxSealedFileSize(_ size: UInt64) -> UInt64 {
            (keyring?.objects.isEmpty ?? true) ? BlobStream.sealedByteCount(plaintextByteCount: size) : BlobStream.maxSealedByteCount(plaintextByteCount: size)
        }

        /// The `purpose` key of `generation`, named by the header of the object at `path`.
        /// Throws `authenticationFailed` for a generation this replica does not hold.
        func key(_ purpose: KeyPurpose, of generation: KeyGeneration, at path: String) throws(ConcordError) -> SubKey {
            let current = switch purpose {
            case .batches: batches
            case .heads: heads
            case .snapshots: snapshots
            case .peerAnnouncements: announcements
            default: blobContents
            }
            if purpose == current.purpose, generation == current.generation { return current }
            if generation.isZero { return base.subkey(for: purpose) }
            guard let key = keyring?.key(for: generation) else {
                throw ConcordError(.authenticationFailed, "remote object \(path) is sealed under key generation \(generation), whose key this replica does not hold (its key object is not listed yet, or was never written); run `concord doctor`")
            }
            return key.subkey(for: purpose)
        }
    }
}
