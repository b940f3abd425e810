import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// What a ``Remote`` must withstand from storage that anyone can write, and from whoever
/// answers its requests (the remote conformance suite's hostile half): it must never crash,
/// hang, leave its root or read unbounded data because of what was planted there or what a
/// server sent; the worst it may do is stop one call with one line that says what is wrong.
/// An empty result means it withstands it.
///
/// What it checks, each on its own planted thing, as far as the ``HostileStorage`` can plant
/// it (what it cannot is reported as not applicable, never as passed):
/// - `heads/`, `blobs/ab/` and `replicas/<id>/deltas/` replaced by symbolic links to a
///   folder outside the root that holds files named like objects there (and an old
///   `.concord-tmp-…`): after put, get, list, delete and the sweep, no byte outside the root
///   was written or deleted, no outside file was read back or listed;
/// - an object that is a symbolic link to a file outside: not read, not listed, and
///   put/delete leave the outside file as it was;
/// - a FIFO as a batch and as `concord.json`, a folder where an object belongs, and a link
///   to `/dev/zero`: get, get with a limit and getStream (with and without one) return
///   promptly (a watchdog turns a hang into an issue) as ``Expectations/unreadable`` says,
///   and listings skip them;
/// - objects at names outside the layout (`heads/` with its slash, `replicas/<id>/deltas`
///   where the layout has a folder, a `..` segment, a leading slash) beside objects named
///   like the store's outside the root: listings return none of them, get never returns
///   their bytes, puts and deletes next to them work or fail with a typed error, and nothing
///   outside the root changes;
/// - a `concord.json` of ``Expectations/largeFileSize`` bytes (a sparse 2 GiB file where
///   the storage allows): ``Remote/get(_:limit:)`` and a bounded getStream throw
///   ``ConcordCore/ConcordError/Code/limitExceeded`` without allocating for it (the
///   process's peak memory grows by less than 512 MiB — a quarter of what reading 2 GiB
///   would take, and room for other tests running at the same time in the same process);
/// - answers no honest server gives, each a ``Misbehaviour`` played by a server of our own:
///   a body that never ends, one that trickles, an endless error body, a listing that never
///   ends and a listing page that never ends: every call ends promptly with its bound's
///   typed error (or, for a "not found", with nothing), having read no more than its limit.
///
/// Every error a call throws must be one line. Rule: run it on an **empty** remote; it
/// removes what it planted and the folders its own puts made. Give an HTTP remote bounds that
/// end a stalled read well within `hangAfter` (a few seconds of `HTTPBounds.grace`).
public enum HostileRemoteCheck {
    /// The issues found; empty if `remote` withstands everything above. `hangAfter`: how long
    /// a call may take before it counts as hung (generous: a hang is forever).
    public static func check(_ remote: some Remote, storage: some HostileStorage, hangAfter seconds: UInt64 = 30) async -> [String] {
        await run(remote, storage: storage, hangAfter: seconds).issues
    }

    /// The issues found and the parts the storage could not plant.
    public static func run(_ remote: some Remote, storage: some HostileStorage, hangAfter seconds: UInt64 = 30) async -> Report {
        var checker = Checker(remote: remote, storage: storage, hangAfter: seconds)
        await checker.run()
        return Report(issues: checker.issues, notApplicable: checker.notApplicable)
    }

    /// What a run found.
    public struct Report: Sendable {
        /// What the remote did wrong, one line each; empty if it withstood everything.
        public var issues: [String]
        /// The parts not checked because the storage cannot hold what they plant.
        public var notApplicable: [NotApplicable]
    }

    /// A part of the check the storage could not plant, and why.
    public struct NotApplicable: Sendable, Hashable, CustomStringConvertible {
        /// What the part plants, e.g. "heads as a link to a folder outside".
        public let part: String
        public let reason: String
        public var description: String { "\(part): \(reason)" }
    }

