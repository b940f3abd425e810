import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// What a ``Remote`` must withstand from storage that anyone can write (the remote
/// conformance suite's hostile half): it must never crash, hang, leave its root or read
/// unbounded data because of what was planted there. An empty result means it withstands it.
///
/// What it checks, each on its own planted thing:
/// - `heads/`, `blobs/ab/` and `replicas/<id>/deltas/` replaced by symbolic links to a
///   folder outside the root that holds files named like objects there (and an old
///   `.concord-tmp-…`): after put, get, list, delete and the sweep, no byte outside the root
///   was written or deleted, no outside file was read back or listed;
/// - an object that is a symbolic link to a file outside: not read, not listed, and
///   put/delete leave the outside file as it was;
/// - a FIFO as a batch and as `concord.json`, a folder where an object belongs, and a link
///   to `/dev/zero`: get, get with a limit and getStream return promptly (a watchdog turns a
///   hang into an issue) with ``ConcordCore/ConcordError/Code/unreadableObject``, and
///   listings skip them;
/// - a sparse 2 GiB `concord.json`: ``Remote/get(_:limit:)`` throws
///   ``ConcordCore/ConcordError/Code/limitExceeded`` without allocating for it (the
///   process's peak memory grows by less than 512 MiB — a quarter of what reading it would
///   take, and room for other tests running at the same time in the same process).
///
/// Rule: run it on an **empty** remote; it removes what it planted.
public enum HostileRemoteCheck {
    /// The issues found; empty if `remote` withstands everything above. `hangAfter`: how long
    /// a call may take before it counts as hung (generous: a hang is forever).
    public static func check(_ remote: some Remote, storage: some HostileStorage, hangAfter seconds: UInt64 = 30) async -> [String] {
        var checker = Checker(remote: remote, storage: storage, hangAfter: seconds)
        await checker.run()
        return checker.issues
    }

    /// The size of the sparse file: 2 GiB.
    public static let sparseSize: UInt64 = 2 << 30

    static let replica = ReplicaID(high: 0x5eed_c0de_0000_0001, low: 0x0000_0000_0000_00a1)
    static let keyedName = String(repeating: "ab", count: 32)

    /// How one call ended.
    enum Outcome: Sendable, CustomStringConvertible {
        case returned(String)
        case threw(ConcordError)
        case hung

        var description: String {
            switch self {
            case let .returned(value): "returned \(value)"
            case let .threw(error): "threw \(error)"
            case .hung: "did not return (hung)"
            }
        }

        var code: ConcordError.Code? {
            if case let .threw(error) = self { error.code } else { nil }
        }
    }

    /// Resumes a continuation once: with the call's outcome or with the watchdog's.
    private final class OneShot: Sendable {
        private let pending: Mutex<CheckedContinuation<Outcome, Never>?>
        init(_ continuation: CheckedContinuation<Outcome, Never>) { pending = Mutex(continuation) }
        func finish(_ outcome: Outcome) {
            pending.withLock { pending in
                pending?.resume(returning: outcome)
                pending = nil
            }
        }
    }

    private struct Checker<R: Remote, S: HostileStorage> {
        let remote: R
        let storage: S
        let hangAfter: UInt64
        var issues: [String] = []

        init(remote: R, storage: S, hangAfter: UInt64) {
            self.remote = remote
            self.storage = storage
            self.hangAfter = hangAfter
        }

        mutating func run() async {
            do {
                let existing = try await remote.list(prefix: "")
                guard existing.isEmpty else {
                    issues.append("the remote is not empty (\(existing.count) objects); run the hostile check on an empty remote")
                    return
                }
            } catch {
                issues.append("list(prefix: \"\") of an empty remote threw \(error)")
                return
            }
            let replica = HostileRemoteCheck.replica
            await checkLinkedFolder("heads", old: RemoteLayout.head(replica, seq: 1), new: RemoteLayout.head(replica, seq: 2))
            await checkLinkedFolder(
                "blobs/ab", old: RemoteLayout.blob(keyedName: HostileRemoteCheck.keyedName),
                new: RemoteLayout.blob(keyedName: "ab" + String(repeating: "cd", count: 31)))
            await checkLinkedFolder(
                String(RemoteLayout.batchesPrefix(replica).dropLast()), old: RemoteLayout.batch(replica, seq: 1), new: RemoteLayout.batch(replica, seq: 2))
            await checkLinkedObject()
            await checkUnreadable(RemoteLayout.batch(replica, seq: 3), "a FIFO") { try $0.plantFIFO($1) }
            await checkUnreadable(RemoteLayout.manifestPath, "a FIFO") { try $0.plantFIFO($1) }
            await checkUnreadable(RemoteLayout.snapshot(replica, seq: 4), "a folder") { try $0.plantFolder($1) }
            await checkUnreadable(RemoteLayout.head(replica, seq: 5), "a link to /dev/zero") { try $0.plantLink($1, to: "/dev/zero") }
            await checkSparse()
        }

        // MARK: Links out of the root

