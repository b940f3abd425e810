#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ConcordCore
import Foundation
import Synchronization

/// One TCP socket of the peer channel, over POSIX sockets: IPv4, non-blocking, and every
/// wait bounded by `poll(2)` with a timeout, so nothing a peer does (or fails to do) holds a
/// thread for longer than the timeout. Each blocking call runs on a thread of its own, never
/// on Swift's cooperative threads nor on Dispatch's queues (whose threads are as few as
/// the cores on Linux): a peer waiting on one socket never holds up another, nor anything
/// else of the process.
///
/// ``close()`` shuts the socket down (waking a read or accept in progress, which then
/// fails); the descriptor is closed when the last reference goes.
final class PeerSocket: Sendable {
    private let descriptor: Int32
    private let closed = Atomic<Bool>(false)

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit {
        _ = systemClose(descriptor)
    }

    /// Why a socket call failed, as one line.
    static func failure(_ what: String) -> ConcordError {
        ConcordError(.remote, "\(what): \(String(cString: strerror(errno)))")
    }

    // MARK: Listening

    /// A socket listening on `host` (an IPv4 address; `0.0.0.0` for every interface) at
    /// `port` (0: one the system picks), and the port it listens on.
    static func listen(host: String, port: UInt16) throws(ConcordError) -> (socket: PeerSocket, port: UInt16) {
        let socket = try make()
        var yes: Int32 = 1
        _ = setsockopt(socket.descriptor, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
        var address = try Self.address(host, port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0 else { throw failure("cannot listen on \(host):\(port)") }
        guard systemListen(socket.descriptor, 16) == 0 else { throw failure("cannot listen on \(host):\(port)") }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.descriptor, $0, &length) }
        }
        return (socket, UInt16(bigEndian: actual.sin_port))
    }

    /// The next connection, waiting at most `timeout` ms; nil when none came. Throws once
    /// the socket is closed.
    func accept(timeout: Int) async throws(ConcordError) -> (socket: PeerSocket, host: String)? {
        try await Self.blocking { () throws(ConcordError) -> (socket: PeerSocket, host: String)? in
            guard try self.wait(for: Int16(POLLIN), timeout: timeout) else { return nil }
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let accepted = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemAccept(self.descriptor, $0, &length) }
            }
            guard accepted >= 0 else {
                if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { return nil }
                throw Self.failure("accepting a peer failed")
            }
            let socket = PeerSocket(descriptor: accepted)
            try socket.configure()
            return (socket, Self.text(of: peer))
        }
    }

    // MARK: Connecting

    /// A connection to `host:port`, made within `timeout` ms.
    static func connect(host: String, port: UInt16, timeout: Int) async throws(ConcordError) -> PeerSocket {
        try await blocking { () throws(ConcordError) -> PeerSocket in
            let socket = try make()
            var address = try Self.address(host, port)
            let result = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { systemConnect(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            if result != 0 {
                guard errno == EINPROGRESS else { throw failure("cannot connect to \(host):\(port)") }
                guard try socket.wait(for: Int16(POLLOUT), timeout: timeout) else {
                    throw ConcordError(.remote, "connecting to \(host):\(port) timed out")
                }
                var error: Int32 = 0
                var length = socklen_t(MemoryLayout<Int32>.size)
                _ = getsockopt(socket.descriptor, SOL_SOCKET, SO_ERROR, &error, &length)
                guard error == 0 else {
                    errno = error
                    throw failure("cannot connect to \(host):\(port)")
                }
            }
            return socket
        }
    }

    // MARK: Reading and writing

    /// Exactly `count` bytes, each wait for more at most `timeout` ms: a peer that stops
    /// sending part-way fails here after `timeout`, however large the read.
    func read(exactly count: Int, timeout: Int) async throws(ConcordError) -> [UInt8] {
        try await Self.blocking { () throws(ConcordError) -> [UInt8] in
            var bytes = [UInt8](repeating: 0, count: count)
            var done = 0
            while done < count {
                guard try self.wait(for: Int16(POLLIN), timeout: timeout) else {
                    throw ConcordError(.remote, "the peer sent nothing for \(timeout) ms")
                }
                let got = bytes.withUnsafeMutableBytes { recv(self.descriptor, $0.baseAddress! + done, count - done, 0) }
                if got == 0 { throw ConcordError(.remote, Self.closedByPeer) }
                if got < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    throw Self.failure("reading from the peer failed")
                }
                done += got
            }
            return bytes
        }
    }

    /// Sends all of `bytes`, each wait for room at most `timeout` ms.
    func write(_ bytes: [UInt8], timeout: Int) async throws(ConcordError) {
        try await Self.blocking { () throws(ConcordError) in
            var done = 0
            while done < bytes.count {
                guard try self.wait(for: Int16(POLLOUT), timeout: timeout) else {
                    throw ConcordError(.remote, "the peer took nothing for \(timeout) ms")
                }
                let sent = bytes.withUnsafeBytes { send(self.descriptor, $0.baseAddress! + done, bytes.count - done, Self.sendFlags) }
                if sent < 0 {
                    if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR { continue }
                    throw Self.failure("writing to the peer failed")
                }
                done += sent
            }
        }
    }

    /// Shuts the socket down: a read, write or accept in progress fails at once.
    func close() {
        guard !closed.exchange(true, ordering: .sequentiallyConsistent) else { return }
        _ = shutdown(descriptor, Int32(SHUT_RDWR))
    }

    var isClosed: Bool { closed.load(ordering: .sequentiallyConsistent) }

    /// The message of a read that found the connection closed by the other side.
    static let closedByPeer = "the peer closed the connection"

    // MARK: Plumbing

    #if canImport(Glibc)
    private static let sendFlags = Int32(MSG_NOSIGNAL)
    private static let streamType = Int32(SOCK_STREAM.rawValue)
    #else
    private static let sendFlags: Int32 = 0
    private static let streamType = SOCK_STREAM
    #endif

    private static func make() throws(ConcordError) -> PeerSocket {
        let descriptor = socket(AF_INET, streamType, 0)
        guard descriptor >= 0 else { throw failure("cannot make a socket") }
        let socket = PeerSocket(descriptor: descriptor)
        try socket.configure()
        return socket
    }

    /// Non-blocking, close-on-exec, no SIGPIPE, no Nagle delay (frames are small and
    /// latency is the point).
    private func configure() throws(ConcordError) {
        let flags = fcntl(descriptor, F_GETFL, 0)
        guard flags >= 0, fcntl(descriptor, F_SETFL, flags | O_NONBLOCK) == 0 else { throw Self.failure("cannot configure a socket") }
        _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        var yes: Int32 = 1
        _ = setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &yes, socklen_t(MemoryLayout<Int32>.size))
        #if canImport(Darwin)
        _ = setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &yes, socklen_t(MemoryLayout<Int32>.size))
        #endif
    }

    /// Whether `events` came within `timeout` ms; throws once closed or on a socket error.
    private func wait(for events: Int16, timeout: Int) throws(ConcordError) -> Bool {
        var remaining = max(0, timeout)
        while true {
            if isClosed { throw ConcordError(.remote, "the connection was closed") }
            // Short slices, so that a close is noticed soon even where shutdown wakes nothing.
            let slice = min(remaining, 200)
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let ready = poll(&entry, 1, Int32(slice))
            if ready < 0 {
                if errno == EINTR { continue }
                throw Self.failure("waiting on a peer failed")
            }
            if ready > 0 {
                if isClosed { throw ConcordError(.remote, "the connection was closed") }
                return true
            }
            remaining -= slice
            if remaining <= 0 { return false }
        }
    }

    private static func address(_ host: String, _ port: UInt16) throws(ConcordError) -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw ConcordError(.invalidOperation, "\(host) is not an IPv4 address")
        }
        return address
    }

    private static func text(of address: sockaddr_in) -> String {
        var copy = address.sin_addr
        var buffer = [CChar](repeating: 0, count: 64)
        guard inet_ntop(AF_INET, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Runs `body` on a thread of its own (tens of microseconds to start; a call waits at
    /// most its timeout), off the cooperative threads.
    private static func blocking<T: Sendable>(_ body: @escaping @Sendable () throws(ConcordError) -> T) async throws(ConcordError) -> T {
        let result: Result<T, ConcordError> = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: Result { () throws(ConcordError) -> T in try body() })
            }
        }
        return try result.get()
    }
}

#if canImport(Glibc)
private func systemClose(_ descriptor: Int32) -> Int32 { Glibc.close(descriptor) }
private func systemListen(_ descriptor: Int32, _ backlog: Int32) -> Int32 { Glibc.listen(descriptor, backlog) }
private func systemAccept(_ descriptor: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>) -> Int32 {
    Glibc.accept(descriptor, address, length)
}
private func systemConnect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    Glibc.connect(descriptor, address, length)
}
#elseif canImport(Darwin)
private func systemClose(_ descriptor: Int32) -> Int32 { Darwin.close(descriptor) }
private func systemListen(_ descriptor: Int32, _ backlog: Int32) -> Int32 { Darwin.listen(descriptor, backlog) }
private func systemAccept(_ descriptor: Int32, _ address: UnsafeMutablePointer<sockaddr>, _ length: UnsafeMutablePointer<socklen_t>) -> Int32 {
    Darwin.accept(descriptor, address, length)
}
private func systemConnect(_ descriptor: Int32, _ address: UnsafePointer<sockaddr>, _ length: socklen_t) -> Int32 {
    Darwin.connect(descriptor, address, length)
}
#endif