    /// What a remote on a given storage is expected to do where remotes may rightly differ:
    /// a folder remote sees a planted FIFO itself, an HTTP remote only what the server says
    /// about it.
    public struct Expectations: Sendable {
        /// How a read of something that is not an object (a FIFO, a folder, a link) must end.
        public enum Unreadable: Sendable {
            /// With ``ConcordCore/ConcordError/Code/unreadableObject`` naming it: the remote
            /// sees what stands there.
            case unreadableObject
            /// With nothing (not found) or any typed error naming it, never with bytes: the
            /// remote sees only what a server answers about it (a 403, a 404, a 405).
            case absentOrError
        }

        public var unreadable: Unreadable
        /// Whether a listing may end with a typed error instead of skipping what is not an
        /// object: a server may refuse to list a folder it will not follow a link into.
        public var listingMayFail: Bool
        /// Whether a listing may name what stands at an object's name without being one (a
        /// server may list a link or a device as a file), reading it ending as ``unreadable``
        /// says.
        public var listingMayNameNonObjects: Bool
        /// The size of the `concord.json` planted over its limit.
        public var largeFileSize: UInt64

        public init(unreadable: Unreadable, listingMayFail: Bool, listingMayNameNonObjects: Bool, largeFileSize: UInt64) {
            self.unreadable = unreadable
            self.listingMayFail = listingMayFail
            self.listingMayNameNonObjects = listingMayNameNonObjects
            self.largeFileSize = largeFileSize
        }

        /// A remote that reads the storage itself (a folder): what is not a file is
        /// ``Unreadable/unreadableObject`` and skipped by listings; a sparse 2 GiB file.
        public static let folder = Expectations(unreadable: .unreadableObject, listingMayFail: false, listingMayNameNonObjects: false, largeFileSize: sparseSize)

        /// A remote behind a server: it sees only the server's answers, so what is not a file
        /// may read as not found or as any typed error, and a listing may name it or fail.
        public static func server(largeFileSize: UInt64 = sparseSize) -> Expectations {
            Expectations(unreadable: .absentOrError, listingMayFail: true, listingMayNameNonObjects: true, largeFileSize: largeFileSize)
        }
    }

    /// An answer no honest server gives (``HostileStorage/play(_:at:)``).
    public enum Misbehaviour: String, Sendable, CaseIterable, CustomStringConvertible {
        /// 200 and a body without a length that never ends.
        case endlessBody
        /// 200, a length of ``trickleSize`` bytes, and one byte every quarter second.
        case trickle
        /// 404 with a body that never ends.
        case endlessNotFound
        /// 403 with a body that never ends.
        case endlessForbidden
        /// A listing that never ends by itself: S3 continuation tokens that come back, WebDAV
        /// folders that each name a new folder.
        case endlessListing
        /// A listing answer whose body never ends.
        case endlessListingPage

        public var description: String {
            switch self {
            case .endlessBody: "a body that never ends"
            case .trickle: "a body that trickles"
            case .endlessNotFound: "a 404 whose body never ends"
            case .endlessForbidden: "a 403 whose body never ends"
            case .endlessListing: "a listing that never ends"
            case .endlessListingPage: "a listing page that never ends"
            }
        }

        /// The length a ``trickle`` announces: 64 KiB, which takes hours at its rate.
        public static let trickleSize = 64 << 10
    }

    /// The size of the sparse file: 2 GiB.
    public static let sparseSize: UInt64 = 2 << 30

    static let replica = ReplicaID(high: 0x5eed_c0de_0000_0001, low: 0x0000_0000_0000_00a1)
    static let keyedName = String(repeating: "ab", count: 32)

    /// How one call ended.
    enum Outcome: Sendable, CustomStringConvertible {
        /// What it returned, described; nil for nothing (nil, false or `()`).
        case returned(String?)
        case threw(ConcordError)
        case hung

