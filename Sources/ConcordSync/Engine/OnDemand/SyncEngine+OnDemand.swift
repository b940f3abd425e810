import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Synchronization

/// The downloads in flight for readers (``SyncEngine/localFile(_:)``): one per content,
/// however many readers wait for it.
struct OnDemandDownloads {
    /// The encrypted bytes a download has received so far.
    final class Received: Sendable {
        let bytes = Mutex<UInt64>(0)
    }
    struct Download {
        let task: Task<Result<SyncEngine.FileFetch, ConcordError>, Never>
        let received: Received
    }
    var running: [ContentHash: Download] = [:]
    /// Contents some reader of this engine is between fetching and opening: not evicted.
    var reading: [ContentHash: Int] = [:]
    /// How many downloads readers started (shared ones counted once).
    var started = 0
}

/// Files on demand (README, "Large files and small devices"): reading a content that is not
/// local fetches it from the remote, checks it against its hash, and keeps it; several
/// readers of one content share one download; a content the remote lacks is
/// ``ConcordStore/ConcordError/Code/fileUnavailable``.
extension SyncEngine {
    /// Makes content `file` local — fetching it if it is not — and returns its path in the
    /// blob directory. Concurrent calls for one content share one download. After a fetch
    /// the cache is brought back within the policy's budget (this content kept).
    ///
    /// The path is good until an eviction removes the file; a reader that must not race one
    /// uses ``readFile(_:chunk:)`` or ``exportFile(_:to:)``, which open it first.
    ///
    /// - Throws: `fileUnavailable` when the remote does not hold the content (or holds it
    ///   damaged): nothing is kept, and ``fileState(_:)`` says so until it arrives.
    public func localFile(_ file: FileRef) async throws(ConcordError) -> String {
        onDemand.reading[file.hash, default: 0] += 1
        defer {
            onDemand.reading[file.hash]! -= 1
            if onDemand.reading[file.hash] == 0 { onDemand.reading[file.hash] = nil }
        }
        try await makeLocal(file)
        return store.blobs.path(for: file.hash)
    }

    /// Streams content `file` to `chunk` (1 MiB at a time, so memory does not grow with the
    /// file), fetching it first if it is not local. The file is opened before it is read, so
    /// an eviction meanwhile cannot cut the read short; one that removed it before it was
    /// opened makes it be fetched again.
    public nonisolated func readFile(_ file: FileRef, chunk: (UnsafeRawBufferPointer) throws(ConcordError) -> Void) async throws(ConcordError) {
        try await withLocalContent(file) { () throws(ConcordError) in try store.blobs.read(file.hash, chunk: chunk) }
    }

    /// Writes content `file` to `destination` (temporary name, fsync, rename), fetching it
    /// first if it is not local: the destination holds either what it held or the whole
    /// content, checked against its hash.
    public nonisolated func exportFile(_ file: FileRef, to destination: String) async throws(ConcordError) {
        try await withLocalContent(file) { () throws(ConcordError) in try store.blobs.export(file.hash, to: destination) }
    }

    /// Runs `use` on content `file` once it is local, fetching it first if it is not; an
    /// eviction between the fetch and `use`'s open (`missingBlob`) fetches it again, three
    /// times at most.
    private nonisolated func withLocalContent(_ file: FileRef, _ use: () throws(ConcordError) -> Void) async throws(ConcordError) {
        for attempt in 1...3 {
            _ = try await localFile(file)
            do {
                try use()
                return
            } catch where error.code == .missingBlob && attempt < 3 {
                continue  // evicted between the fetch and the open
            }
        }
    }

    /// Where content `hash` is: local, not local, downloading (bytes so far) or unavailable.
    public func fileState(_ hash: ContentHash) throws(ConcordError) -> FileState {
        if let download = onDemand.running[hash] { return .downloading(bytes: download.received.bytes.withLock { $0 }) }
        return try store.fileState(hash)
    }

    /// How many downloads readers have started through this engine (shared ones once).
    public var onDemandDownloadsStarted: Int { onDemand.started }

