import Concord
import Foundation

/// Reading file contents from the command line: local ones straight from the blob
/// directory, others fetched from the remote on demand.
enum FileFetching {
    /// Writes `file` (the content of `name`, e.g. "photos/p1 image") to `destination`,
    /// fetching it when it is not local. A content that cannot be had is one line naming
    /// the file and why (exit 1).
    static func export(_ file: FileRef, of name: String, to destination: String, store: Store, options: GlobalOptions) async throws {
        // A local content is written straight away; one evicted between the look and the
        // open is fetched below.
        if store.blobs.contains(file.hash), (try? store.blobs.export(file.hash, to: destination)) != nil {
            try store.noteRead(file.hash)
            return
        }
        guard try RemoteLocation.configured(in: store) != nil else {
            throw ConcordError(.missingBlob, "\(name): content \(file.hash.hex) is not on this device and the store has no remote to fetch it from: set one with `concord remote set`")
        }
        let engine = try await RemoteConnection.open(store, options: options).engine
        do throws(ConcordError) {
            try await engine.exportFile(file, to: destination)
        } catch {
            throw error.code == .fileUnavailable ? ConcordError(.fileUnavailable, "\(name): \(error.message)") : error
        }
    }

    /// Runs `work` with a sync engine for the store's remote, to fetch a content `name`
    /// (e.g. "version … of photos/p1 image") that is not local. Without a remote, or when
    /// the remote lacks it, one line naming the content and why (exit 1).
    static func engine(
        for name: String, store: Store, options: GlobalOptions, _ work: (SyncEngine) async throws(ConcordError) -> Void
    ) async throws {
        guard try RemoteLocation.configured(in: store) != nil else {
            throw ConcordError(.missingBlob, "\(name): its content is not on this device and the store has no remote to fetch it from: set one with `concord remote set`")
        }
        let engine = try await RemoteConnection.open(store, options: options).engine
        do throws(ConcordError) {
            try await work(engine)
        } catch {
            throw error.code == .fileUnavailable ? ConcordError(.fileUnavailable, "\(name): \(error.message)") : error
        }
    }
}