        var description: String {
            switch self {
            case let .returned(value): "returned \(value ?? "nothing")"
            case let .threw(error): "threw \(error)"
            case .hung: "did not return (hung)"
            }
        }

        var code: ConcordError.Code? {
            if case let .threw(error) = self { error.code } else { nil }
        }
    }

    /// Bytes counted from a callback that may run on another thread.
    private final class Tally: Sendable {
        private let count = Atomic<UInt64>(0)
        func add(_ bytes: Int) { count.add(UInt64(bytes), ordering: .relaxed) }
        var total: UInt64 { count.load(ordering: .relaxed) }
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
        let expect: Expectations
        var issues: [String] = []
        var notApplicable: [NotApplicable] = []

        init(remote: R, storage: S, hangAfter: UInt64) {
            self.remote = remote
            self.storage = storage
            self.hangAfter = hangAfter
            self.expect = storage.expectations
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
            await checkUnreadable(RemoteLayout.batch(replica, seq: 3), "a FIFO") { try await $0.plantFIFO($1) }
            await checkUnreadable(RemoteLayout.manifestPath, "a FIFO") { try await $0.plantFIFO($1) }
            await checkUnreadable(RemoteLayout.snapshot(replica, seq: 4), "a folder") { try await $0.plantFolder($1) }
            await checkUnreadable(RemoteLayout.head(replica, seq: 5), "a link to /dev/zero") { try await $0.plantLink($1, to: "/dev/zero") }
            await checkForeignNames()
            await checkSparse()
            await checkMisbehaviours()
        }

        // MARK: Links out of the root

        /// `folder` replaced by a link to the outside folder, which holds a file named like
        /// the object `old` and an old temporary file.
        mutating func checkLinkedFolder(_ folder: String, old: String, new: String) async {
            guard await plant("\(folder) as a link to a folder outside", { try await $0.plantLink($1, to: $0.outside) }, folder) else { return }
            await linkedFolder(folder, old: old, new: new)
            await unplant(folder)
        }

        mutating func linkedFolder(_ folder: String, old: String, new: String) async {
            let name = String(old.split(separator: "/").last!)
            let outsideFiles = [name: Array("an unrelated file outside the store".utf8), ".concord-tmp-0000000000000001": Array("someone's".utf8)]
            guard await prepareOutside(outsideFiles), let before = await outsideNow() else { return }
            let context = "with \(folder)/ a symbolic link to a folder outside the root"
            let remote = remote

            _ = await prompt("\(context): put(\(new))") { () async throws(ConcordError) -> String? in try await remote.put(new, [1, 2, 3]); return nil }
            let got = await call("\(context): get(\(old))") { () async throws(ConcordError) -> String? in Self.show(try await remote.get(old)) }
            if case let .returned(shown?) = got {
                issues.append("\(context): get(\(old)) returned \(shown) — it read a file outside the root; expected nil or a typed error")
            }
            if case .hung = got { issues.append("\(context): get(\(old)) hung") }
            let listed = await call("\(context): list(prefix: \"\")") { () async throws(ConcordError) -> String? in
                Self.paths(try await remote.list(prefix: ""))
            }
            switch listed {
            case let .returned(paths?):
                issues.append("\(context): list(prefix: \"\") returned [\(paths)] — it listed files outside the root; links must be skipped")
            case .returned(nil):
                break
            case let .threw(error):
                if !expect.listingMayFail { issues.append("\(context): list(prefix: \"\") threw \(error); it must skip the link and list the rest") }
            case .hung:
                issues.append("\(context): list(prefix: \"\") hung")
            }
            _ = await prompt("\(context): delete(\(old))") { () async throws(ConcordError) -> String? in try await remote.delete(old); return nil }
            let storage = storage
            _ = await prompt("\(context): the sweep") { () async throws(ConcordError) -> String? in
                do { try await storage.sweep() } catch { throw ConcordError(.remote, "sweep threw \(error)") }
                return nil
            }
            if let after = await outsideNow(), before != after {
                issues.append("\(context): put, get, list, delete and the sweep changed the folder outside the root: it held \(Self.describe(before)), now \(Self.describe(after))")
            }
        }

