import ConcordCore
import ConcordCrypto
import ConcordRemote

extension SyncEngine {
    /// The heads a listing shows, with what a name claims counted only once its object
    /// authenticates.
    ///
    /// A head's name says its replica's newest seq, so an idle pull needs only the listing.
    /// But anyone who can write the remote can plant a name (`heads/<id>-ffffffffffffffff`)
    /// without the store key. A name that claims nothing this replica does not already
    /// know (a seq it has applied, or pushed itself) costs nothing to believe; a name that
    /// claims more is opened first, and counts only if it authenticates under its own path
    /// and holds that replica's head at that seq. Otherwise the next lower name of the same
    /// replica is tried, and the bad one is reported in ``rejected``.
    struct Heads {
        /// Per replica, the newest head seq that is authenticated or claims nothing new.
        var latest: [ReplicaID: UInt64] = [:]
        /// Every listed head name, as listed (to delete this replica's older heads).
        var all: [(replica: ReplicaID, seq: UInt64)] = []
        /// The heads opened while listing, by replica (the one at ``latest``).
        var read: [ReplicaID: Head] = [:]
        /// Head objects that failed to open, each with why: reported, never believed.
        var rejected: [String] = []
        /// Per replica, the greatest seq a head name claimed whose object did not open (torn
        /// by an interrupted rewrite, or planted). Believed for nothing but as a bound for
        /// pull to look for batches — each of which authenticates on its own — so that a
        /// torn head whose writer never comes back does not hide its batches for ever.
        var unconfirmed: [ReplicaID: UInt64] = [:]

        /// How far pull looks for `replica`'s batches: its authenticated head, or further up
        /// to an unconfirmed claim.
        func reach(_ replica: ReplicaID) -> UInt64 {
            max(latest[replica] ?? 0, unconfirmed[replica] ?? 0)
        }
    }

    /// Lists `heads/` and authenticates every name that claims more than this replica
    /// knows (one `get` per replica with news; none when idle).
    func listHeads() async throws(ConcordError) -> Heads {
        var heads = Heads()
        heads.all = try await listHeadNames()
        var claims: [ReplicaID: [UInt64]] = [:]
        for (replica, seq) in heads.all { claims[replica, default: []].append(seq) }
        var known = try store.appliedSeqs()
        known[store.replicaID] = max(known[store.replicaID] ?? 0, try pushedSeq())
        for (replica, seqs) in claims.sorted(by: { $0.key < $1.key }) {
            for seq in Set(seqs).sorted(by: >) {
                if seq <= known[replica] ?? 0 {
                    heads.latest[replica] = seq
                    break
                }
                do throws(ConcordError) {
                    guard let head = try await readHead(replica, seq: seq) else { continue }  // gone since the listing
                    heads.latest[replica] = seq
                    heads.read[replica] = head
                    break
                } catch where Self.isDamage(error) {
                    heads.rejected.append("\(RemoteLayout.head(replica, seq: seq)): \(error.message)")
                    heads.unconfirmed[replica] = max(heads.unconfirmed[replica] ?? 0, seq)
                }
            }
        }
        // Every replica whose head authenticates is remembered (``SyncKey/seenPrefix``): a
        // later listing that misses it cannot make it unknown to the metadata purge. A
        // replica seen for the first time costs one `get`, once.
        for (replica, seq) in heads.latest.sorted(by: { $0.key < $1.key }) where replica != store.replicaID {
            let key = SyncKey.seenPrefix + replica.description
            var head = heads.read[replica]
            if head == nil, try store.syncValue(key) == nil {
                head = try? await readHead(replica, seq: seq)
                if let head { heads.read[replica] = head }
            }
            if let head, UInt64(try store.syncValue(key) ?? "") ?? 0 < head.syncedAt { try store.setSyncValue(key, String(head.syncedAt)) }
        }
        return heads
    }

    /// The head names `heads/` lists, unverified: for deleting this replica's own.
    func listHeadNames() async throws(ConcordError) -> [(replica: ReplicaID, seq: UInt64)] {
        var names: [(replica: ReplicaID, seq: UInt64)] = []
        for object in try await remote.list(prefix: RemoteLayout.headsPrefix) {
            guard case let .head(replica, seq)? = RemoteLayout.parse(object.path) else { continue }
            names.append((replica, seq))
        }
        return names
    }

    /// Errors that say one object is unusable — torn, tampered, moved, of a newer format,
    /// too large, or not a readable file — as opposed to the remote failing. Such an object
    /// is reported and skipped; everything else still syncs.
    static func isDamage(_ error: ConcordError) -> Bool {
        [.authenticationFailed, .unsupportedVersion, .malformed, .truncated, .limitExceeded, .unreadableObject].contains(error.code)
    }
}
