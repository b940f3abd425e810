import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// What ``SyncEngine/sweepFiles()`` did.
public struct FileSweepReport: Hashable, Sendable {
    /// Remote files deleted: no batch, snapshot or local version referenced them, and they
    /// were older than the grace period when checked just before deleting.
    public var deletedFiles: [String] = []
    /// Remote files referenced by a batch, a snapshot or this replica's state or history.
    public var referencedFiles = 0
    /// Unreferenced remote files kept because they are younger than the grace period (an
    /// upload whose batch may not be listed yet).
    public var youngFiles = 0
    /// Old unreferenced remote files kept because this replica has not yet seen them
    /// unreferenced for a whole grace period (a listing may have missed a reference).
    public var awaitingFiles = 0
    /// Why the sweep stopped before deleting anything, if it did: a batch or snapshot
    /// could not be read, so what it references is unknown.
    public var skipped: String?
    /// Local temporary files of interrupted downloads and attaches deleted
    /// (``/ConcordStore/BlobStore/sweepTemporaryFiles(olderThan:now:)``).
    public var temporaryFiles = 0
    public init() {}
}

extension SyncEngine {
    /// The longest one upload attempt may take, from its first file to the batch or
    /// snapshot that references them: a fifth of ``blobGracePeriod``. An attempt that takes
    /// longer uploads its files again.
    ///
    /// Collection is safe while deadline + listing staleness + clock skew between a replica
    /// and the storage stay below the grace period (Proofs/Spin: `p2_attempt_blob`): with a
    /// fifth each, and files refreshed when older than a fifth, two fifths are margin.
    var uploadDeadline: UInt64 { blobGracePeriod / 5 }

    /// Deletes remote files that no batch, no snapshot and nothing this replica holds or
    /// retains references, once they are older than ``blobGracePeriod`` and this replica
    /// has found them unreferenced for that long (docs/ARCHITECTURE.md §4).
    ///
    /// Object age, not references alone, decides: an upload whose batch is not pushed yet
    /// references nothing, and stays young until its batch lands (uploads have a deadline,
    /// a fifth of ``blobGracePeriod``). Each file's age is checked again just before it is deleted. A
    /// batch or snapshot that cannot be read stops collection: what it references is
    /// unknown. Every replica may sweep; deleting a file twice is harmless.
    @discardableResult
    public func sweepFiles() async throws(ConcordError) -> FileSweepReport {
        let report = try await sweepFiles(standings: try await standings(try await listHeads()))
        log(report)
        return report
    }

    /// ``sweepFiles()`` with the heads already read.
    func sweepFiles(standings: [ReplicaID: Standing]) async throws(ConcordError) -> FileSweepReport {
        var report = FileSweepReport()
        let listed = Self.unique(try await remote.list(prefix: RemoteLayout.blobsPrefix))
        let old = listed.filter { isOld($0, now: clock.millisecondsSinceEpoch()) }
        guard !old.isEmpty else {
            report.youngFiles = listed.count
            return report
        }
        let referenced: Set<String>
        switch try await referencedFiles(standings: standings) {
        case let .success(names): referenced = names
        case let .failure(reason):
            report.skipped = reason.message
            return report
        }
        report.referencedFiles = listed.count { object in
            if case let .blob(name)? = RemoteLayout.parse(object.path) { referenced.contains(name) } else { false }
        }
        // A file must look unreferenced to this replica for a whole grace period, not only
        // be old: a listing that missed its reference once will not miss it for that long.
        let sightings = try store.unreferencedSince()
        let now = clock.millisecondsSinceEpoch()
        for (name, _) in sightings where referenced.contains(name) { try store.setUnreferencedSince(name, nil) }
        for object in listed {
            guard case let .blob(name)? = RemoteLayout.parse(object.path), !referenced.contains(name) else { continue }
            guard isOld(object, now: now) else {
                report.youngFiles += 1
                continue
            }
            guard let first = sightings[name], first <= now, now - first >= blobGracePeriod else {
                if sightings[name] == nil { try store.setUnreferencedSince(name, now) }
                report.awaitingFiles += 1
                continue
            }
            // The listing may be old: ask again for this one object, just before deleting.
            let current = try await remote.list(prefix: object.path).first { $0.path == object.path }
            guard let current else { continue }
            guard isOld(current, now: clock.millisecondsSinceEpoch()) else {
                report.youngFiles += 1
                continue
            }
            try await writes.delete(object.path)
            try store.setUnreferencedSince(name, nil)
            report.deletedFiles.append(object.path)
        }
        // Files that went elsewhere (another replica swept them) are forgotten in time.
        let names = Set(listed.compactMap { object -> String? in
            if case let .blob(name)? = RemoteLayout.parse(object.path) { name } else { nil }
        })
        for (name, first) in sightings where !names.contains(name) && first <= now && now - first > 4 * blobGracePeriod {
            try store.setUnreferencedSince(name, nil)
        }
        return report
    }


