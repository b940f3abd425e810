import ConcordCore
import ConcordRemote
import Foundation

/// The promises every ``/ConcordRemote/Remote`` backend keeps, as one reusable check: one conformance
/// suite runs over every backend. Run it on a new backend's test double or on a
/// scratch bucket; an empty result means the backend conforms.
///
/// What it checks:
/// - put/get round trips of 0 bytes, a few bytes and more than 1 MiB; get of a missing
///   object is nil; an overwrite replaces the whole object, longer or shorter;
/// - a bounded get (`get(_:limit:)`) returns an object of exactly `limit` bytes, throws
///   `limitExceeded` naming the object for one byte more, and is nil for a missing object;
/// - delete of a missing object succeeds; after a delete, get is nil and the object is not
///   listed;
/// - `list(prefix:)` returns exactly the objects written whose path starts with the prefix
///   (string prefixes, not only folders), with their sizes and plausible modification times
///   in milliseconds; a name outside the layout is either refused on put or never listed;
/// - stream puts and gets round-trip objects of many chunks; a stream get delivers bounded
///   chunks (at most 1 MiB each); an error thrown by the caller's `read` or `write` is
///   rethrown, and a failed stream put leaves the previous object as it was;
/// - concurrent puts of different objects all land;
/// - invalid paths (empty, absolute, `..`, `.`, empty components, NUL) and invalid listing
///   prefixes are refused with ``/ConcordRemote/ConcordCore/ConcordError/Code/invalidRemotePath`` by every call.
///
/// Rule: run it on an **empty** remote (it reports a non-empty one and stops). *Why*: it
/// must compare listings exactly and writes `concord.json`. It deletes what it wrote.
/// Listing checks assume the backend itself is read-after-write consistent; staleness is a
/// fault that ``FaultyRemote`` injects, not one a backend should have on its own.
public enum RemoteConformance {
    /// The violated promises, one description each; empty if `remote` conforms.
    public static func check(_ remote: some Remote) async -> [String] {
        var checker = Checker(remote: remote)
        await checker.run()
        return checker.issues
    }

    /// A replica id of the suite's own, and another one.
    static let replica = ReplicaID(high: 0x5eed_c0de_0000_0001, low: 0x0000_0000_0000_00a1)
    static let other = ReplicaID(high: 0x5eed_c0de_0000_0002, low: 0x0000_0000_0000_00b2)
    static let absent = ReplicaID(high: 0x5eed_c0de_0000_0003, low: 0x0000_0000_0000_00c3)

