import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// ``HostileStorage`` that is a server of our own (a ``HostileHTTPServer``): it speaks just
/// enough WebDAV or S3 to serve an empty store, and answers as a
/// ``HostileRemoteCheck/Misbehaviour`` says wherever one is played. It holds no files, so of
/// the check's plants only the large `concord.json` applies (announced with its length, so
/// a client can refuse it unread); the rest are the misbehaviours, which no real server
/// plays on demand.
///
/// Point a WebDAV remote at ``webDAVURL``; an S3 remote at ``origin`` with bucket ``bucket``
/// and prefix ``prefix`` (path-style; any credentials, signatures are not checked).
public final class HostileServerStorage: HostileStorage {
    /// Which protocol the server speaks.
    public enum Dialect: Sendable { case webDAV, s3 }

    public let dialect: Dialect
    public let server: HostileHTTPServer
    /// A server's answers: what is not a file reads as not found or an error; the large
    /// `concord.json` is the manifest's limit and 1 MiB more.
    public let expectations = HostileRemoteCheck.Expectations.server(largeFileSize: RemoteLayout.maxManifestSize + (1 << 20))
    /// None: nothing lies outside a store the server only pretends to hold.
    public let outside = ""
    private let plays: Plays

    /// The S3 bucket and prefix the server serves.
    public static let bucket = "bucket"
    public static let prefix = "store/"

    /// `http://127.0.0.1:PORT`.
    public var origin: String { server.origin }
    /// The root collection's URL, for a WebDAV remote.
    public var webDAVURL: String { server.origin + "/dav/" }

    /// Starts the server on a free loopback port; it stops when the storage is released.
    public init(_ dialect: Dialect) throws {
        self.dialect = dialect
        let plays = Plays()
        self.plays = plays
        server = try HostileHTTPServer { request in
            switch dialect {
            case .webDAV: Self.webDAV(request, plays)
            case .s3: Self.s3(request, plays)
            }
        }
    }

    deinit { server.stop() }

    static let notFile = "a server of our own holds no files"

    public func fillOutside(_ files: [String: [UInt8]]) throws { throw HostileStorageNotApplicable(Self.notFile) }
    public func outsideContents() -> [String: [UInt8]] { [:] }
    public func plantLink(_ path: String, to target: String) throws { throw HostileStorageNotApplicable(Self.notFile) }
    public func plantFIFO(_ path: String) throws { throw HostileStorageNotApplicable(Self.notFile) }
    public func plantFolder(_ path: String) throws { throw HostileStorageNotApplicable(Self.notFile) }
    public func plantObject(_ name: String, _ bytes: [UInt8]) throws { throw HostileStorageNotApplicable(Self.notFile) }

    /// Answers a GET of `path` with `size` bytes and their length (at most 64 MiB: the
    /// answer is built in memory).
    public func plantSparseFile(_ path: String, size: UInt64) throws {
        guard size <= 64 << 20 else { throw HostileStorageNotApplicable("a server of our own sends at most 64 MiB with a length") }
        plays.table.withLock { $0[path] = .size(Int(size)) }
    }

    public func play(_ misbehaviour: HostileRemoteCheck.Misbehaviour, at path: String) {
        plays.table.withLock { $0[path] = .misbehaviour(misbehaviour) }
    }

    public func remove(_ path: String) {
        _ = plays.table.withLock { $0.removeValue(forKey: path) }
    }

    public func sweep() {}

    // MARK: Answers

    /// What is played where, shared with the server's handler.
    final class Plays: Sendable {
        enum Play { case misbehaviour(HostileRemoteCheck.Misbehaviour), size(Int) }
        let table = Mutex<[String: Play]>([:])
        let folders = Atomic<Int>(0)

        func object(_ path: String) -> Play? { table.withLock { $0[path] } }

        /// The listing misbehaviour played at a prefix of `path`.
        func listing(_ path: String) -> HostileRemoteCheck.Misbehaviour? {
            table.withLock { table in
                for (prefix, play) in table where path.hasPrefix(prefix) {
                    if case let .misbehaviour(misbehaviour) = play, misbehaviour == .endlessListing || misbehaviour == .endlessListingPage { return misbehaviour }
                }
                return nil
            }
        }
    }

