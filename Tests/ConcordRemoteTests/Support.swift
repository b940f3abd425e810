import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// A temporary folder removed when the value is released.
final class TemporaryFolder {
    let path: String

    init(_ name: String = "concord-remote") {
        path = NSTemporaryDirectory() + "\(name)-\(UInt64.random(in: 0...UInt64.max))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// Writes `contents` at `relative`, creating folders: a file some other program left.
    func plant(_ relative: String, _ contents: String = "foreign") {
        let full = path + "/" + relative
        try! FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try! Data(contents.utf8).write(to: URL(fileURLWithPath: full))
    }

    /// Every file and folder below the root, relative, sorted.
    func everything() -> [String] {
        (FileManager.default.subpaths(atPath: path) ?? []).sorted()
    }
}

/// Builds the test's replica ids and sample paths.
enum Sample {
    static let a = ReplicaID(high: 0x0123_4567_89ab_cdef, low: 0xfedc_ba98_7654_3210)
    static let b = ReplicaID(high: 0xaaaa_0000_0000_0001, low: 0x0000_0000_0000_0002)
    static let keyedName = "3f" + String(repeating: "0123456789abcdef", count: 3) + "00112233445566"

    static func bytes(_ count: Int, salt: UInt8 = 0) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ Int(salt)) }
    }
}

/// An in-memory remote for tests, with optional deliberate flaws to show that the
/// conformance suite catches them.
final class MemoryRemote: Remote {
    enum Flaw: CaseIterable, Sendable {
        case none
        /// An overwrite by a shorter object keeps the old tail.
        case keepsStaleTail
        /// Accepts any path, and lists whatever was put.
        case acceptsAnyPath
        /// A stream put whose source fails keeps what arrived.
        case keepsPartialStream
        /// Reports modification times in seconds.
        case secondsNotMilliseconds
        /// `list` ignores its prefix.
        case ignoresPrefix
        /// `getStream` delivers the whole object as one chunk.
        case deliversOneChunk
        /// `delete` of a missing object throws.
        case deleteMissingThrows
        /// `get(_:limit:)` ignores its limit.
        case ignoresLimit
    }

    let flaw: Flaw
    private let objects = Mutex<[String: [UInt8]]>([:])

    init(flaw: Flaw = .none) { self.flaw = flaw }

    var contents: [String: [UInt8]] { objects.withLock { $0 } }

    private func check(_ path: String) throws(ConcordError) {
        if flaw != .acceptsAnyPath { try RemoteLayout.validateObjectPath(path) }
    }

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try check(path)
        objects.withLock { objects in
            if flaw == .keepsStaleTail, let old = objects[path], old.count > bytes.count {
                objects[path] = bytes + old[bytes.count...]
            } else {
                objects[path] = bytes
            }
        }
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        try check(path)
        return objects.withLock { $0[path] }
    }

    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        try check(path)
        guard let bytes = objects.withLock({ $0[path] }) else { return nil }
        if flaw != .ignoresLimit, UInt64(bytes.count) > limit { throw ConcordError.objectTooLarge(path, size: UInt64(bytes.count), limit: limit) }
        return bytes
    }

    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        if flaw != .acceptsAnyPath { try RemoteLayout.validatePrefix(prefix) }
        let modified: UInt64 = flaw == .secondsNotMilliseconds ? 1_767_225_600 : UInt64(Date().timeIntervalSince1970 * 1000)
        return objects.withLock { objects in
            objects.filter { flaw == .ignoresPrefix || $0.key.hasPrefix(prefix) }
                .map { RemoteObject(path: $0.key, size: UInt64($0.value.count), modified: modified) }
        }
    }

    func delete(_ path: String) async throws(ConcordError) {
        try check(path)
        let existed = objects.withLock { $0.removeValue(forKey: path) != nil }
        if !existed && flaw == .deleteMissingThrows { throw ConcordError(.remote, "no such object \(path)") }
    }

    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try check(path)
        var all: [UInt8] = []
        do throws(ConcordError) {
            while true {
                let chunk = try read()
                if chunk.isEmpty { break }
                all += chunk
            }
        } catch {
            if flaw == .keepsPartialStream { objects.withLock { $0[path] = all } }
            throw error
        }
        objects.withLock { $0[path] = all }
    }

    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try check(path)
        guard let bytes = objects.withLock({ $0[path] }) else { return false }
        if flaw == .deliversOneChunk {
            try write(bytes)
            return true
        }
        var start = 0
        while start < bytes.count {
            let end = min(bytes.count, start + 65536)
            try write(Array(bytes[start..<end]))
            start = end
        }
        return true
    }
}
