import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import Foundation
import Synchronization
import Testing

/// A remote that counts what it hands out: every byte read (batches, heads, snapshots,
/// files), how many file downloads began, and the most that ran at once. Each file
/// download can be made to last `fileDelay` longer (so that downloads overlap).
final class CountingRemote: ForwardingRemote, Sendable {
    let base: any Remote
    private let counts = Mutex<(bytes: UInt64, fileGets: Int, running: Int, mostRunning: Int)>((0, 0, 0, 0))
    private let delay = Mutex<Duration>(.zero)

    init(_ base: any Remote) { self.base = base }

    var bytesRead: UInt64 { counts.withLock { $0.bytes } }
    var fileGets: Int { counts.withLock { $0.fileGets } }
    /// The most file downloads in flight at once since ``resetMostRunning()``.
    var mostFileGetsAtOnce: Int { counts.withLock { $0.mostRunning } }
    func resetMostRunning() { counts.withLock { $0.mostRunning = 0 } }
    var fileDelay: Duration {
        get { delay.withLock { $0 } }
        set { delay.withLock { $0 = newValue } }
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        let bytes = try await base.get(path)
        counts.withLock { $0.bytes += UInt64(bytes?.count ?? 0) }
        return bytes
    }

    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        let bytes = try await base.get(path, limit: limit)
        counts.withLock { $0.bytes += UInt64(bytes?.count ?? 0) }
        return bytes
    }

    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        guard path.hasPrefix(RemoteLayout.blobsPrefix) else { return try await countedStream(path, write: write) }
        counts.withLock {
            $0.fileGets += 1
            $0.running += 1
            $0.mostRunning = max($0.mostRunning, $0.running)
        }
        defer { counts.withLock { $0.running -= 1 } }
        let delay = fileDelay
        if delay > .zero { try? await Task.sleep(for: delay) }
        return try await countedStream(path, write: write)
    }

    private func countedStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
            counts.withLock { $0.bytes += UInt64(chunk.count) }
            try write(chunk)
        }
    }
}

/// Deterministic content of `size` bytes for file `index`.
func onDemandContent(_ index: Int, size: Int) -> [UInt8] {
    var state = UInt64(index) &* 0x9E37_79B9_7F4A_7C15 | 1
    var bytes = [UInt8](repeating: 0, count: size)
    for position in stride(from: 0, to: size, by: 8) {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        withUnsafeBytes(of: state) { word in
            for offset in 0..<min(8, size - position) { bytes[position + offset] = word[offset] }
        }
    }
    return bytes
}

extension Store {
    /// The current file of `ref`'s `field`.
    func currentFile(_ ref: RecordRef, _ field: String) throws -> FileRef {
        guard case let .file(file)? = try record(ref)?.first(where: { $0.name == field })?.value else {
            throw ConcordError(.notFound, "\(ref) has no file \(field)")
        }
        return file
    }

    /// The bytes of the content files in the blob directory (not its temporaries).
    func blobBytes() throws -> UInt64 {
        try blobs.all().reduce(0) { total, hash in
            let size = (try? FileManager.default.attributesOfItem(atPath: blobs.path(for: hash))[.size] as? NSNumber)?.uint64Value ?? 0
            return total + size
        }
    }
}

extension SyncEngine {
    /// The whole content of `file`, read on demand.
    func bytes(of file: FileRef) async throws -> [UInt8] {
        let collected = Mutex<[UInt8]>([])
        try await readFile(file) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in collected.withLock { $0.append(contentsOf: chunk) } }
        return collected.withLock { $0 }
    }
}
