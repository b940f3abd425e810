import AsyncHTTPClient
import ConcordCore
import ConcordRemote
import Foundation
import NIOCore
import NIOHTTP1

/// A buffered HTTP response.
public struct HTTPResponse: Sendable {
    public let status: Int
    public let headers: HTTPHeaders
    public let body: [UInt8]

    public init(status: Int, headers: HTTPHeaders, body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The body as text (error messages, XML).
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// A request before it is sent: built again for every attempt, so a signature can carry
/// the attempt's own date.
public struct HTTPRequestSpec: Sendable {
    public var method: HTTPMethod
    public var url: String
    public var headers: HTTPHeaders

    public init(method: HTTPMethod, url: String, headers: HTTPHeaders = [:]) {
        self.method = method
        self.url = url
        self.headers = headers
    }

    /// The client's request, without a body.
    var request: HTTPClientRequest {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers = headers
        return request
    }
}

/// What the HTTP backends share: one pooled client (connection pooling, TLS), timeouts,
/// retries with exponential backoff and full jitter on connection errors, 408, 429 and 5xx
/// (honouring `Retry-After`, never on a 4xx that will not change), and every failure as a
/// one-line ``/ConcordCore/ConcordError`` naming the remote and what to do.
public struct HTTPTransport: Sendable {
    /// The remote as a person names it in messages: "WebDAV remote https://host/dav".
    public let remoteName: String
    /// How often and how long to retry.
    public let retry: HTTPRetryPolicy
    /// How long a read may take, and how much of an error answer is read.
    public let bounds: HTTPBounds
    /// The client: ``HTTPTransport/sharedClient`` unless a test gives its own.
    public let client: HTTPClient

    /// One client for every remote of the process: its connection pool and TLS contexts are
    /// shared. Connecting may take 10 s and a read may stall 60 s before a request fails
    /// (and is retried); it is never shut down.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout = .init(connect: .seconds(10), read: .seconds(60))
        configuration.connectionPool = .init(idleTimeout: .seconds(30), concurrentHTTP1ConnectionsPerHostSoftLimit: 16)
        configuration.decompression = .disabled
        configuration.redirectConfiguration = .disallow
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    public init(remoteName: String, retry: HTTPRetryPolicy = .init(), bounds: HTTPBounds = .init(), client: HTTPClient? = nil) {
        self.remoteName = remoteName
        self.retry = retry
        self.bounds = bounds
        self.client = client ?? Self.sharedClient
    }

    /// Sends a request with a buffered body (or none) and reads the whole response, at most
    /// `limit` bytes of body (more throws ``/ConcordRemote/ConcordCore/ConcordError/objectTooLarge(_:size:atLeast:limit:)``
    /// for `object`) in the time ``HTTPBounds`` gives `limit` bytes; an error answer's body
    /// is read to ``HTTPBounds/errorBodyLimit``. Retried as ``HTTPRetryPolicy`` says;
    /// `prepare` builds each attempt. Statuses are returned, not thrown: the caller decides
    /// what a 404 means.
    public func send(
        _ object: String, body: [UInt8]? = nil, limit: UInt64 = 64 << 20,
        prepare: @Sendable (_ attempt: Int) throws(ConcordError) -> HTTPRequestSpec
    ) async throws(ConcordError) -> HTTPResponse {
        try await send(object, buffer: body.map { ByteBuffer(bytes: $0) }, limit: limit, prepare: prepare)
    }

    /// ``send(_:body:limit:prepare:)`` with the body already in a buffer, which every
    /// attempt shares: a large body (an 8 MiB upload part) is in memory once.
    public func send(
        _ object: String, buffer: ByteBuffer?, limit: UInt64 = 64 << 20,
        prepare: @Sendable (_ attempt: Int) throws(ConcordError) -> HTTPRequestSpec
    ) async throws(ConcordError) -> HTTPResponse {
        let (response, collected) = try await send(object, buffer: buffer, limit: limit, reader: { CollectingReader() }, prepare: prepare)
        guard let collected else { return response }
        return HTTPResponse(status: response.status, headers: response.headers, body: collected.bytes)
    }

    /// ``send(_:body:limit:prepare:)`` whose successful (2xx) answer is read by a reader as
    /// it arrives, never held whole: an XML listing is parsed chunk by chunk. Every attempt
    /// gets a fresh reader from `makeReader`; the one of the answer returned comes back with
    /// it (nil for a status outside 2xx, whose body is buffered to
    /// ``HTTPBounds/errorBodyLimit`` as usual). The answer's `body` is then empty. A reader
    /// that stops early (``HTTPBodyReader/take(_:)`` returns false) ends the read there; the
    /// reader says why.
    public func send<Reader: HTTPBodyReader>(
        _ object: String, body: [UInt8]? = nil, limit: UInt64 = 64 << 20, reader makeReader: () -> Reader,
        prepare: @Sendable (_ attempt: Int) throws(ConcordError) -> HTTPRequestSpec
    ) async throws(ConcordError) -> (response: HTTPResponse, reader: Reader?) {
        try await send(object, buffer: body.map { ByteBuffer(bytes: $0) }, limit: limit, reader: makeReader, prepare: prepare)
    }

    func send<Reader: HTTPBodyReader>(
        _ object: String, buffer: ByteBuffer?, limit: UInt64, reader makeReader: () -> Reader,
        prepare: @Sendable (_ attempt: Int) throws(ConcordError) -> HTTPRequestSpec
    ) async throws(ConcordError) -> (response: HTTPResponse, reader: Reader?) {
        var attempt = 0
        while true {
            var request = try prepare(attempt).request
            if let buffer {
                request.body = .bytes(buffer)
                request.headers.replaceOrAdd(name: "Content-Length", value: String(buffer.readableBytes))
            }
            let outcome: Result<(HTTPResponse, Reader?), ConcordError>
            do {
                var clock = TransferClock(bounds: bounds, expected: limit, sending: UInt64(buffer?.readableBytes ?? 0))
                let response = try await client.execute(request, deadline: clock.clientDeadline)
                let status = Int(response.status.code)
                // The limit is the object's; an error page is only read far enough to quote it.
                if (200...299).contains(status) {
                    var reader = makeReader()
                    try await read(response, into: &reader, object: object, limit: limit, clock: &clock)
                    outcome = .success((HTTPResponse(status: status, headers: response.headers, body: []), reader))
                } else {
                    let bytes = try await collectPrefix(response, object: object, clock: &clock)
                    outcome = .success((HTTPResponse(status: status, headers: response.headers, body: bytes), nil))
                }
            } catch let error as ConcordError {
                outcome = .failure(error)
            } catch {
                outcome = .failure(transportError(error, object: object))
            }
            switch outcome {
            case let .success((response, _)) where retry.isRetryable(status: response.status) && attempt + 1 < retry.attempts:
                try await retry.wait(attempt: attempt, retryAfter: response.headers.first(name: "Retry-After"))
            case let .success(answer):
                return answer
            case let .failure(error) where error.code == .remote && attempt + 1 < retry.attempts:
                try await retry.wait(attempt: attempt, retryAfter: nil)
            case let .failure(error):
                throw error
            }
            attempt += 1
        }
    }

    /// Sends a request and hands its body to `write` as it arrives, in chunks of at most
    /// 1 MiB. `accept` tells from the status whether to stream the body (true), stop with no
    /// body (false, e.g. a 404), or — by throwing — fail. Attempts are retried until the
    /// first byte reaches `write`; after that a failure is thrown (the next sync starts
    /// again). A body over `limit` bytes (what the reader expects) throws
    /// ``/ConcordRemote/ConcordCore/ConcordError/objectTooLarge(_:size:atLeast:limit:)`` before `write` gets a byte past
    /// the limit, and one slower than ``HTTPBounds`` allows for `limit` bytes throws
    /// ``/ConcordCore/ConcordError/Code/limitExceeded`` too.
    public func stream(
        _ object: String, limit: UInt64 = .max,
        prepare: @Sendable (_ attempt: Int) throws(ConcordError) -> HTTPRequestSpec,
        accept: (HTTPResponse) throws(ConcordError) -> Bool,
        write: ([UInt8]) throws(ConcordError) -> Void
    ) async throws(ConcordError) -> Bool {
        var attempt = 0
        while true {
            let request = try prepare(attempt).request
            let response: HTTPClientResponse
            var clock = TransferClock(bounds: bounds, expected: limit)
            do {
                response = try await client.execute(request, deadline: clock.clientDeadline)
            } catch {
                let failure = transportError(error, object: object)
                guard attempt + 1 < retry.attempts else { throw failure }
                try await retry.wait(attempt: attempt, retryAfter: nil)
                attempt += 1
                continue
            }
            let status = Int(response.status.code)
            if status >= 300 || retry.isRetryable(status: status) {
                // An error status: its (short) body explains it.
                let body = (try? await collectPrefix(response, object: object, clock: &clock)) ?? []
                let buffered = HTTPResponse(status: status, headers: response.headers, body: body)
                if retry.isRetryable(status: status) && attempt + 1 < retry.attempts {
                    try await retry.wait(attempt: attempt, retryAfter: response.headers.first(name: "Retry-After"))
                    attempt += 1
                    continue
                }
                guard try accept(buffered) else { return false }
                throw unexpected(buffered, object: object, doing: "read")
            }
            guard try accept(HTTPResponse(status: status, headers: response.headers, body: [])) else { return false }
            let announced = Self.contentLength(response)
            if let announced, announced > limit { throw ConcordError.objectTooLarge(object, size: announced, limit: limit) }
            clock.announce(announced)
            do {
                var received: UInt64 = 0
                try await forEachBuffer(of: response, object: object, clock: clock) { buffer in
                    var buffer = buffer
                    received += UInt64(buffer.readableBytes)
                    guard received <= limit else { throw ConcordError.objectTooLarge(object, size: received, atLeast: true, limit: limit) }
                    try clock.check(received: received, object: object, remoteName: remoteName)
                    while buffer.readableBytes > 0 {
                        let chunk = buffer.readBytes(length: min(buffer.readableBytes, 1 << 20)) ?? []
                        try write(chunk)
                    }
                    return true
                }
            } catch let error as ConcordError {
                throw error
            } catch {
                throw transportError(error, object: object)
            }
            return true
        }
    }

    /// The `Content-Length` a response announces, if any.
    static func contentLength(_ response: HTTPClientResponse) -> UInt64? {
        response.headers.first(name: "Content-Length").flatMap(UInt64.init)
    }

    /// Hands a response body to `reader` as it arrives, at most `limit` bytes (the
    /// Content-Length is checked first), in the time `clock` allows; stops where the reader
    /// does (leaving the loop drops the connection).
    func read<Reader: HTTPBodyReader>(
        _ response: HTTPClientResponse, into reader: inout Reader, object: String, limit: UInt64, clock: inout TransferClock
    ) async throws {
        let announced = Self.contentLength(response)
        if let announced, announced > limit { throw ConcordError.objectTooLarge(object, size: announced, limit: limit) }
        clock.announce(announced)
        var received: UInt64 = 0
        let bounds = clock
        try await forEachBuffer(of: response, object: object, clock: bounds) { buffer in
            received += UInt64(buffer.readableBytes)
            guard received <= limit else { throw ConcordError.objectTooLarge(object, size: received, atLeast: true, limit: limit) }
            try bounds.check(received: received, object: object, remoteName: remoteName)
            return reader.take(buffer.readableBytesView)
        }
    }

    /// The first ``HTTPBounds/errorBodyLimit`` bytes of an error answer's body, in the time
    /// `clock` allows them; the rest is never read (leaving the loop drops the connection).
    func collectPrefix(_ response: HTTPClientResponse, object: String, clock: inout TransferClock) async throws -> [UInt8] {
        let limit = HTTPBounds.errorBodyLimit
        clock.announce(UInt64(limit))
        var bytes: [UInt8] = []
        let bounds = clock
        try await forEachBuffer(of: response, object: object, clock: bounds) { buffer in
            bytes += buffer.readableBytesView.prefix(limit - bytes.count)
            if bytes.count >= limit { return false }
            try bounds.check(received: UInt64(bytes.count), object: object, remoteName: remoteName)
            return true
        }
        return bytes
    }

    /// Hands each buffer of `response`'s body to `take` until it returns false or the body
    /// ends, within the time `clock` allows: a server that sends the head and then stalls is
    /// cut off at that deadline with ``/ConcordCore/ConcordError/Code/limitExceeded`` (the
    /// clock's own message), not left to the client's 60 s idle timeout, retried. The body
    /// is read by a child task and handed over one buffer at a time (``BodyHandoff``), so a
    /// timer can interrupt the wait; leaving drops the connection.
    func forEachBuffer(
        of response: HTTPClientResponse, object: String, clock: TransferClock, _ take: (ByteBuffer) throws -> Bool
    ) async throws {
        let handoff = BodyHandoff()
        let deadline = clock.started + clock.bounds.allowance(forBytes: clock.total) + .milliseconds(1)
        let body = response.body
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                do {
                    for try await buffer in body { guard await handoff.send(buffer) else { return } }
                    handoff.finish()
                } catch {
                    handoff.fail(error)
                }
            }
            group.addTask {
                // Cancelled once the read ends: then it returns without a word.
                guard (try? await Task.sleep(until: deadline)) != nil else { return }
                handoff.fail(ReadExpired())
            }
            var handed: UInt64 = 0
            do {
                for try await buffer in handoff {
                    handed += UInt64(buffer.readableBytes)
                    guard try take(buffer) else { break }
                }
            } catch is ReadExpired {
                handoff.close()
                group.cancelAll()
                try clock.check(received: handed, object: object, remoteName: remoteName, forced: true)
            } catch {
                handoff.close()
                group.cancelAll()
                throw error
            }
            handoff.close()
            group.cancelAll()
        }
    }

