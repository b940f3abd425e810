import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// An HTTP/1.1 server on loopback that answers as a hostile storage server may: whatever a
/// test's handler says, including bodies that trickle or never end. It counts the requests
/// it got and the body bytes it sent, so a test can tell how far a client read. Plain
/// blocking sockets, a thread per connection; every answer ends by itself (an endless body
/// stops at ``endlessCap`` bytes or when the client hangs up).
public final class HostileHTTPServer: Sendable {
    /// A request as the handler sees it.
    public struct Request: Sendable {
        public let method: String
        /// The path, still percent-encoded, without the query.
        public let path: String
        /// The query's values, percent-decoded.
        public let query: [String: String]
        public let headers: [String: String]
    }

    /// How to answer.
    public enum Reply: Sendable {
        /// A whole answer with its Content-Length.
        case answer(status: Int, headers: [(String, String)] = [], body: [UInt8] = [])
        /// `body` announced whole, sent one byte every `interval`.
        case trickle(status: Int, body: [UInt8], interval: Duration)
        /// A chunked body that starts with `prefix` and then never ends (filler bytes).
        case endless(status: Int, headers: [(String, String)] = [], prefix: [UInt8] = [])
        /// Nothing: the request's body is never read and no answer ever comes (until the
        /// server stops), as from a server that hung with the connection open.
        case stall
    }

    /// Where an endless body stops by itself: 128 MiB, twice the largest bound a test
    /// checks, so a client that never stops reading is still caught, and a connection the
    /// client leaves open does not keep the loopback busy for long beside other tests.
    public static let endlessCap: UInt64 = 128 << 20

    /// `http://127.0.0.1:PORT`.
    public let origin: String
    private let listener: Int32
    private let handler: @Sendable (Request) -> Reply
    private let counts = Mutex<(requests: Int, bytes: UInt64)>((0, 0))
    private let stopped = Atomic<Bool>(false)

    /// Starts listening on a free loopback port.
    public init(handler: @escaping @Sendable (Request) -> Reply) throws {
        self.handler = handler
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        var one: Int32 = 1
        setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { generic in
                bind(descriptor, generic, length) == 0 && listen(descriptor, 64) == 0 && getsockname(descriptor, generic, &length) == 0
            }
        }
        guard bound else {
            close(descriptor)
            throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
        }
        listener = descriptor
        origin = "http://127.0.0.1:\(UInt16(bigEndian: address.sin_port))"
        let server = self
        Thread.detachNewThread { server.acceptLoop() }
    }

    deinit { stop() }

    /// Requests answered (or being answered) so far.
    public var requests: Int { counts.withLock { $0.requests } }
    /// Body bytes written to clients so far (what the kernel took; a client read at most
    /// that many).
    public var bytesSent: UInt64 { counts.withLock { $0.bytes } }

    /// Stops accepting; answers in progress end at their next write.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else {
                if errno == EINTR { continue }
                return
            }
            #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(connection, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
            #endif
            let server = self
            Thread.detachNewThread { server.serve(connection) }
        }
    }

    /// Answers requests on one connection until it closes or an answer ends it.
    private func serve(_ connection: Int32) {
        defer { close(connection) }
        var buffer: [UInt8] = []
        while !stopped.load(ordering: .relaxed) {
            guard let request = readRequest(connection, &buffer) else { return }
            counts.withLock { $0.requests += 1 }
            guard answer(handler(request), on: connection) else { return }
        }
    }

    /// Reads one request (its head and a Content-Length body); nil when the client is gone.
    private func readRequest(_ connection: Int32, _ buffer: inout [UInt8]) -> Request? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        var headEnd: Int?
        while headEnd == nil {
            if let found = Self.find(separator, in: buffer) { headEnd = found; break }
            guard receive(connection, into: &buffer) else { return nil }
        }
        let head = String(decoding: buffer[..<headEnd!], as: UTF8.self)
        buffer.removeFirst(headEnd! + separator.count)
        var lines = head.components(separatedBy: "\r\n")
        let requestLine = lines.removeFirst().split(separator: " ")
        guard requestLine.count >= 2 else { return nil }
        var headers: [String: String] = [:]
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        let length = headers["content-length"].flatMap(Int.init) ?? 0
        while buffer.count < length {
            guard receive(connection, into: &buffer) else { return nil }
        }
        buffer.removeFirst(length)
        let target = String(requestLine[1])
        let parts = target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false)
        var query: [String: String] = [:]
        if parts.count == 2 {
            for pair in parts[1].split(separator: "&") {
                let field = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let value = field.count == 2 ? String(field[1]) : ""
                query[String(field[0])] = value.removingPercentEncoding ?? value
            }
        }
        return Request(method: String(requestLine[0]), path: String(parts[0]), query: query, headers: headers)
    }

    private func receive(_ connection: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65_536)
        let count = chunk.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { return false }
        buffer += chunk[..<count]
        return true
    }

    /// Sends `reply`; false when the connection must close after it.
    private func answer(_ reply: Reply, on connection: Int32) -> Bool {
        switch reply {
        case let .answer(status, headers, body):
            let head = Self.head(status, headers + [("Content-Length", String(body.count))])
            // One write: a head and a body sent apart wait on delayed acknowledgements.
            guard transmit(head + body, on: connection, body: false) else { return false }
            counts.withLock { $0.bytes += UInt64(body.count) }
            return true
        case let .trickle(status, body, interval):
            guard transmit(Self.head(status, [("Content-Length", String(body.count)), ("Connection", "close")]), on: connection, body: false) else { return false }
            for byte in body {
                guard !stopped.load(ordering: .relaxed), transmit([byte], on: connection, body: true) else { return false }
                Thread.sleep(forTimeInterval: Double(interval.components.seconds) + Double(interval.components.attoseconds) / 1e18)
            }
            return false
        case let .endless(status, headers, prefix):
            guard transmit(Self.head(status, headers + [("Transfer-Encoding", "chunked"), ("Connection", "close")]), on: connection, body: false) else { return false }
            let filler = [UInt8](repeating: UInt8(ascii: " "), count: 65_536)
            var sent: UInt64 = 0
            var first = true
            while sent < Self.endlessCap, !stopped.load(ordering: .relaxed) {
                let data = first && !prefix.isEmpty ? prefix : filler
                first = false
                let frame = Array(String(data.count, radix: 16).utf8) + [13, 10] + data + [13, 10]
                guard transmit(frame, on: connection, body: true) else { return false }
                sent += UInt64(data.count)
            }
            return false
        case .stall:
            while !stopped.load(ordering: .relaxed) { Thread.sleep(forTimeInterval: 0.05) }
            return false
        }
    }

    private func transmit(_ bytes: [UInt8], on connection: Int32, body: Bool) -> Bool {
        var offset = 0
        while offset < bytes.count {
            #if canImport(Darwin)
            let flags: Int32 = 0
            #else
            let flags = Int32(MSG_NOSIGNAL)
            #endif
            let count = bytes[offset...].withUnsafeBytes { send(connection, $0.baseAddress, $0.count, flags) }
            guard count > 0 else { return false }
            offset += count
            if body { counts.withLock { $0.bytes += UInt64(count) } }
        }
        return true
    }

    private static func head(_ status: Int, _ headers: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) Hostile\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        return Array((text + "\r\n").utf8)
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8]) -> Int? {
        guard haystack.count >= needle.count else { return nil }
        for start in 0...(haystack.count - needle.count) where haystack[start] == needle[0] {
            if Array(haystack[start..<start + needle.count]) == needle { return start }
        }
        return nil
    }
}