    /// Whether an object is older than the grace period. An object without a time is
    /// never old.
    func isOld(_ object: RemoteObject, now: UInt64) -> Bool {
        guard let modified = object.modified else { return false }
        return now >= modified && now - modified >= blobGracePeriod
    }

    /// The keyed names of every file a batch or snapshot on the remote references, with
    /// this replica's own state and retained versions; a failure says why what the remote
    /// references cannot be known.
    ///
    /// A listing may miss objects, so it is not trusted alone: every replica that has a
    /// listed object, or whose changes this replica applied, must have a listed, readable
    /// head; the batches a head names after its newest snapshot, that snapshot, and every
    /// object seen in an earlier sweep are fetched even when the listing misses them.
    /// Batches and snapshots never change under one name, so what each references is
    /// remembered locally and each is read once.
    func referencedFiles(standings: [ReplicaID: Standing]) async throws(ConcordError) -> Result<Set<String>, ConcordError> {
        var names = Set(try store.referencedFiles().map { BlobName.keyedName(for: $0, key: keys.blobNames) })
        let cached = try store.knownReferences()
        let listed = Set(Self.unique(try await remote.list(prefix: RemoteLayout.replicasPrefix) + (try await remote.list(prefix: RemoteLayout.snapshotsPrefix)))
            .map(\.path).filter { path in
                switch RemoteLayout.parse(path) {
                case .batch?, .snapshot?: true
                default: false
                }
            })
        var origins = Set(try store.appliedSeqs().keys)
        for path in listed {
            switch RemoteLayout.parse(path) {
            case let .batch(replica, _)?, let .snapshot(replica, _)?: origins.insert(replica)
            default: break
            }
        }
        for origin in origins.sorted() where origin != store.replicaID && standings[origin] == nil {
            return .failure(ConcordError(.remote, "the head of replica \(origin) is not listed (a listing missed it, or it was deleted); no file was swept"))
        }
        // What must be there whatever the listing says.
        var wanted = listed.union(cached.keys)
        for (replica, standing) in standings {
            let seq = standing.seq
            let snapshot: UInt64
            if replica == store.replicaID {
                snapshot = try snapshotSeq()
            } else if let head = standing.head {
                snapshot = head.snapshot ?? 0
            } else {
                return .failure(ConcordError(.remote, "the head of replica \(replica) cannot be read; no file was swept — `concord doctor` reports it"))
            }
            if snapshot > 0 { wanted.insert(RemoteLayout.snapshot(replica, seq: snapshot)) }
            if seq > snapshot { for batch in (snapshot + 1)...seq { wanted.insert(RemoteLayout.batch(replica, seq: batch)) } }
        }
        var present: Set<String> = []
        for path in wanted.sorted() {
            if let known = cached[path] {
                // Seen before: still there if listed, or if it can be fetched.
                if !listed.contains(path), try await objects.fetch(path) == nil { continue }
                names.formUnion(known)
                present.insert(path)
                continue
            }
            guard let sealed = try await objects.fetch(path) else { continue }  // not there (deleted, or never written)
            let hashes: Set<ContentHash>
            do throws(ConcordError) {
                if case .batch? = RemoteLayout.parse(path) {
                    hashes = Self.files(in: try objects.openBatch(sealed, at: path))
                } else {
                    hashes = Set(try objects.snapshotFiles(sealed, at: path).files.map(\.file.hash))
                }
            } catch {
                return .failure(ConcordError(error.code, "\(path) could not be read (\(error.message)); no file was swept — `concord doctor` reports it"))
            }
            let keyed = hashes.map { BlobName.keyedName(for: $0, key: keys.blobNames) }.sorted()
            names.formUnion(keyed)
            present.insert(path)
            try store.setKnownReferences(Set(keyed), of: path)
        }
        // Forget what objects that are gone referenced.
        for path in cached.keys where !present.contains(path) { try store.setKnownReferences(nil, of: path) }
        return .success(names)
    }