    /// The deadline of a read passed while its answer stalled.
    struct ReadExpired: Error {}

    /// A failure below HTTP — refused connection, DNS, TLS, reset, timeout — as one line.
    public func transportError(_ error: any Error, object: String) -> ConcordError {
        if let error = error as? ConcordError { return error }
        let text = String(describing: error)
        let lower = text.lowercased()
        let advice: String
        if lower.contains("ssl") || lower.contains("tls") || lower.contains("certificate") || lower.contains("handshake") {
            advice = "the server's TLS certificate was refused (\(text)): check the URL's host name and the server's certificate"
        } else if lower.contains("connectionrefused") || lower.contains("connection refused") || lower.contains("econnrefused") {
            advice = "the connection was refused (\(text)): is the server running, and the port right?"
        } else if lower.contains("dns") || lower.contains("resolve") || lower.contains("lookup") || lower.contains("getaddrinfo") {
            advice = "its host name does not resolve (\(text)): check the URL and that this device is online"
        } else if lower.contains("timeout") || lower.contains("deadline") {
            advice = "the server did not answer in time (\(text)): check the connection; the next sync tries again"
        } else {
            advice = "the connection failed (\(text)): check that this device is online; the next sync tries again"
        }
        return ConcordError(.remote, "\(remoteName), \(object): \(advice); nothing local was lost")
    }