        /// An object that is a link to a file outside the root.
        mutating func checkLinkedObject() async {
            let path = RemoteLayout.manifestPath
            guard await plant("\(path) as a link to a file outside", { try await $0.plantLink($1, to: $0.outside + "/secret") }, path) else { return }
            await linkedObject(path)
            try? await storage.remove(path)
        }

        mutating func linkedObject(_ path: String) async {
            guard await prepareOutside(["secret": Array("outside bytes".utf8)]), let before = await outsideNow() else { return }
            let context = "with \(path) a symbolic link to a file outside the root"
            let remote = remote
            await expectUnreadable(context, "get(\(path))", naming: path) { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
            await expectUnreadable(context, "get(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String? in
                Self.show(try await remote.get(path, limit: RemoteLayout.maxObjectSize(for: .manifest)))
            }
            await expectSkipped(context, path)
            _ = await prompt("\(context): put(\(path))") { () async throws(ConcordError) -> String? in try await remote.put(path, [1]); return nil }
            _ = await prompt("\(context): delete(\(path))") { () async throws(ConcordError) -> String? in try await remote.delete(path); return nil }
            if let after = await outsideNow(), after != before {
                issues.append("\(context): a put and a delete of \(path) changed the file outside the root (\(Self.describe(before)) → \(Self.describe(after)))")
            }
        }

        // MARK: Things that are not files

        mutating func checkUnreadable(_ path: String, _ what: String, _ plantIt: (S, String) async throws -> Void) async {
            guard await plant("\(path) as \(what)", plantIt, path) else { return }
            await unreadable(path, what)
            await unplant(path)
        }

        mutating func unreadable(_ path: String, _ what: String) async {
            let context = "with \(path) \(what)"
            let remote = remote
            let limit = RemoteLayout.maxObjectSize(forPath: path)
            await expectUnreadable(context, "get(\(path))", naming: path) { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
            await expectUnreadable(context, "get(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String? in
                Self.show(try await remote.get(path, limit: limit))
            }
            await expectUnreadable(context, "getStream(\(path))", naming: path) { () async throws(ConcordError) -> String? in
                var count = 0
                let found = try await remote.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
                    count += chunk.count
                    if count > 1 << 20 { throw ConcordError(.limitExceeded, "getStream delivered more than 1 MiB") }
                }
                return found ? "an object of \(count) bytes" : nil
            }
            await expectUnreadable(context, "getStream(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String? in
                var count = 0
                let found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in count += chunk.count }
                return found ? "an object of \(count) bytes" : nil
            }
            await expectSkipped(context, path)
        }

        // MARK: Names outside the layout

        /// Objects at names that are no layout name, beside objects outside the root named
        /// like the store's: none is listed or read, and puts and deletes next to them stay
        /// inside the root.
        mutating func checkForeignNames() async {
            let replica = HostileRemoteCheck.replica
            let head = RemoteLayout.head(replica, seq: 6)
            let batch = RemoteLayout.batch(replica, seq: 1)
            let names = [
                (RemoteLayout.headsPrefix, "a layout folder's name with its slash"),
                (String(RemoteLayout.batchesPrefix(replica).dropLast()), "where the layout has a folder"),
                ("heads/../" + head, "a \"..\" segment"),
                ("/" + RemoteLayout.manifestPath, "a leading slash"),
            ]
            var planted: [String] = []
            for (name, why) in names {
                if await plant("an object at \(name) (\(why))", { try await $0.plantObject($1, Array("planted".utf8)) }, name) { planted.append(name) }
            }
            guard !planted.isEmpty else { return }
            let stored = await foreignNames(planted, head: head, batch: batch)
            for name in planted { await unplant(name) }
            // The folders the puts made, so the root is left as it was found.
            for folder in Set(stored.compactMap { $0.split(separator: "/").first.map(String.init) }) { await unplant(folder) }
        }