    /// `count` deterministic bytes, different for each `salt`.
    static func pattern(_ count: Int, salt: UInt8) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ ($0 >> 8) &+ Int(salt)) }
    }

    private struct Checker<R: Remote> {
        let remote: R
        var issues: [String] = []
        /// Everything the suite wrote and has not deleted, with its content size.
        var written: [String: Int] = [:]

        init(remote: R) { self.remote = remote }

        mutating func run() async {
            do {
                let existing = try await remote.list(prefix: "")
                guard existing.isEmpty else {
                    issues.append("the remote is not empty (\(existing.count) objects, e.g. \(existing[0].path)); run the conformance suite on an empty remote")
                    return
                }
            } catch {
                issues.append("list(prefix: \"\") of an empty remote threw \(error)")
                return
            }
            await checkMissing()
            await checkRoundTrips()
            await checkBoundedGet()
            await checkOverwrite()
            await checkDelete()
            await checkListing()
            await checkForeignName()
            await checkStreams()
            await checkConcurrentPuts()
            await checkInvalidPaths()
            await cleanUp()
        }

        // MARK: Individual promises

        mutating func checkMissing() async {
            let path = RemoteLayout.batch(RemoteConformance.replica, seq: 0xdead)
            await expectObject(path, nil, "get of a missing object")
            do {
                var called = false
                let found = try await remote.getStream(path) { (_: [UInt8]) throws(ConcordError) in called = true }
                if found || called { issues.append("getStream of missing \(path) returned \(found) and called write: \(called); expected false, no call") }
            } catch {
                issues.append("getStream of missing \(path) threw \(error); expected false")
            }
            do { try await remote.delete(path) } catch { issues.append("delete of missing \(path) threw \(error); deleting a missing object succeeds") }
        }

        mutating func checkRoundTrips() async {
            let cases: [(String, Int)] = [
                (RemoteLayout.batch(RemoteConformance.replica, seq: 1), 0),
                (RemoteLayout.batch(RemoteConformance.replica, seq: 2), 13),
                (RemoteLayout.batch(RemoteConformance.replica, seq: 3), (1 << 20) + 17),
            ]
            for (index, (path, size)) in cases.enumerated() {
                let bytes = RemoteConformance.pattern(size, salt: UInt8(index))
                guard await put(path, bytes, "put/get round trip of \(size) bytes") else { continue }
                await expectObject(path, bytes, "put/get round trip of \(size) bytes")
            }
        }

        mutating func checkBoundedGet() async {
            let path = RemoteLayout.head(RemoteConformance.replica, seq: 0xb0)
            let bytes = RemoteConformance.pattern(300, salt: 30)
            guard await put(path, bytes, "bounded get") else { return }
            do {
                let found = try await remote.get(path, limit: 300)
                if found != bytes { issues.append("get(\(path), limit: 300) of a 300-byte object returned \(Self.describe(found))") }
            } catch {
                issues.append("get(\(path), limit: 300) of a 300-byte object threw \(error)")
            }
            do {
                let found = try await remote.get(path, limit: 299)
                issues.append("get(\(path), limit: 299) of a 300-byte object returned \(Self.describe(found)); an object over the limit must throw limitExceeded")
            } catch {
                if error.code != .limitExceeded || !error.message.contains(path) {
                    issues.append("get(\(path), limit: 299) of a 300-byte object threw \(error); expected limitExceeded naming the object")
                }
            }
            do {
                let missing = RemoteLayout.head(RemoteConformance.absent, seq: 0xb1)
                if let found = try await remote.get(missing, limit: 10) { issues.append("get(\(missing), limit: 10) of a missing object returned \(Self.describe(found)); expected nil") }
            } catch {
                issues.append("get(limit:) of a missing object threw \(error); expected nil")
            }
            await delete(path, "bounded get clean-up")
        }

        mutating func checkOverwrite() async {
            let path = RemoteLayout.snapshot(RemoteConformance.replica, seq: 9)
            let long = RemoteConformance.pattern(5000, salt: 7)
            let short = RemoteConformance.pattern(10, salt: 8)
            guard await put(path, long, "overwrite"), await put(path, short, "overwrite, longer by shorter") else { return }
            await expectObject(path, short, "an overwrite by a shorter object (no stale tail may remain)")
            guard await put(path, long, "overwrite, shorter by longer") else { return }
            await expectObject(path, long, "an overwrite by a longer object")
        }

        mutating func checkDelete() async {
            let path = RemoteLayout.head(RemoteConformance.other, seq: 0x77)
            guard await put(path, [1, 2, 3], "delete") else { return }
            await delete(path, "delete of an existing object")
            await expectObject(path, nil, "get after delete")
            if let listing = await list(RemoteLayout.headsPrefix), listing.contains(where: { $0.path == path }) {
                issues.append("list(prefix: \"heads/\") still shows \(path) after it was deleted")
            }
            await delete(path, "a second delete of the same object")
        }

        mutating func checkListing() async {
            let (a, b) = (RemoteConformance.replica, RemoteConformance.other)
            let blobA = String(repeating: "ab", count: 32)
            let blobB = "cd" + String(repeating: "0123456789abcdef", count: 3) + String(repeating: "e", count: 14)
            let objects: [String] = [
                RemoteLayout.manifestPath,
                RemoteLayout.head(a, seq: 1), RemoteLayout.head(a, seq: 2), RemoteLayout.head(a, seq: 0x100),
                RemoteLayout.head(b, seq: 7),
                RemoteLayout.batch(b, seq: 1),
                RemoteLayout.snapshot(a, seq: 5),
                RemoteLayout.blob(keyedName: blobA), RemoteLayout.blob(keyedName: blobB),
            ]
            for (index, path) in objects.enumerated() {
                _ = await put(path, RemoteConformance.pattern(index * 3 + 1, salt: UInt8(index)), "listing setup")
            }
            let before = Date().timeIntervalSince1970
            guard let everything = await list("") else { return }
            let all = Set(written.keys)
            if Set(everything.map(\.path)) != all {
                let extra = Set(everything.map(\.path)).subtracting(all).sorted()
                let missing = all.subtracting(everything.map(\.path)).sorted()
                issues.append("list(prefix: \"\") is not exactly the objects written: extra \(extra), missing \(missing)")
            }
            for object in everything {
                if let size = written[object.path], object.size != UInt64(size) {
                    issues.append("list reports \(object.path) as \(object.size.map { "\($0) bytes" } ?? "of no size"); it has \(size)")
                }
                if let modified = object.modified {
                    let seconds = Double(modified) / 1000
                    if abs(seconds - before) > 86_400 {
                        issues.append("list reports \(object.path) modified at \(modified) ms since the epoch, more than a day from now (\(Int(before * 1000)) ms): wrong unit?")
                    }
                }
            }
            let prefixes = [
                RemoteLayout.headsPrefix, "heads/\(a)-", "heads/\(a)-00000000000000", "heads/\(a)", "heads/5eed",
                RemoteLayout.batchesPrefix(a), RemoteLayout.batchesPrefix(b), RemoteLayout.replicasPrefix, "replicas",
                RemoteLayout.snapshotsPrefix, RemoteLayout.blobsPrefix, "blobs/ab/", "blobs/a", "b", "concord",
                RemoteLayout.batchesPrefix(RemoteConformance.absent), "heads/\(RemoteConformance.absent)", "nothing/", "nothing",
            ]
            for prefix in prefixes {
                guard let listing = await list(prefix) else { continue }
                let expected = Set(all.filter { $0.utf8.starts(with: prefix.utf8) })
                if Set(listing.map(\.path)) != expected {
                    issues.append("list(prefix: \"\(prefix)\") returned \(listing.map(\.path).sorted()); expected \(expected.sorted())")
                }
            }
        }

        mutating func checkForeignName() async {
            let foreign = RemoteLayout.head(RemoteConformance.replica, seq: 1) + " (conflicted copy 2026-11-21)"
            var stored = false
            do {
                try await remote.put(foreign, [9, 9, 9])
                stored = true
            } catch {}
            if stored, let listing = await list(""), listing.contains(where: { $0.path == foreign }) {
                issues.append("list shows \(foreign), a name outside the store layout; listings must show only layout names")
            }
            if stored { try? await remote.delete(foreign) }
        }

        mutating func checkStreams() async {
            let path = RemoteLayout.batch(RemoteConformance.replica, seq: 0x51)
            let chunks = [65536, 65536, 1000, 65541, 1].enumerated().map { RemoteConformance.pattern($1, salt: UInt8(40 + $0)) }
            let whole = chunks.flatMap { $0 }
            var next = 0
            do {
                try await remote.putStream(path) { () throws(ConcordError) -> [UInt8] in
                    defer { next += 1 }
                    return next < chunks.count ? chunks[next] : []
                }
                written[path] = whole.count
            } catch {
                issues.append("putStream of \(whole.count) bytes in \(chunks.count) chunks to \(path) threw \(error)")
                return
            }
            await expectObject(path, whole, "stream put then get")
            await expectStream(path, whole, "stream put then stream get")
            let big = RemoteLayout.batch(RemoteConformance.replica, seq: 3)
            if let size = written[big] {
                await expectStream(big, RemoteConformance.pattern(size, salt: 2), "put then stream get of \(size) bytes")
            }

            let empty = RemoteLayout.batch(RemoteConformance.replica, seq: 0x52)
            do {
                try await remote.putStream(empty) { () throws(ConcordError) -> [UInt8] in [] }
                written[empty] = 0
                await expectObject(empty, [], "stream put of an empty stream")
            } catch {
                issues.append("putStream of an empty stream to \(empty) threw \(error)")
            }

            // A stream put whose source fails: the error comes back, the old object stays.
            let probe = ConcordError.Code("conformanceProbe")
            var calls = 0
            do {
                try await remote.putStream(path) { () throws(ConcordError) -> [UInt8] in
                    calls += 1
                    if calls > 2 { throw ConcordError(probe, "the source failed on purpose") }
                    return RemoteConformance.pattern(70_000, salt: 99)
                }
                issues.append("putStream to \(path) returned normally although its read threw")
            } catch {
                if error.code != probe { issues.append("putStream whose read threw \(probe) threw \(error) instead of rethrowing it") }
            }
            await expectObject(path, whole, "a stream put whose read failed (the previous object must remain whole)")

            do {
                _ = try await remote.getStream(path) { (_: [UInt8]) throws(ConcordError) in
                    throw ConcordError(probe, "the sink failed on purpose")
                }
                issues.append("getStream of \(path) returned normally although its write threw")
            } catch {
                if error.code != probe { issues.append("getStream whose write threw \(probe) threw \(error) instead of rethrowing it") }
            }
        }

        mutating func checkConcurrentPuts() async {
            let remote = remote
            let paths = (0..<8).map { RemoteLayout.batch(RemoteConformance.other, seq: 0x1000 + UInt64($0)) }
            let failures = await withTaskGroup(of: String?.self) { group in
                for (index, path) in paths.enumerated() {
                    group.addTask {
                        do {
                            try await remote.put(path, RemoteConformance.pattern(3000 + index, salt: UInt8(index)))
                            return nil
                        } catch {
                            return "concurrent put of \(path) threw \(error)"
                        }
                    }
                }
                var failures: [String] = []
                for await failure in group { if let failure { failures.append(failure) } }
                return failures.sorted()
            }
            issues += failures
            for (index, path) in paths.enumerated() {
                written[path] = 3000 + index
                await expectObject(path, RemoteConformance.pattern(3000 + index, salt: UInt8(index)), "concurrent puts")
            }
        }

        mutating func checkInvalidPaths() async {
            let remote = remote
            let before = await list("").map { Set($0.map(\.path)) }
            let paths = ["", "/concord.json", "../concord.json", "heads/../concord.json", "heads//x", "./concord.json", "concord.json/", "heads/\u{0}x"]
            for path in paths {
                let shown = path.replacingOccurrences(of: "\u{0}", with: "\\0")
                await expectInvalid("put(\"\(shown)\")") { () async throws(ConcordError) in try await remote.put(path, [1]) }
                await expectInvalid("get(\"\(shown)\")") { () async throws(ConcordError) in _ = try await remote.get(path) }
                await expectInvalid("delete(\"\(shown)\")") { () async throws(ConcordError) in try await remote.delete(path) }
                await expectInvalid("putStream(\"\(shown)\")") { () async throws(ConcordError) in
                    try await remote.putStream(path) { () throws(ConcordError) -> [UInt8] in [] }
                }
                await expectInvalid("getStream(\"\(shown)\")") { () async throws(ConcordError) in
                    _ = try await remote.getStream(path) { (_: [UInt8]) throws(ConcordError) in }
                }
            }
            for prefix in ["/", "/heads/", "../", "heads/../", "..", "heads//", "./"] {
                await expectInvalid("list(prefix: \"\(prefix)\")") { () async throws(ConcordError) in _ = try await remote.list(prefix: prefix) }
            }
            let after = await list("").map { Set($0.map(\.path)) }
            if let before, let after, before != after {
                issues.append("refused calls changed the remote: listing was \(before.sorted()), is \(after.sorted())")
            }
        }

        mutating func cleanUp() async {
            for path in written.keys.sorted() { await delete(path, "clean-up") }
            if let left = await list(""), !left.isEmpty {
                issues.append("after deleting everything it wrote, the suite still lists \(left.map(\.path).sorted())")
            }
        }

        // MARK: Helpers

        /// Puts and records; false (with an issue) if the put threw.
        mutating func put(_ path: String, _ bytes: [UInt8], _ context: String) async -> Bool {
            do {
                try await remote.put(path, bytes)
                written[path] = bytes.count
                return true
            } catch {
                issues.append("\(context): put of \(bytes.count) bytes to \(path) threw \(error)")
                return false
            }
        }

        mutating func delete(_ path: String, _ context: String) async {
            do {
                try await remote.delete(path)
                written[path] = nil
            } catch {
                issues.append("\(context): delete of \(path) threw \(error)")
            }
        }

        mutating func list(_ prefix: String) async -> [RemoteObject]? {
            do {
                return try await remote.list(prefix: prefix)
            } catch {
                issues.append("list(prefix: \"\(prefix)\") threw \(error)")
                return nil
            }
        }

        mutating func expectObject(_ path: String, _ expected: [UInt8]?, _ context: String) async {
            do {
                let found = try await remote.get(path)
                if found != expected {
                    issues.append("\(context): get(\(path)) returned \(Self.describe(found)); expected \(Self.describe(expected))")
                }
            } catch {
                issues.append("\(context): get(\(path)) threw \(error)")
            }
        }

        mutating func expectStream(_ path: String, _ expected: [UInt8], _ context: String) async {
            var received: [UInt8] = []
            var largest = 0
            var chunks = 0
            do {
                let found = try await remote.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
                    received += chunk
                    largest = max(largest, chunk.count)
                    chunks += 1
                }
                if !found { issues.append("\(context): getStream(\(path)) found no object") }
                if received != expected {
                    issues.append("\(context): getStream(\(path)) delivered \(Self.describe(received)); expected \(Self.describe(expected))")
                }
                if largest > 1 << 20 {
                    issues.append("\(context): getStream(\(path)) delivered a chunk of \(largest) bytes; stream in bounded chunks (64 KiB) so memory stays constant")
                }
            } catch {
                issues.append("\(context): getStream(\(path)) threw \(error)")
            }
        }

        mutating func expectInvalid(_ call: String, _ body: () async throws(ConcordError) -> Void) async {
            do {
                try await body()
                issues.append("\(call) succeeded; an invalid path must be refused with invalidRemotePath")
            } catch {
                if error.code != .invalidRemotePath {
                    issues.append("\(call) threw \(error); an invalid path must be refused with invalidRemotePath")
                }
            }
        }

        static func describe(_ bytes: [UInt8]?) -> String {
            guard let bytes else { return "nil" }
            return "\(bytes.count) bytes" + (bytes.isEmpty ? "" : " starting \(bytes.prefix(4).map { String($0) }.joined(separator: ","))")
        }
    }
}
