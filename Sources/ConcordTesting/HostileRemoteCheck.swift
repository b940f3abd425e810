import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// What a ``/ConcordRemote/Remote`` must withstand from storage that anyone can write, and from whoever
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
///   where the layout has a folder, a `..` segment, a leading slash, a named store's head
///   below `stores/<id>/`, a store folder's id in upper case) beside objects named
///   like the store's outside the root: listings return none of them, get never returns
///   their bytes, puts and deletes next to them work or fail with a typed error, and nothing
///   outside the root changes;
/// - a `concord.json` of ``Expectations/largeFileSize`` bytes (a sparse 2 GiB file where
///   the storage allows): ``/ConcordRemote/Remote/get(_:limit:)`` and a bounded getStream throw
///   ``/ConcordCore/ConcordError/Code/limitExceeded`` without allocating for it (the
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
            /// With ``/ConcordRemote/ConcordCore/ConcordError/Code/unreadableObject`` naming it: the remote
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
    final class Tally: Sendable {
        private let count = Atomic<UInt64>(0)
        func add(_ bytes: Int) { count.add(UInt64(bytes), ordering: .relaxed) }
        var total: UInt64 { count.load(ordering: .relaxed) }
    }

    /// Resumes a continuation once: with the call's outcome or with the watchdog's.
    final class OneShot: Sendable {
        private let pending: Mutex<CheckedContinuation<Outcome, Never>?>
        init(_ continuation: CheckedContinuation<Outcome, Never>) { pending = Mutex(continuation) }
        func finish(_ outcome: Outcome) {
            pending.withLock { pending in
                pending?.resume(returning: outcome)
                pending = nil
            }
        }
    }

    /// Runs the checks (their groups are in `HostileRemoteCheck+Planted.swift`,
    /// `+Misbehaviours.swift` and `+Helpers.swift`).
    struct Checker<R: Remote, S: HostileStorage> {
        // The check's own types, by the names the groups in other files use.
        typealias Outcome = HostileRemoteCheck.Outcome
        typealias OneShot = HostileRemoteCheck.OneShot
        typealias Tally = HostileRemoteCheck.Tally
        typealias Misbehaviour = HostileRemoteCheck.Misbehaviour
        typealias NotApplicable = HostileRemoteCheck.NotApplicable
        typealias Expectations = HostileRemoteCheck.Expectations

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
    }
}