    private func makeLocal(_ file: FileRef) async throws(ConcordError) {
        if store.blobs.contains(file.hash) {
            try store.noteRead(file.hash)
            return
        }
        // Room first: the cache stays within its budget once this content is in.
        if onDemand.running[file.hash] == nil, let budget = try store.filePolicy().budget {
            try store.evictFiles(toFit: budget > file.size ? budget - file.size : 0, keeping: Set(onDemand.reading.keys))
        }
        let outcome = await sharedDownload(file.hash, size: file.size)
        let path = BlobName.remotePath(for: file.hash, key: keys.blobNames)
        switch outcome {
        case .success(.fetched):
            try store.noteRead(file.hash)
        case .success(.absent):
            try store.markUnavailable(file.hash, reason: "the remote has no \(path)")
            throw ConcordError(.fileUnavailable, "content \(file.hash.hex) (\(file.size) bytes) is not local and the remote has no \(path): it was never uploaded or was swept; `concord doctor` tells which replica can upload it")
        case let .success(.rejected(reason)):
            try store.markUnavailable(file.hash, reason: reason)
            throw ConcordError(.fileUnavailable, "content \(file.hash.hex) is not local and the remote's copy is damaged (\(reason)); nothing was kept — `concord doctor --repair` on a replica that holds it uploads it again")
        case let .failure(error):
            throw error
        }
    }

    /// Fetches content `hash`, or waits for the download of it already running (a reader's
    /// or a prefetch's): one download per content, however many wait for it.
    func sharedDownload(_ hash: ContentHash, size: UInt64) async -> Result<FileFetch, ConcordError> {
        if let running = onDemand.running[hash] { return await running.task.value }
        let received = OnDemandDownloads.Received()
        let task = Task { () async -> Result<FileFetch, ConcordError> in
            do throws(ConcordError) {
                return .success(try await self.fetchFile(hash, size: size, received: { bytes in received.bytes.withLock { $0 = bytes } }))
            } catch {
                return .failure(error)
            }
        }
        onDemand.running[hash] = OnDemandDownloads.Download(task: task, received: received)
        onDemand.started += 1
        let outcome = await task.value
        onDemand.running[hash] = nil
        return outcome
    }

    /// What a sync fetches besides what batches need: the contents eager fields lack (a
    /// store, collection or field switched back from on demand, or one that evicted), a
    /// window at a time; then, where fields are on demand, the prefetch
    /// (``prefetchFiles(below:progress:)``: pinned contents, and small ones below the
    /// threshold, within the budget). A content the remote lacks is marked unavailable and
    /// the rest go on. Then the cache is brought within its budget.
    func fetchWantedFiles(into report: inout SyncReport, progress: @escaping @Sendable (SyncProgress) -> Void) async throws(ConcordError) {
        if try store.eagerFillPending() {
            let wanted = try store.referencedFileSizes(onDemand: false).filter { !store.blobs.contains($0.key) }
            let files = wanted.filter { !rejectedFiles.contains($0.key) }.sorted { $0.key < $1.key }
            for window in files.chunked(by: requestsInFlight) {
                let outcomes = try await inFlight(window) { (engine, file) throws(ConcordError) in try await engine.fetchFile(file.key, size: file.value) }
                for (file, outcome) in zip(window, outcomes) {
                    switch outcome {
                    case .fetched: report.filesFetched += 1
                    case .absent: try store.markUnavailable(file.key, reason: "the remote has no \(BlobName.remotePath(for: file.key, key: keys.blobNames))")
                    case let .rejected(reason):
                        report.rejected.append(reason)
                        rejectedFiles.insert(file.key)
                        try store.markUnavailable(file.key, reason: reason)
                    }
                }
            }
            if try store.referencedFileSizes(onDemand: false).allSatisfy({ store.blobs.contains($0.key) }) {
                try store.eagerFillDone()
            }
        }
        if try store.hasOnDemandFiles() {
            let prefetch = try await prefetchFiles { step in
                progress(SyncProgress(phase: .fetchingFiles, objectsDone: step.filesDone, objectsTotal: step.filesTotal, bytesDone: step.bytesDone, bytesTotal: step.bytesTotal))
            }
            report.filesFetched += prefetch.filesFetched
            report.rejected += prefetch.rejected
            if prefetch.filesWanted > 0 { report.prefetch = prefetch }
        }
        try store.evictToBudget(keeping: Set(onDemand.reading.keys))
    }
}