    /// A status the caller did not expect, as the typed error of its kind.
    public func unexpected(_ response: HTTPResponse, object: String, doing: String, detail: String? = nil) -> ConcordError {
        let said = detail.map(Self.redacted) ?? Self.summary(of: response.body)
        let suffix = said.isEmpty ? "" : " (\(said))"
        switch response.status {
        case 401:
            return ConcordError(.remoteAuth, "\(remoteName) refused the credentials (HTTP 401\(suffix)) to \(doing) \(object): check the user name and password; nothing local was lost")
        case 403:
            // A 403 on one object while others answer is that object's own permission (a
            // server refusing a link or a file it may not serve), not the credentials.
            return ConcordError(.remoteAuth, "\(remoteName) refused access (HTTP 403\(suffix)) to \(doing) \(object): check the credentials and that they may \(doing) there — or, if other objects sync, that \(object) is a plain file the server may serve (someone may have put something else at its name); nothing local was lost")
        case 507:
            return ConcordError(.remoteFull, "\(remoteName) is out of space (HTTP 507\(suffix)) to \(doing) \(object): free space or raise the quota, then sync again; nothing local was lost")
        case 413:
            return ConcordError(.remoteFull, "\(remoteName) refused \(object) as too large (HTTP 413\(suffix)): raise the server's upload limit; nothing local was lost")
        case 301, 302, 303, 307, 308:
            // Redirects are not followed (a request signed for one URL is not sent to another):
            // where it points is what the person needs to fix the URL.
            let location = response.headers.first(name: "Location").map { Self.redacted(String($0.prefix(300))) } ?? "no Location given"
            return ConcordError(.remote, "\(remoteName) answered HTTP \(response.status) (moved to \(location)) to \(doing) \(object): if the store moved, set the remote's new URL with `concord remote set`; nothing local was lost")
        default:
            return ConcordError(.remote, "\(remoteName) answered HTTP \(response.status)\(suffix) to \(doing) \(object); nothing local was lost, the next sync tries again")
        }
    }