    /// The files a delta references.
    static func files(in delta: Delta) -> Set<ContentHash> {
        Set(delta.fileReferences.map(\.file.hash))
    }

    /// A listing without repeated paths (a listing may repeat entries).
    static func unique(_ objects: [RemoteObject]) -> [RemoteObject] {
        var seen: Set<String> = []
        return objects.filter { seen.insert($0.path).inserted }
    }

    /// Uploads the files `hashes` this replica holds unless the remote shows a copy recent
    /// enough to outlive the attempt: younger than ``uploadDeadline``. Returns when the
    /// attempt started; the caller must put the object that references them within
    /// ``uploadDeadline`` of it, or call this again.
    func refreshFiles(_ hashes: Set<ContentHash>) async throws(ConcordError) -> UInt64 {
        let started = clock.millisecondsSinceEpoch()
        guard !hashes.isEmpty else { return started }
        var modified: [String: UInt64] = [:]
        for object in try await remote.list(prefix: RemoteLayout.blobsPrefix) {
            if let time = object.modified { modified[object.path] = max(modified[object.path] ?? 0, time) }
        }
        for hash in hashes.sorted() where store.blobs.contains(hash) {
            let path = BlobName.remotePath(for: hash, key: keys.blobNames)
            if let time = modified[path], time <= started, started - time < uploadDeadline { continue }
            var unused = SyncReport()
            _ = try await reuploadUnlessBlocked(hash, path: path, into: &unused)
        }
        return started
    }

    /// Uploads a file that may already be on the remote. Until one such upload succeeds the
    /// file is remembered, and every push tries again first: a failed upload may have left a
    /// torn object in place of a good one.
    func reupload(_ hash: ContentHash, path: String) async throws(ConcordError) {
        try store.setReuploadPending(hash, true)
        _ = try await BlobTransfer.upload(hash, from: store.blobs, to: remote, path: path, key: keys.blobContents)
        try store.setReuploadPending(hash, false)
    }


    /// ``reupload(_:path:)``, except that an object at `path` that cannot be replaced — a
    /// folder planted at its name (``ConcordRemote/ConcordError/Code/unreadableObject``) — is
    /// reported in `report` and the upload left for the next push to try again: one such name
    /// never stops a sync. Returns whether the file went up.
    func reuploadUnlessBlocked(_ hash: ContentHash, path: String, into report: inout SyncReport) async throws(ConcordError) -> Bool {
        do {
            try await reupload(hash, path: path)
            return true
        } catch where error.code == .unreadableObject {
            report.rejected.append("\(path): \(error.message)")
            return false
        }
    }

    /// Finishes the uploads ``reupload(_:path:)`` could not (one blocked by a planted folder
    /// stays for the next push).
    func finishReuploads(into report: inout SyncReport) async throws(ConcordError) {
        for hash in try store.pendingReuploads() {
            guard store.blobs.contains(hash) else {
                try store.setReuploadPending(hash, false)
                continue
            }
            _ = try await reuploadUnlessBlocked(hash, path: BlobName.remotePath(for: hash, key: keys.blobNames), into: &report)
        }
    }
}
