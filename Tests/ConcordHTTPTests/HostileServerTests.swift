import ConcordCore
import ConcordHTTP
import ConcordRemote
import ConcordS3
import ConcordTesting
import ConcordWebDAV
import Foundation
import Synchronization
import Testing

/// Whoever answers a remote's requests must not make a replica hang, exhaust memory or
/// read for ever: against a hostile server on loopback, every listing and read ends with
/// one typed error at its bound. One test at a time: several endless answers at once,
/// beside the rest of the suite's HTTP traffic, starved the shared event loops past the
/// client's 60-second read timeout on this 2-core machine.
@Suite(.serialized) struct HostileServerTests {
    static let credentials = SigV4.Credentials(accessKey: "hostile", secretKey: "hostile-secret")
    static let blob = "blobs/ab/" + String(repeating: "ab", count: 32)
    /// Bounds a test can reach quickly: one second of grace, 1,000 bytes/s at least.
    static let tight = HTTPBounds(grace: .seconds(1), minimumRate: 1_000)

    static func s3(_ server: HostileHTTPServer, bounds: HTTPBounds = .init()) throws -> S3Remote {
        try S3Remote(bucket: "bucket", endpoint: server.origin, credentials: credentials, retry: .init(attempts: 1), bounds: bounds)
    }

    static func webDAV(_ server: HostileHTTPServer, bounds: HTTPBounds = .init()) throws -> WebDAVRemote {
        try WebDAVRemote(url: server.origin + "/dav/", retry: .init(attempts: 1), bounds: bounds)
    }