    /// The first 200 characters of an error body, on one line, with anything that looks
    /// like a credential taken out (``redacted(_:)``).
    static func summary(of body: [UInt8]) -> String {
        let text = String(decoding: body.prefix(400), as: UTF8.self)
        let stripped = text.replacingOccurrences(of: "<[^>]*>", with: " ", options: .regularExpression)
        let line = stripped.split(whereSeparator: { $0.isWhitespace }).joined(separator: " ")
        return String(redacted(line).prefix(200))
    }

    /// `text` with what looks like a credential replaced by "[redacted]": an error answer
    /// that echoes the request (its `Authorization` header, a presigned URL's signature or
    /// session token, a password in a URL) must not carry it into messages, logs or `--json`.
    public static func redacted(_ text: String) -> String {
        var text = text
        let patterns = [
            #"(?i)\b(Basic|Bearer|Digest|AWS4-HMAC-SHA256)\s+[^\s"'<>]+"#,
            #"(?i)\b(Authorization|Proxy-Authorization|X-Amz-Security-Token|X-Amz-Signature|X-Amz-Credential|Signature|Credential|password|passwd|pwd|secret|token|AWSAccessKeyId)\s*[:=]\s*[^\s&"'<>,;]+"#,
            #"(?i)(://[^/\s:@]+):[^@\s/]+@"#,
        ]
        for (index, pattern) in patterns.enumerated() {
            let template = index == 2 ? "$1:[redacted]@" : "$1 [redacted]"
            text = text.replacingOccurrences(of: pattern, with: template, options: .regularExpression)
        }
        return text
    }
}

