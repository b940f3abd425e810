import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// How far a prefetch has got: the contents (and their bytes) whose turn has ended —
/// fetched, or found missing on the remote — of those it set out to fetch.
public struct FilePrefetchProgress: Hashable, Sendable {
    public let filesDone: Int
    public let filesTotal: Int
    public let bytesDone: UInt64
    public let bytesTotal: UInt64
}

/// What a prefetch did (``SyncEngine/prefetchFiles(below:progress:)``).
public struct FilePrefetchReport: Hashable, Sendable {
    /// The contents not local the policy wanted, when the run began.
    public var filesWanted = 0
    public var bytesWanted: UInt64 = 0
    /// The contents fetched (checked against their hashes, and kept).
    public var filesFetched = 0
    public var bytesFetched: UInt64 = 0
    /// Contents the remote does not hold (marked unavailable; tried again by the next run).
    public var unavailable: [ContentHash] = []
    /// Contents the remote holds torn or tampered: the reasons.
    public var rejected: [String] = []
    /// Set when the next content would have taken the cache past its budget: the run
    /// stopped there, leaving ``filesLeft`` contents (``bytesLeft`` bytes) not fetched.
    /// Pinned contents are fetched whatever the budget.
    public var stoppedAtBudget = false
    public var filesLeft = 0
    public var bytesLeft: UInt64 = 0
    /// Set when the task running it was cancelled: the downloads in flight finished and
    /// are kept; no other began. The next run fetches only what is still not local.
    public var cancelled = false

    public init() {}
}

/// Prefetch (README, "Large files and small devices"): fetching ahead of reading, where
/// fields are on demand, what is likely wanted.
extension SyncEngine {
    /// Fetches the pinned contents not local, then — smallest first — those of on-demand
    /// fields smaller than `below` (default: the stored `FilePrefetch`
    /// threshold), at most ``requestsInFlight`` at a time. Each content is checked against
    /// its hash and kept as it arrives, so a run that is cancelled, or a process killed,
    /// loses at most the downloads in flight: the next run asks only for what is still not
    /// local. A download a reader started meanwhile is shared, not repeated.
    ///
    /// Prefetched contents count against the budget and evict nothing: a content that would
    /// take the cache (every local content, pinned and unpushed ones included) past the
    /// budget stops the run (``FilePrefetchReport/stoppedAtBudget``). Pinned contents are
    /// fetched whatever the budget, as every sync does. `progress` hears each content done.
    ///
    /// - Throws: a remote's error (unreachable, refused); what arrived before it is kept.
    @discardableResult
    public func prefetchFiles(
        below: UInt64? = nil, progress: (@Sendable (FilePrefetchProgress) -> Void)? = nil
    ) async throws(ConcordError) -> FilePrefetchReport {
        let candidates = try store.prefetchCandidates(below: below).filter { !rejectedFiles.contains($0.hash) }
        var report = FilePrefetchReport()
        report.filesWanted = candidates.count
        report.bytesWanted = candidates.reduce(0) { $0 + $1.size }
        guard !candidates.isEmpty else { return report }
        let budget = try store.filePolicy().budget
        // Every local content counts, and so does each download in flight.
        var cached = try store.bytesCached()
        var (filesDone, bytesDone) = (0, UInt64(0))
        progress?(FilePrefetchProgress(filesDone: 0, filesTotal: report.filesWanted, bytesDone: 0, bytesTotal: report.bytesWanted))
        var next = 0
        var running = 0
        var failure: ConcordError?
        await withTaskGroup(of: (PrefetchCandidate, Result<FileFetch, ConcordError>).self) { group in
            while true {
                while running < requestsInFlight, next < candidates.count, failure == nil, !report.stoppedAtBudget {
                    if Task.isCancelled {
                        report.cancelled = true
                        break
                    }
                    let file = candidates[next]
                    if !file.pinned, let budget, cached + file.size > budget {
                        report.stoppedAtBudget = true
                        break
                    }
                    next += 1
                    running += 1
                    cached += file.size
                    group.addTask { (file, await self.sharedDownload(file.hash, size: file.size)) }
                }
                guard let (file, outcome) = await group.next() else { break }
                running -= 1
                do throws(ConcordError) {
                    switch outcome {
                    case .success(.fetched):
                        report.filesFetched += 1
                        report.bytesFetched += file.size
                    case .success(.absent):
                        cached -= file.size
                        report.unavailable.append(file.hash)
                        try store.markUnavailable(file.hash, reason: "the remote has no \(BlobName.remotePath(for: file.hash, key: keys.blobNames))")
                    case let .success(.rejected(reason)):
                        cached -= file.size
                        report.rejected.append(reason)
                        rejectedFiles.insert(file.hash)
                        try store.markUnavailable(file.hash, reason: reason)
                    case let .failure(error):
                        cached -= file.size
                        failure = failure ?? error
                    }
                } catch {
                    failure = failure ?? error
                }
                filesDone += 1
                bytesDone += file.size
                progress?(FilePrefetchProgress(filesDone: filesDone, filesTotal: report.filesWanted, bytesDone: bytesDone, bytesTotal: report.bytesWanted))
            }
        }
        if let failure { throw failure }
        report.filesLeft = candidates.count - next
        report.bytesLeft = candidates[next...].reduce(0) { $0 + $1.size }
        return report
    }
}