        /// The paths it put (and deleted again).
        mutating func foreignNames(_ planted: [String], head: String, batch: String) async -> [String] {
            let outsideFiles = [
                RemoteLayout.manifestPath: Array("an outside concord.json".utf8), head: Array("an outside head".utf8),
                ".concord-tmp-0000000000000001": Array("someone's".utf8),
            ]
            guard await prepareOutside(outsideFiles), let before = await outsideNow() else { return [] }
            let context = "with objects at \(planted.joined(separator: ", ")) (no names of the layout)"
            let remote = remote
            await expectListing(context, [])
            for path in [head, RemoteLayout.manifestPath] {
                let got = await call("\(context): get(\(path))") { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
                if case let .returned(shown?) = got { issues.append("\(context): get(\(path)) returned \(shown); there is no object at \(path)") }
                if case .hung = got { issues.append("\(context): get(\(path)) hung") }
            }
            var stored: [String] = []
            for (path, bytes) in [(head, [UInt8]([6])), (batch, [1])] {
                // A put may fail, e.g. with a file where its folder belongs.
                let put = await prompt("\(context): put(\(path))") { () async throws(ConcordError) -> String? in try await remote.put(path, bytes); return nil }
                if case .returned = put { stored.append(path) }
            }
            await expectListing(context, stored.sorted())
            if stored.contains(head) {
                let got = await call("\(context): get(\(head))") { () async throws(ConcordError) -> String? in
                    try await remote.get(head).map { $0 == [6] ? "the byte put" : "\($0.count) other bytes" }
                }
                if case let .returned(shown) = got, shown != "the byte put" {
                    issues.append("\(context): get(\(head)) after put(\(head), [6]) returned \(shown ?? "nothing")")
                } else if case .threw = got {
                    issues.append("\(context): get(\(head)) after put(\(head), [6]) \(got)")
                }
            }
            for path in stored {
                let deleted = await call("\(context): delete(\(path))") { () async throws(ConcordError) -> String? in try await remote.delete(path); return nil }
                if case .returned = deleted {} else { issues.append("\(context): delete(\(path)) \(deleted)") }
            }
            let storage = storage
            _ = await prompt("\(context): the sweep") { () async throws(ConcordError) -> String? in
                do { try await storage.sweep() } catch { throw ConcordError(.remote, "sweep threw \(error)") }
                return nil
            }
            if let after = await outsideNow(), before != after {
                issues.append("\(context): list, get, put, delete and the sweep changed what lies outside the root: it held \(Self.describe(before)), now \(Self.describe(after))")
            }
            return stored
        }

        /// `list(prefix: "")` returns exactly `expected` (or, if the storage's remote may, a
        /// typed error), promptly.
        mutating func expectListing(_ context: String, _ expected: [String]) async {
            let remote = remote
            let listed = await call("\(context): list(prefix: \"\")") { () async throws(ConcordError) -> String? in
                Self.paths(try await remote.list(prefix: ""))
            }
            let wanted = expected.isEmpty ? nil : expected.joined(separator: ", ")
            switch listed {
            case let .returned(paths) where paths != wanted:
                issues.append("\(context): list(prefix: \"\") returned [\(paths ?? "")]; expected [\(wanted ?? "")]")
            case let .threw(error) where !expect.listingMayFail:
                issues.append("\(context): list(prefix: \"\") threw \(error); it must skip what is no name of the layout")
            case .hung:
                issues.append("\(context): list(prefix: \"\") hung")
            default:
                break
            }
        }

        // MARK: Sizes

        mutating func checkSparse() async {
            let path = RemoteLayout.manifestPath
            let size = expect.largeFileSize
            guard await plant("\(path) as a file of \(size) bytes", { try await $0.plantSparseFile($1, size: size) }, path) else { return }
            await sparse(path, size: size)
            await unplant(path)
        }

        mutating func sparse(_ path: String, size: UInt64) async {
            let context = "with \(path) a file of \(size) bytes"
            let remote = remote
            let limit = RemoteLayout.maxObjectSize(for: .manifest)
            let (outcome, grown) = await measured("\(context): get(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                Self.show(try await remote.get(path, limit: limit))
            }
            expectLimitExceeded(context, "get(\(path), limit: \(limit))", outcome, naming: path, limit: limit)
            if grown > 512 << 20 {
                issues.append("\(context): get(\(path), limit: \(limit)) grew the peak memory by \(grown >> 20) MiB; it must not read past the limit")
            }
            await expectBoundedStream(context, path, limit: limit)
            if let listing = try? await remote.list(prefix: path), let object = listing.first, object.size != size {
                issues.append("\(context): list reports \(object.size.map { "\($0) bytes" } ?? "no size")")
            }
        }

        /// `outcome` is ``ConcordCore/ConcordError/Code/limitExceeded`` naming `path` and `limit`.
        mutating func expectLimitExceeded(_ context: String, _ what: String, _ outcome: Outcome, naming path: String, limit: UInt64) {
            if outcome.code != .limitExceeded {
                issues.append("\(context): \(what) \(outcome); expected limitExceeded")
            } else if case let .threw(error) = outcome, !(error.message.contains(path) && error.message.contains("\(limit)")) {
                issues.append("\(context): the limitExceeded message of \(what) does not name the object and the limit: \(error.message)")
            }
        }

        /// `getStream(path, limit: limit)` throws limitExceeded, `write` having had at most `limit` bytes.
        mutating func expectBoundedStream(_ context: String, _ path: String, limit: UInt64) async {
            let remote = remote
            let delivered = Tally()
            let outcome = await call("\(context): getStream(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                let found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in delivered.add(chunk.count) }
                return found ? "an object of \(delivered.total) bytes" : nil
            }
            if outcome.code != .limitExceeded {
                issues.append("\(context): getStream(\(path), limit: \(limit)) \(outcome); expected limitExceeded")
            }
            let count = delivered.total
            if count > limit {
                issues.append("\(context): getStream(\(path), limit: \(limit)) handed \(count) bytes to write; at most the limit may reach it")
            }
        }

        // MARK: Answers no honest server gives

        mutating func checkMisbehaviours() async {
            let replica = HostileRemoteCheck.replica
            let cases: [(Misbehaviour, String)] = [
                (.endlessBody, RemoteLayout.manifestPath), (.trickle, RemoteLayout.head(replica, seq: 7)),
                (.endlessNotFound, RemoteLayout.batch(replica, seq: 8)), (.endlessForbidden, RemoteLayout.snapshot(replica, seq: 9)),
                (.endlessListing, RemoteLayout.replicasPrefix), (.endlessListingPage, RemoteLayout.headsPrefix),
            ]
            for (misbehaviour, path) in cases {
                guard await plant("\(misbehaviour) at \(path)", { try await $0.play(misbehaviour, at: $1) }, path) else { continue }
                await answered(misbehaviour, path)
                await unplant(path)
            }
        }

        mutating func answered(_ misbehaviour: Misbehaviour, _ path: String) async {
            let context = "with \(misbehaviour) for \(path)"
            let remote = remote
            let limit = RemoteLayout.maxObjectSize(forPath: path)
            switch misbehaviour {
            case .endlessBody:
                let (outcome, grown) = await measured("\(context): get(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                    Self.show(try await remote.get(path, limit: limit))
                }
                expectLimitExceeded(context, "get(\(path), limit: \(limit))", outcome, naming: path, limit: limit)
                if grown > 512 << 20 { issues.append("\(context): get(\(path), limit: \(limit)) grew the peak memory by \(grown >> 20) MiB") }
                await expectBoundedStream(context, path, limit: limit)
            case .trickle:
                let outcome = await call("\(context): get(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                    Self.show(try await remote.get(path, limit: limit))
                }
                if outcome.code != .limitExceeded { issues.append("\(context): get(\(path), limit: \(limit)) \(outcome); expected limitExceeded at its time bound") }
                let streamed = await call("\(context): getStream(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
                    var count = 0
                    let found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in count += chunk.count }
                    return found ? "an object of \(count) bytes" : nil
                }
                if streamed.code != .limitExceeded {
                    issues.append("\(context): getStream(\(path), limit: \(limit)) \(streamed); expected limitExceeded at its time bound")
                }
            case .endlessNotFound:
                let calls: [(String, @Sendable () async throws(ConcordError) -> String?)] = [
                    ("get(\(path))", { @Sendable () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }),
                    ("get(\(path), limit:)", { @Sendable () async throws(ConcordError) -> String? in Self.show(try await remote.get(path, limit: limit)) }),
                    ("getStream(\(path))", { @Sendable () async throws(ConcordError) -> String? in
                        try await remote.getStream(path) { (_: [UInt8]) throws(ConcordError) in } ? "an object" : nil
                    }),
                    ("getStream(\(path), limit:)", { @Sendable () async throws(ConcordError) -> String? in
                        try await remote.getStream(path, limit: limit) { (_: [UInt8]) throws(ConcordError) in } ? "an object" : nil
                    }),
                ]
                for (what, body) in calls {
                    let outcome = await call("\(context): \(what)", body)
                    if case .returned(nil) = outcome {} else { issues.append("\(context): \(what) \(outcome); expected nothing (not found), promptly") }
                }
            case .endlessForbidden:
                let outcome = await call("\(context): get(\(path))") { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
                if case let .threw(error) = outcome {
                    if !error.message.contains(path) { issues.append("\(context): the error of get(\(path)) does not name the object: \(error.message)") }
                } else {
                    issues.append("\(context): get(\(path)) \(outcome); expected a typed error naming it, promptly")
                }
            case .endlessListing:
                let outcome = await call("\(context): list(prefix: \"\(path)\")") { () async throws(ConcordError) -> String? in
                    Self.paths(try await remote.list(prefix: path))
                }
                switch outcome {
                case .returned(nil), .threw: break
                case .returned, .hung: issues.append("\(context): list(prefix: \"\(path)\") \(outcome); expected an empty listing or a typed error, promptly")
                }
            case .endlessListingPage:
                let (outcome, grown) = await measured("\(context): list(prefix: \"\(path)\")") { () async throws(ConcordError) -> String? in
                    Self.paths(try await remote.list(prefix: path))
                }
                if outcome.code != .limitExceeded { issues.append("\(context): list(prefix: \"\(path)\") \(outcome); expected limitExceeded at the page's bound") }
                if grown > 512 << 20 { issues.append("\(context): list(prefix: \"\(path)\") grew the peak memory by \(grown >> 20) MiB") }
            }
        }

        // MARK: Helpers

        mutating func expectUnreadable(
            _ context: String, _ what: String, naming path: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?
        ) async {
            let outcome = await call("\(context): \(what)", body)
            switch (expect.unreadable, outcome) {
            case (.unreadableObject, .threw(let error)) where error.code == .unreadableObject, (.absentOrError, .threw(let error)):
                if !error.message.contains(path) { issues.append("\(context): the \(error.code) message of \(what) does not name the object: \(error.message)") }
            case (.absentOrError, .returned(nil)):
                break
            case (.unreadableObject, _):
                issues.append("\(context): \(what) \(outcome); expected unreadableObject, promptly")
            case (.absentOrError, _):
                issues.append("\(context): \(what) \(outcome); expected nothing or a typed error, promptly")
            }
        }

        mutating func expectSkipped(_ context: String, _ path: String) async {
            let remote = remote
            let listed = await call("\(context): list(prefix: \"\")") { () async throws(ConcordError) -> String? in
                Self.paths(try await remote.list(prefix: ""))
            }
            switch listed {
            case .returned(nil):
                break
            case let .returned(paths?) where !(expect.listingMayNameNonObjects && paths == path):
                issues.append("\(context): list(prefix: \"\") returned [\(paths)]; only regular files are objects")
            case .returned:
                break
            case let .threw(error) where !expect.listingMayFail:
                issues.append("\(context): list(prefix: \"\") threw \(error); it must skip what is not a file and list the rest")
            case .threw:
                break
            case .hung:
                issues.append("\(context): list(prefix: \"\") hung")
            }
        }

        /// Runs `body` on its own task and gives up waiting after ``hangAfter`` seconds: a
        /// call blocked in the kernel (a FIFO's open) cannot be cancelled, but it need not
        /// block the check. An error of more than one line is an issue (`what` names the call).
        mutating func call(_ what: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?) async -> Outcome {
            let seconds = hangAfter
            let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
                let once = OneShot(continuation)
                Task.detached {
                    do throws(ConcordError) { once.finish(.returned(try await body())) } catch { once.finish(.threw(error)) }
                }
                Task.detached {
                    try? await Task.sleep(nanoseconds: seconds * 1_000_000_000)
                    once.finish(.hung)
                }
            }
            if case let .threw(error) = outcome, error.message.isEmpty || error.message.contains(where: \.isNewline) {
                issues.append("\(what) threw an error that is not one line: \(error.message.debugDescription)")
            }
            return outcome
        }