        /// `folder` replaced by a link to the outside folder, which holds a file named like
        /// the object `old` and an old temporary file.
        mutating func checkLinkedFolder(_ folder: String, old: String, new: String) async {
            let name = String(old.split(separator: "/").last!)
            let outsideFiles = [name: Array("an unrelated file outside the store".utf8), ".concord-tmp-0000000000000001": Array("someone's".utf8)]
            guard prepareOutside(outsideFiles), plant("\(folder) as a link outside", { try $0.plantLink($1, to: $0.outside) }, folder) else { return }
            defer { unplant(folder) }
            let before = outsideContents()
            let context = "with \(folder)/ a symbolic link to a folder outside the root"
            let remote = remote

            let put = await call { () async throws(ConcordError) -> String in try await remote.put(new, [1, 2, 3]); return "()" }
            if case .hung = put { issues.append("\(context): put(\(new)) hung") }
            let got = await call { () async throws(ConcordError) -> String in Self.show(try await remote.get(old)) }
            if case let .returned(shown) = got, shown != "nil" {
                issues.append("\(context): get(\(old)) returned \(shown) — it read a file outside the root; expected nil or unreadableObject")
            }
            if case .hung = got { issues.append("\(context): get(\(old)) hung") }
            let listed = await call { () async throws(ConcordError) -> String in
                try await remote.list(prefix: "").map(\.path).sorted().joined(separator: ", ")
            }
            if case let .returned(paths) = listed, !paths.isEmpty {
                issues.append("\(context): list(prefix: \"\") returned [\(paths)] — it listed files outside the root; links must be skipped")
            }
            if case let .threw(error) = listed { issues.append("\(context): list(prefix: \"\") threw \(error); it must skip the link and list the rest") }
            _ = await call { () async throws(ConcordError) -> String in try await remote.delete(old); return "()" }
            let storage = storage
            _ = await call { () async throws(ConcordError) -> String in
                do { try storage.sweep() } catch { throw ConcordError(.remote, "sweep threw \(error)") }
                return "()"
            }
            let after = outsideContents()
            if before != after {
                issues.append("\(context): put, get, list, delete and the sweep changed the folder outside the root: it held \(Self.describe(before)), now \(Self.describe(after))")
            }
        }

        /// An object that is a link to a file outside the root.
        mutating func checkLinkedObject() async {
            let path = RemoteLayout.manifestPath
            guard prepareOutside(["secret": Array("outside bytes".utf8)]),
                  plant("\(path) as a link to a file outside", { try $0.plantLink($1, to: $0.outside + "/secret") }, path)
            else { return }
            defer { try? storage.remove(path) }
            let before = outsideContents()
            let context = "with \(path) a symbolic link to a file outside the root"
            let remote = remote
            await expectUnreadable(context, "get(\(path))", naming: path) { () async throws(ConcordError) -> String in Self.show(try await remote.get(path)) }
            await expectUnreadable(context, "get(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String in
                Self.show(try await remote.get(path, limit: RemoteLayout.maxObjectSize(for: .manifest)))
            }
            await expectSkipped(context, path)
            _ = await call { () async throws(ConcordError) -> String in try await remote.put(path, [1]); return "()" }
            _ = await call { () async throws(ConcordError) -> String in try await remote.delete(path); return "()" }
            if outsideContents() != before {
                issues.append("\(context): a put and a delete of \(path) changed the file outside the root (\(Self.describe(before)) → \(Self.describe(outsideContents())))")
            }
        }

        // MARK: Things that are not files

        mutating func checkUnreadable(_ path: String, _ what: String, _ plantIt: (S, String) throws -> Void) async {
            guard plant("\(path) as \(what)", plantIt, path) else { return }
            defer { unplant(path) }
            let context = "with \(path) \(what)"
            let remote = remote
            await expectUnreadable(context, "get(\(path))", naming: path) { () async throws(ConcordError) -> String in Self.show(try await remote.get(path)) }
            await expectUnreadable(context, "get(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String in
                Self.show(try await remote.get(path, limit: RemoteLayout.maxObjectSize(forPath: path)))
            }
            await expectUnreadable(context, "getStream(\(path))", naming: path) { () async throws(ConcordError) -> String in
                var count = 0
                let found = try await remote.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
                    count += chunk.count
                    if count > 1 << 20 { throw ConcordError(.limitExceeded, "getStream delivered more than 1 MiB") }
                }
                return "\(found) after \(count) bytes"
            }
            await expectSkipped(context, path)
        }

        // MARK: Sizes