    /// The reply to a GET of an object with something played at it.
    static func reply(_ play: Plays.Play) -> HostileHTTPServer.Reply {
        switch play {
        case let .size(size): .answer(status: 200, body: [UInt8](repeating: 0, count: size))
        case .misbehaviour(.endlessBody): .endless(status: 200)
        case .misbehaviour(.trickle):
            .trickle(status: 200, body: [UInt8](repeating: UInt8(ascii: "x"), count: HostileRemoteCheck.Misbehaviour.trickleSize), interval: .milliseconds(250))
        case .misbehaviour(.endlessNotFound): .endless(status: 404)
        case .misbehaviour(.endlessForbidden): .endless(status: 403)
        case .misbehaviour(.endlessListing), .misbehaviour(.endlessListingPage): .answer(status: 404)
        }
    }

    static func webDAV(_ request: HostileHTTPServer.Request, _ plays: Plays) -> HostileHTTPServer.Reply {
        let root = "/dav/"
        let decoded = request.path.removingPercentEncoding ?? request.path
        guard decoded.hasPrefix(root) else { return .answer(status: 404) }
        let path = String(decoded.dropFirst(root.count))
        switch request.method {
        case "PROPFIND":
            switch plays.listing(path) {
            case .endlessListing:
                // Every folder names a new replica's folder beside it, and a replica's its deltas/.
                let fresh = "5eed" + String(format: "%028x", plays.folders.add(1, ordering: .relaxed).newValue)
                var folders = [path, RemoteLayout.replicasPrefix + fresh + "/"]
                if path.hasPrefix(RemoteLayout.replicasPrefix), path.count > RemoteLayout.replicasPrefix.count { folders.append(path + "deltas/") }
                return .answer(status: 207, body: multistatus(folders.map { root + $0 }))
            case .endlessListingPage:
                // Well-formed as far as it goes (an endless comment): only the page's size stops it.
                return .endless(status: 207, prefix: Array("<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\"><!--".utf8))
            default:
                return path.isEmpty ? .answer(status: 207, body: multistatus([root])) : .answer(status: 404)
            }
        case "GET":
            return plays.object(path).map(reply) ?? .answer(status: 404)
        case "PUT", "MKCOL": return .answer(status: 201)
        case "DELETE": return .answer(status: 204)
        default: return .answer(status: 405)
        }
    }

    static func multistatus(_ folders: [String]) -> [UInt8] {
        Array(("<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\">" + folders.map {
            "<D:response><D:href>\($0)</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop>"
                + "<D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
        }.joined() + "</D:multistatus>").utf8)
    }

    static func s3(_ request: HostileHTTPServer.Request, _ plays: Plays) -> HostileHTTPServer.Reply {
        let bucket = "/" + Self.bucket
        let decoded = request.path.removingPercentEncoding ?? request.path
        if decoded == bucket || decoded == bucket + "/" {
            if request.query["uploads"] != nil {
                return .answer(status: 200, body: Array("<ListMultipartUploadsResult><IsTruncated>false</IsTruncated></ListMultipartUploadsResult>".utf8))
            }
            let listed = String((request.query["prefix"] ?? "").dropFirst(prefix.count))
            switch plays.listing(listed) {
            case .endlessListing:
                // Continuation tokens that come back: a, b, a, …
                let next = request.query["continuation-token"] == "a" ? "b" : "a"
                return .answer(status: 200, body: listing(next: next))
            case .endlessListingPage:
                // Well-formed as far as it goes (an endless comment): only the page's size stops it.
                return .endless(status: 200, prefix: Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><!--".utf8))
            default:
                return .answer(status: 200, body: listing(next: nil))
            }
        }
        guard decoded.hasPrefix(bucket + "/" + prefix) else { return .answer(status: 404, body: error("NoSuchKey")) }
        let path = String(decoded.dropFirst(bucket.count + 1 + prefix.count))
        switch request.method {
        case "GET": return plays.object(path).map(reply) ?? .answer(status: 404, body: error("NoSuchKey"))
        case "PUT": return .answer(status: 200)
        case "DELETE": return .answer(status: 204)
        default: return .answer(status: 405, body: error("MethodNotAllowed"))
        }
    }

    static func listing(next: String?) -> [UInt8] {
        Array(("<?xml version=\"1.0\" encoding=\"UTF-8\"?><ListBucketResult><Name>\(bucket)</Name><IsTruncated>\(next != nil)</IsTruncated>"
            + (next.map { "<NextContinuationToken>\($0)</NextContinuationToken>" } ?? "") + "</ListBucketResult>").utf8)
    }

    static func error(_ code: String) -> [UInt8] {
        Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>\(code)</Code></Error>".utf8)
    }
}
