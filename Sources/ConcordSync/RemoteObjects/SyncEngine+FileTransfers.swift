import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore

/// Files move `requestsInFlight` at a time: a batch or a snapshot that needs twenty files
/// waits for twenty transfers divided by the window, not twenty round trips in a row. Each
/// transfer streams in constant memory (``BlobTransfer``), so memory stays bounded by the
/// window. A window of 1 moves one file at a time, in order, stopping at the first that is
/// missing — the order a seeded fault injector needs to replay a schedule.
extension SyncEngine {
    /// What fetching one file came to.
    enum FileFetch: Sendable {
        case fetched
        /// Not on the remote (not uploaded yet, or swept).
        case absent
        /// There, but torn or tampered: the reason, for the report.
        case rejected(String)
    }

    /// Downloads `hashes` into the blob directory, a window at a time, each within the size
    /// its references give it (`references`: those of the batch or snapshot that needs
    /// them). Returns the first that could not be fetched (nil when all were); torn,
    /// tampered or oversized ones are recorded in the report, and not fetched again in this
    /// sync (``rejectedFiles``): a batch tried again after others applied costs nothing more.
    func fetchFiles(_ hashes: [ContentHash], of references: [FileReference], into report: inout SyncReport) async throws(ConcordError) -> ContentHash? {
        if let rejected = hashes.first(where: rejectedFiles.contains) { return rejected }
        var sizes: [ContentHash: UInt64] = [:]
        for reference in references { sizes[reference.file.hash] = max(sizes[reference.file.hash] ?? 0, reference.file.size) }
        let wanted = hashes.map { ($0, sizes[$0] ?? 0) }
        for window in wanted.chunked(by: requestsInFlight) {
            let outcomes = try await inFlight(window) { (engine, file) throws(ConcordError) in try await engine.fetchFile(file.0, size: file.1) }
            var missing: ContentHash?
            for ((hash, _), outcome) in zip(window, outcomes) {
                switch outcome {
                case .fetched: report.filesFetched += 1
                case .absent: missing = missing ?? hash
                case let .rejected(reason):
                    report.rejected.append(reason)
                    rejectedFiles.insert(hash)
                    missing = missing ?? hash
                }
            }
            if let missing { return missing }
        }
        return nil
    }

    /// Downloads one file of `size` bytes into the blob directory, recording its arrival
    /// (``ConcordStore/Store/installFile(_:onRemote:_:)``); `received` hears its bytes so far.
    func fetchFile(_ hash: ContentHash, size: UInt64, received: (@Sendable (UInt64) -> Void)? = nil) async throws(ConcordError) -> FileFetch {
        let path = BlobName.remotePath(for: hash, key: keys.blobNames)
        let store = store
        do {
            return try await BlobTransfer.download(
                hash, size: size, into: store.blobs, from: remote, path: path, keys: keys,
                install: { (add: () throws(ConcordError) -> Void) throws(ConcordError) in try store.installFile(hash, onRemote: true, add) },
                received: received) ? .fetched : .absent
        } catch where error.code == .authenticationFailed || error.code == .hashMismatch || error.code == .unsupportedVersion
            || error.code == .limitExceeded || error.code == .unreadableObject {
            return .rejected("\(path): \(error.message)")
        }
    }

    /// Uploads one local file to its remote name, sealed under the current key generation.
    func uploadFile(_ hash: ContentHash) async throws(ConcordError) {
        let path = BlobName.remotePath(for: hash, key: keys.blobNames)
        _ = try await BlobTransfer.upload(hash, from: store.blobs, to: remote, path: path, key: keys.blobContents)
    }

    /// Runs `work` on each of `items` at once (callers pass at most a window of them) and
    /// returns the results in the items' order; throws the first failure once every one
    /// has ended. One item runs inline.
    func inFlight<Item: Sendable, Output: Sendable>(
        _ items: [Item], _ work: @escaping @Sendable (isolated SyncEngine, Item) async throws(ConcordError) -> Output
    ) async throws(ConcordError) -> [Output] {
        if items.count == 1 { return [try await work(self, items[0])] }
        let results = await withTaskGroup(of: (Int, Result<Output, ConcordError>).self) { group in
            for (index, item) in items.enumerated() {
                group.addTask {
                    do throws(ConcordError) {
                        return (index, .success(try await work(self, item)))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results: [Result<Output, ConcordError>?] = Array(repeating: nil, count: items.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
        var outputs: [Output] = []
        for result in results {
            switch result! {
            case let .success(output): outputs.append(output)
            case let .failure(error): throw error
            }
        }
        return outputs
    }
}

extension Array {
    /// Consecutive slices of at most `size` elements.
    func chunked(by size: Int) -> [[Element]] {
        let size = Swift.max(1, size)
        return stride(from: 0, to: count, by: size).map { Array(self[$0..<Swift.min($0 + size, count)]) }
    }
}