        mutating func checkSparse() async {
            let path = RemoteLayout.manifestPath
            guard plant("\(path) as a sparse file of \(HostileRemoteCheck.sparseSize) bytes", { try $0.plantSparseFile($1, size: HostileRemoteCheck.sparseSize) }, path) else { return }
            defer { unplant(path) }
            let context = "with \(path) a sparse file of \(HostileRemoteCheck.sparseSize) bytes"
            let remote = remote
            let limit = RemoteLayout.maxObjectSize(for: .manifest)
            let peak = Self.peakMemory()
            let outcome = await call { () async throws(ConcordError) -> String in Self.show(try await remote.get(path, limit: limit)) }
            let after = Self.peakMemory()
            let grown = after > peak ? after - peak : 0
            if outcome.code != .limitExceeded {
                issues.append("\(context): get(\(path), limit: \(limit)) \(outcome); expected limitExceeded")
            } else if case let .threw(error) = outcome, !(error.message.contains(path) && error.message.contains("\(limit)")) {
                issues.append("\(context): the limitExceeded message does not name the object and the limit: \(error.message)")
            }
            if grown > 512 << 20 {
                issues.append("\(context): get(\(path), limit: \(limit)) grew the peak memory by \(grown >> 20) MiB; it must not read past the limit")
            }
            if let listing = try? await remote.list(prefix: path), let object = listing.first, object.size != HostileRemoteCheck.sparseSize {
                issues.append("\(context): list reports \(object.size.map { "\($0) bytes" } ?? "no size")")
            }
        }

        // MARK: Helpers

        mutating func expectUnreadable(
            _ context: String, _ what: String, naming path: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String
        ) async {
            let outcome = await call(body)
            if outcome.code != .unreadableObject {
                issues.append("\(context): \(what) \(outcome); expected unreadableObject, promptly")
            } else if case let .threw(error) = outcome, !error.message.contains(path) {
                issues.append("\(context): the unreadableObject message of \(what) does not name the object: \(error.message)")
            }
        }

        mutating func expectSkipped(_ context: String, _ path: String) async {
            let remote = remote
            let listed = await call { () async throws(ConcordError) -> String in
                try await remote.list(prefix: "").map(\.path).sorted().joined(separator: ", ")
            }
            if case let .returned(paths) = listed, !paths.isEmpty {
                issues.append("\(context): list(prefix: \"\") returned [\(paths)]; only regular files are objects")
            } else if case .returned = listed {
            } else {
                issues.append("\(context): list(prefix: \"\") \(listed); it must skip what is not a file and list the rest")
            }
        }

        /// Runs `body` on its own task and gives up waiting after ``hangAfter`` seconds: a
        /// call blocked in the kernel (a FIFO's open) cannot be cancelled, but it need not
        /// block the check.
        func call(_ body: @escaping @Sendable () async throws(ConcordError) -> String) async -> Outcome {
            let seconds = hangAfter
            return await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let once = OneShot(continuation)
                Task.detached {
                    do throws(ConcordError) { once.finish(.returned(try await body())) } catch { once.finish(.threw(error)) }
                }
                Task.detached {
                    try? await Task.sleep(nanoseconds: seconds * 1_000_000_000)
                    once.finish(.hung)
                }
            }
        }

        mutating func plant(_ what: String, _ body: (S, String) throws -> Void, _ path: String) -> Bool {
            do {
                try body(storage, path)
                return true
            } catch {
                issues.append("could not plant \(what): \(error)")
                return false
            }
        }

        func unplant(_ path: String) {
            try? storage.remove(path)
        }

        /// Empties the outside folder and fills it with `files`.
        mutating func prepareOutside(_ files: [String: [UInt8]]) -> Bool {
            let manager = FileManager.default
            do {
                for name in try manager.contentsOfDirectory(atPath: storage.outside) {
                    try manager.removeItem(atPath: storage.outside + "/" + name)
                }
                for (name, bytes) in files {
                    try Data(bytes).write(to: URL(fileURLWithPath: storage.outside + "/" + name))
                    // Old enough for any sweep.
                    try manager.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000)], ofItemAtPath: storage.outside + "/" + name)
                }
                return true
            } catch {
                issues.append("could not prepare the outside folder \(storage.outside): \(error)")
                return false
            }
        }

        /// Every file below the outside folder with its bytes.
        func outsideContents() -> [String: [UInt8]] {
            var contents: [String: [UInt8]] = [:]
            for path in FileManager.default.subpaths(atPath: storage.outside) ?? [] {
                let full = storage.outside + "/" + path
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: full, isDirectory: &isFolder), !isFolder.boolValue else {
                    contents[path + "/"] = []
                    continue
                }
                contents[path] = (try? Data(contentsOf: URL(fileURLWithPath: full))).map { [UInt8]($0) } ?? []
            }
            return contents
        }

        static func describe(_ contents: [String: [UInt8]]) -> String {
            "[" + contents.keys.sorted().map { "\($0) (\(contents[$0]!.count) bytes)" }.joined(separator: ", ") + "]"
        }

        static func show(_ bytes: [UInt8]?) -> String {
            guard let bytes else { return "nil" }
            return "\(bytes.count) bytes"
        }

        /// The process's peak resident memory so far, in bytes.
        static func peakMemory() -> UInt64 {
            var usage = rusage()
            #if canImport(Glibc)
            guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
            #else
            guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
            #endif
            #if canImport(Darwin)
            return UInt64(usage.ru_maxrss)  // bytes on Darwin
            #else
            return UInt64(usage.ru_maxrss) * 1024  // KiB on Linux
            #endif
        }
    }
}