    static func listing(token next: String?, truncated: Bool) -> [UInt8] {
        Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <ListBucketResult><Name>bucket</Name><IsTruncated>\(truncated)</IsTruncated>\(next.map { "<NextContinuationToken>\($0)</NextContinuationToken>" } ?? "")</ListBucketResult>
            """.utf8)
    }

    /// Runs `body` and returns the error it threw (nil if it returned).
    static func failure(_ body: () async throws(ConcordError) -> Void) async -> ConcordError? {
        do throws(ConcordError) {
            try await body()
            return nil
        } catch {
            return error
        }
    }

    // MARK: Listings

    @Test func anS3ListingWhoseTokensCycleStopsAtTheFirstRepeatedToken() async throws {
        let server = try HostileHTTPServer { request in
            switch request.query["continuation-token"] {
            case nil: .answer(status: 200, body: Self.listing(token: "a", truncated: true))
            case "a": .answer(status: 200, body: Self.listing(token: "b", truncated: true))
            default: .answer(status: 200, body: Self.listing(token: "a", truncated: true))
            }
        }
        defer { server.stop() }
        // A grace far past the first minutes of `make test`, when every test starts at once
        // on two cores: what is checked is the cycle, not how soon a page answers.
        let remote = try Self.s3(server, bounds: HTTPBounds(grace: .seconds(900)))
        let error = await Self.failure { () async throws(ConcordError) in _ = try await remote.list(prefix: "heads/") }
        #expect(error?.code == .remote, "\(String(describing: error))")
        #expect(error?.message.contains("continuation token a a second time") == true, "\(String(describing: error))")
        #expect(server.requests == 3, "pages a, b, then a again: no fourth request")
    }

    /// Bounded at `maxListingPages` (10,000 by default; 50 here, so that the test asks 50
    /// pages, not 10,000).
    @Test func anS3ListingOfEverNewTokensStopsAtMaxListingPages() async throws {
        #expect(HTTPBounds().maxListingPages == RemoteLayout.maxListingPages)
        #expect(RemoteLayout.maxListingPages == 10_000)
        let server = try HostileHTTPServer { request in
            let next = (Int(request.query["continuation-token"] ?? "0") ?? 0) + 1
            return .answer(status: 200, body: Self.listing(token: String(next), truncated: true))
        }
        defer { server.stop() }
        let remote = try Self.s3(server, bounds: HTTPBounds(maxListingPages: 50))
        let error = await Self.failure { () async throws(ConcordError) in _ = try await remote.list(prefix: "") }
        #expect(error?.code == .remote)
        #expect(error?.message.contains("more than 50 pages") == true, "\(String(describing: error))")
        #expect(server.requests == 50)
    }

    @Test func aMultipartListingThatStaysTruncatedStopsTheSweepAtTheRepeatedMarker() async throws {
        let server = try HostileHTTPServer { _ in
            .answer(status: 200, body: Array("""
                <?xml version="1.0" encoding="UTF-8"?>
                <ListMultipartUploadsResult><Bucket>bucket</Bucket><IsTruncated>true</IsTruncated><NextKeyMarker>k</NextKeyMarker><NextUploadIdMarker>u</NextUploadIdMarker></ListMultipartUploadsResult>
                """.utf8))
        }
        defer { server.stop() }
        let remote = try Self.s3(server)
        let error = await Self.failure { () async throws(ConcordError) in _ = try await remote.sweepLeftovers(olderThan: 0, now: 1) }
        #expect(error?.code == .remote)
        #expect(error?.message.contains("a second time") == true, "\(String(describing: error))")
        #expect(server.requests == 2)
    }

    /// Every folder's listing names a new sibling `replicas/<id>/`: only folders that their
    /// own parent's listing named are entered, so the walk ends.
    @Test func aWebDAVServerNamingEverNewFoldersIsWalkedOnlyIntoFoldersTheParentListingNamed() async throws {
        let counter = Counter()
        let server = try HostileHTTPServer { request in
            guard request.method == "PROPFIND" else { return .answer(status: 404) }
            let fresh = "5eed" + String(format: "%028x", counter.next())
            var entries = [request.path, "/dav/replicas/\(fresh)/"]
            if request.path.hasPrefix("/dav/replicas/"), request.path.count > "/dav/replicas/".count { entries.append(request.path + "deltas/") }
            let body = "<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\">" + entries.map {
                "<D:response><D:href>\($0)</D:href><D:propstat><D:prop><D:resourcetype><D:collection/></D:resourcetype></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat></D:response>"
            }.joined() + "</D:multistatus>"
            return .answer(status: 207, body: Array(body.utf8))
        }
        defer { server.stop() }
        let remote = try Self.webDAV(server)
        let listed = try await remote.list(prefix: "replicas/")
        #expect(listed.isEmpty)
        // replicas/, the one folder it named, and that folder's deltas/.
        #expect(server.requests == 3)
    }

    @Test func aPROPFINDAnswerOverMaxListingPageSizeIsRefusedUnread() async throws {
        // Well-formed as far as it goes (an endless comment), so only the size stops it.
        let server = try HostileHTTPServer { _ in
            .endless(status: 207, prefix: Array("<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\"><!--".utf8))
        }
        defer { server.stop() }
        let remote = try Self.webDAV(server)
        let error = await Self.failure { () async throws(ConcordError) in _ = try await remote.list(prefix: "heads/") }
        #expect(error?.code == .limitExceeded, "\(String(describing: error))")
        #expect(error?.message.contains("\(RemoteLayout.maxListingPageSize) bytes") == true, "\(String(describing: error))")
        // What the kernel's buffers hold past the limit, and no more.
        #expect(server.bytesSent < RemoteLayout.maxListingPageSize + (32 << 20), "\(server.bytesSent) bytes sent")
    }

    /// A listing page is parsed as it arrives: one that stops being XML is refused there,
    /// not read on to the page's limit (``RemoteLayout/maxListingPageSize``, 32 MiB) first.
    @Test func aListingPageThatStopsBeingXMLIsRefusedWhereItStopsNotAtThePageLimit() async throws {
        let webDAV = try HostileHTTPServer { _ in
            .endless(status: 207, prefix: Array("<?xml version=\"1.0\"?><D:multistatus xmlns:D=\"DAV:\"><".utf8))
        }
        defer { webDAV.stop() }
        let s3 = try HostileHTTPServer { _ in .endless(status: 200, prefix: Array("<ListBucketResult><".utf8)) }
        defer { s3.stop() }
        for (server, remote) in [(webDAV, try Self.webDAV(webDAV) as any Remote), (s3, try Self.s3(s3))] {
            let error = await Self.failure { () async throws(ConcordError) in _ = try await remote.list(prefix: "heads/") }
            #expect(error?.code == .remote, "\(String(describing: error))")
            #expect(error?.message.contains("does not parse") == true, "\(String(describing: error))")
            // The first chunk fails to parse; what the kernel's buffers held beyond it is all
            // that was sent (reading to the page limit first sent 32 MiB and more).
            #expect(server.bytesSent < RemoteLayout.maxListingPageSize / 2, "\(server.bytesSent) bytes sent")
        }
    }

    // MARK: Reads

    @Test func aTrickledDownloadStopsAtTheDeadlineOfItsSizeAtTheMinimumRate() async throws {
        let server = try HostileHTTPServer { _ in .trickle(status: 200, body: [UInt8](repeating: 7, count: 2_000), interval: .milliseconds(250)) }
        defer { server.stop() }
        for remote in [try Self.s3(server, bounds: Self.tight) as any Remote, try Self.webDAV(server, bounds: Self.tight)] {
            var written = 0
            let error = await Self.failure { () async throws(ConcordError) in
                _ = try await remote.getStream(Self.blob, limit: 2_000) { chunk in written += chunk.count }
            }
            #expect(error?.code == .limitExceeded, "\(String(describing: error))")
            #expect(error?.message.contains("least rate of 1000 bytes/s") == true, "\(String(describing: error))")
            #expect(written < 2_000)
        }
    }

    /// A server that sends the head and a byte, then nothing, is cut off at the deadline of
    /// the read's size (here 1 s of grace and 1,000 bytes/s for 100 bytes), with the typed
    /// error — not left to the client's 60 s idle timeout, retried as a failing network.
    @Test func anAnswerThatStallsAfterItsHeadStopsAtTheDeadlineOfItsSize() async throws {
        let server = try HostileHTTPServer { _ in .trickle(status: 200, body: [UInt8](repeating: 7, count: 100), interval: .seconds(3600)) }
        defer { server.stop() }
        for remote in [try Self.s3(server, bounds: Self.tight) as any Remote, try Self.webDAV(server, bounds: Self.tight)] {
            let started = ContinuousClock.now
            let read = await Self.failure { () async throws(ConcordError) in _ = try await remote.get(Self.blob, limit: 100) }
            let streamed = await Self.failure { () async throws(ConcordError) in
                _ = try await remote.getStream(Self.blob, limit: 100) { _ in }
            }
            for error in [read, streamed] {
                #expect(error?.code == .limitExceeded, "\(String(describing: error))")
                // "the answer stalled" when the timer finds it; on a loaded machine the byte
                // may itself arrive past the deadline, which stops the read the same way.
                #expect(error?.message.contains("allowed to read 100 bytes") == true, "\(String(describing: error))")
            }
            // Two reads of at most 1.1 s each, however the machine is loaded: far below the 60 s idle timeout.
            #expect(ContinuousClock.now - started < .seconds(30))
        }
    }

    @Test func anEndlessDownloadStopsAtItsExpectedSize() async throws {
        let server = try HostileHTTPServer { _ in .endless(status: 200) }
        defer { server.stop() }
        let limit: UInt64 = 1 << 20
        for remote in [try Self.s3(server) as any Remote, try Self.webDAV(server)] {
            var written: UInt64 = 0
            let error = await Self.failure { () async throws(ConcordError) in
                _ = try await remote.getStream(Self.blob, limit: limit) { chunk in written += UInt64(chunk.count) }
            }
            #expect(error?.code == .limitExceeded, "\(String(describing: error))")
            #expect(written <= limit, "no byte past the expected size reaches the file")
        }
        #expect(server.bytesSent < 64 << 20, "\(server.bytesSent) bytes sent: the reads stopped")
    }

    @Test func anEndlessErrorBodyIsReadToErrorBodyLimitOnly() async throws {
        let server = try HostileHTTPServer { _ in .endless(status: 404) }
        defer { server.stop() }
        for remote in [try Self.s3(server) as any Remote, try Self.webDAV(server)] {
            #expect(try await remote.get(Self.blob) == nil)
            #expect(try await remote.getStream(Self.blob) { _ in } == false)
        }
        #expect(server.requests == 4)
        #expect(server.bytesSent < UInt64(HTTPBounds.errorBodyLimit) * 4 + (32 << 20), "\(server.bytesSent) bytes sent")
    }

    @Test func anEndlessForbiddenBodyEndsWithTheTypedError() async throws {
        let server = try HostileHTTPServer { _ in .endless(status: 403) }
        defer { server.stop() }
        let remote = try Self.webDAV(server)
        let error = await Self.failure { () async throws(ConcordError) in _ = try await remote.get(RemoteLayout.manifestPath) }
        #expect(error?.code == .remoteAuth, "\(String(describing: error))")
        #expect(server.bytesSent < 32 << 20)
    }

    @Test func anEndlessErrorBodyToAStreamedUploadIsReadToErrorBodyLimitOnly() async throws {
        let server = try HostileHTTPServer { request in request.method == "PUT" ? .endless(status: 403) : .answer(status: 201) }
        defer { server.stop() }
        let remote = try Self.webDAV(server)
        var sent = false
        let error = await Self.failure { () async throws(ConcordError) in
            try await remote.putStream(Self.blob) { () -> [UInt8] in
                defer { sent = true }
                return sent ? [] : [1, 2, 3]
            }
        }
        #expect(error?.code == .remoteAuth, "\(String(describing: error))")
        #expect(server.bytesSent < 32 << 20, "\(server.bytesSent) bytes sent")
    }

    /// A server that stops taking an upload's body (or never answers it) cannot hold the
    /// upload for ever: it is cancelled once it has taken longer than the bytes handed over
    /// so far plus 1 MiB allow at the least rate (here 1 s of grace and 16 MiB/s).
    @Test func aStreamedUploadToAServerThatStopsTakingItIsCancelledAtItsDeadline() async throws {
        let server = try HostileHTTPServer { request in request.method == "PUT" ? .stall : .answer(status: 201) }
        defer { server.stop() }
        let remote = try Self.webDAV(server, bounds: HTTPBounds(grace: .seconds(1), minimumRate: 16 << 20))
        let handed = Counter()
        let chunk = [UInt8](repeating: 9, count: 64 << 10)
        let ended = await withTaskGroup(of: ConcordError??.self) { group in
            group.addTask {
                await Self.failure { () async throws(ConcordError) in
                    try await remote.putStream(Self.blob) { () -> [UInt8] in
                        // 1 GiB at most: far more than the loopback's buffers take.
                        handed.add(chunk.count, upTo: 1 << 30) ? chunk : []
                    }
                }
            }
            group.addTask {
                try? await Task.sleep(for: .seconds(60))
                return .none  // the watchdog: the upload did not end
            }
            let first = await group.next()!
            group.cancelAll()
            return first
        }
        guard let ended else {
            Issue.record("the upload to a stalled server was still running after 60 s")
            return
        }
        #expect(ended?.code == .limitExceeded, "\(String(describing: ended))")
        #expect(ended?.message.contains("the upload was cancelled") == true, "\(String(describing: ended))")
        #expect(handed.total < 1 << 30, "the body stopped being read when the server stopped taking it")
    }

    /// A redirect names where it points (the URL to fix), and an error answer that echoes
    /// the request's credentials never carries them into the message.
    @Test func aRedirectShowsItsLocationAndEchoedCredentialsAreRedacted() async throws {
        let server = try HostileHTTPServer { request in
            if request.path.hasSuffix("concord.json") {
                return .answer(status: 301, headers: [("Location", "https://elsewhere.example/dav/concord.json")])
            }
            return .answer(status: 400, body: Array("""
                <html><body>Bad request: Authorization: Basic dXNlcjpzM2NyZXQ= was sent to
                https://user:s3cret@host/dav?X-Amz-Signature=abcdef0123&X-Amz-Security-Token=tok3n by the client</body></html>
                """.utf8))
        }
        defer { server.stop() }
        let remote = try Self.webDAV(server)
        let moved = await Self.failure { () async throws(ConcordError) in _ = try await remote.get("concord.json") }
        #expect(moved?.message.contains("https://elsewhere.example/dav/concord.json") == true, "\(String(describing: moved))")
        let echoed = await Self.failure { () async throws(ConcordError) in _ = try await remote.get(RemoteLayout.head(ReplicaID(hex: String(repeating: "ab", count: 16))!, seq: 1)) }
        let message = try #require(echoed?.message)
        for secret in ["dXNlcjpzM2NyZXQ=", "s3cret", "abcdef0123", "tok3n"] {
            #expect(!message.contains(secret), "\(secret) in: \(message)")
        }
        #expect(message.contains("[redacted]"), "\(message)")
    }
}

/// A thread-safe counter for handlers.
final class Counter: Sendable {
    private let value = Mutex(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
    var total: Int { value.withLock { $0 } }
    /// Adds `count` unless the total has reached `limit`; whether it added.
    func add(_ count: Int, upTo limit: Int) -> Bool {
        value.withLock { total in
            guard total < limit else { return false }
            total += count
            return true
        }
    }
}