        /// ``call(_:_:)`` whose only wrong outcome is a hang (a put or delete next to something
        /// planted may succeed or fail).
        mutating func prompt(_ what: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?) async -> Outcome {
            let outcome = await call(what, body)
            if case .hung = outcome { issues.append("\(what) hung") }
            return outcome
        }

        /// ``call(_:_:)`` and how much the process's peak memory grew meanwhile.
        mutating func measured(_ what: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?) async -> (Outcome, UInt64) {
            let peak = Self.peakMemory()
            let outcome = await call(what, body)
            let after = Self.peakMemory()
            return (outcome, after > peak ? after - peak : 0)
        }

        /// Plants with `body`; false (and a note of why) when the storage cannot hold it.
        mutating func plant(_ what: String, _ body: (S, String) async throws -> Void, _ path: String) async -> Bool {
            do {
                try await body(storage, path)
                return true
            } catch let error as HostileStorageNotApplicable {
                notApplicable.append(NotApplicable(part: what, reason: error.reason))
                return false
            } catch {
                issues.append("could not plant \(what): \(error)")
                return false
            }
        }

        func unplant(_ path: String) async {
            try? await storage.remove(path)
        }

        /// Empties the area outside the root and fills it with `files`.
        mutating func prepareOutside(_ files: [String: [UInt8]]) async -> Bool {
            do {
                try await storage.fillOutside(files)
                return true
            } catch {
                issues.append("could not prepare the area outside the root (\(storage.outside)): \(error)")
                return false
            }
        }

        /// Everything outside the root with its bytes; nil (and an issue) if it cannot be read.
        mutating func outsideNow() async -> [String: [UInt8]]? {
            do {
                return try await storage.outsideContents()
            } catch {
                issues.append("could not read the area outside the root (\(storage.outside)): \(error)")
                return nil
            }
        }

        static func describe(_ contents: [String: [UInt8]]) -> String {
            "[" + contents.keys.sorted().map { "\($0) (\(contents[$0]!.count) bytes)" }.joined(separator: ", ") + "]"
        }

        static func show(_ bytes: [UInt8]?) -> String? {
            bytes.map { "\($0.count) bytes" }
        }

        /// The listed paths, sorted, joined; nil for none.
        static func paths(_ objects: [RemoteObject]) -> String? {
            objects.isEmpty ? nil : objects.map(\.path).sorted().joined(separator: ", ")
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
