import ConcordCore
import ConcordCrypto
import ConcordRemote
import Logging
import Synchronization

/// The LAN peer channel: replicas of one store on one network send each other the sealed
/// batches they would put on the remote, over TCP, so a change shows on the other device
/// without waiting for the storage — or while it cannot be reached (docs/ARCHITECTURE.md,
/// "The peer channel").
///
/// - **Handshake.** Each side sends a hello (its replica id and a fresh nonce), then a
///   proof (`PeerProof`) over both hellos under a key derived from the store
///   key: the dialer proves first, the listener answers only a dialer that proved. A side
///   without the store key learns nothing and is dropped.
/// - **What travels.** Only sealed objects, exactly as the remote holds them: the channel
///   adds no trust. A peer ships its own batches only (the path names its replica), each seq
///   higher than the last it sent on the connection; the receiver opens each through the
///   same checks as an object fetched from the remote (``AutoSync`` does), so a forged or
///   moved object fails authentication and its sender is dropped.
/// - **Bounds.** At most ``Configuration/maxPeers`` connections (handshakes included); a
///   frame's size is checked against its kind's bound before it is read; every read waits at
///   most ``Configuration/stallTimeout`` for more, and a connection silent for
///   ``Configuration/idleTimeout`` (peers ping every ``Configuration/pingInterval``) is
///   dropped; deliveries not yet taken and frames not yet sent are bounded in bytes.
///   A peer that breaks any rule is dropped, in one line logged under
///   ``ConcordLogLabel/peers``.
///
/// Deliveries go to one consumer (``deliveries()``), which calls ``consumed(_:)`` for each.
public final class PeerChannel: Sendable {
    /// Limits and timeouts, in milliseconds and bytes.
    public struct Configuration: Hashable, Sendable {
        /// The IPv4 address to listen on (default every interface) and the port (default 0:
        /// one the system picks).
        public var host: String
        public var port: UInt16
        /// The most connections at once, handshakes included (default 8).
        public var maxPeers: Int
        /// How long a handshake may take (default 3 s).
        public var handshakeTimeout: Int
        /// The longest wait for the rest of a frame once it began (default 5 s).
        public var stallTimeout: Int
        /// The longest a connection may stay silent (default 30 s).
        public var idleTimeout: Int
        /// How often a connection sends a ping when it has nothing else to send (default 10 s).
        public var pingInterval: Int
        /// The most bytes delivered and not yet consumed, and the most queued for one
        /// peer (default 64 MiB each). A peer past the first waits; past the second, it is
        /// dropped (it has fallen behind; the remote brings it what it missed).
        public var maxPendingBytes: Int
        /// How often a peer given to ``keepConnected(host:port:)`` is dialled again while
        /// not connected (default 2 s).
        public var redialInterval: Int

        public init(
            host: String = "0.0.0.0", port: UInt16 = 0, maxPeers: Int = 8, handshakeTimeout: Int = 3_000,
            stallTimeout: Int = 5_000, idleTimeout: Int = 30_000, pingInterval: Int = 10_000,
            maxPendingBytes: Int = 64 << 20, redialInterval: Int = 2_000
        ) {
            self.host = host
            self.port = port
            self.maxPeers = max(1, maxPeers)
            self.handshakeTimeout = handshakeTimeout
            self.stallTimeout = stallTimeout
            self.idleTimeout = idleTimeout
            self.pingInterval = pingInterval
            self.maxPendingBytes = maxPendingBytes
            self.redialInterval = redialInterval
        }
    }

    /// A connected peer.
    public struct Peer: Hashable, Sendable, CustomStringConvertible {
        /// Its replica id, as its handshake proved.
        public let replica: ReplicaID
        /// Its address and port, as `host:port`.
        public let address: String
        /// Whether this side dialled it.
        public let dialled: Bool

        public var description: String { "\(replica) at \(address)" }
    }

    /// A sealed object a peer sent: batch `seq` of `origin` (the peer itself) at `path`.
    public struct Delivery: Sendable {
        public let peer: ReplicaID
        public let path: String
        public let bytes: [UInt8]
        public let origin: ReplicaID
        public let seq: UInt64
    }

    public let configuration: Configuration
    /// This replica.
    public let replica: ReplicaID
    private let key: SubKey
    private let logger: Logger
    private let state = Mutex(State())
    private let stream: AsyncStream<Delivery>
    private let continuation: AsyncStream<Delivery>.Continuation

    struct State {
        var listener: PeerSocket?
        var port: UInt16 = 0
        var stopped = false
        var slots = 0
        var links: [ReplicaID: Link] = [:]
        var pendingBytes = 0
        var drops: [String] = []
        var tasks: [Task<Void, Never>] = []
    }

    /// One connection past its handshake: its socket, and its queue of frames to send.
    final class Link: Sendable {
        let peer: Peer
        let socket: PeerSocket
        let outbox: AsyncStream<[UInt8]>.Continuation
        let outgoing: AsyncStream<[UInt8]>
        let queued = Atomic<Int>(0)

        init(peer: Peer, socket: PeerSocket) {
            self.peer = peer
            self.socket = socket
            (outgoing, outbox) = AsyncStream.makeStream(of: [UInt8].self)
        }
    }

    /// A channel for `replica`, keyed by the store's `KeyPurpose.peers`
    /// sub-key; idle until ``listen()`` or a dial.
    init(replica: ReplicaID, key: SubKey, configuration: Configuration, logger: Logger) {
        self.replica = replica
        self.key = key
        self.configuration = configuration
        self.logger = logger
        (stream, continuation) = AsyncStream.makeStream(of: Delivery.self)
    }

    // MARK: Observing

    /// The objects peers send, in the order each peer sent them. One consumer only.
    public func deliveries() -> AsyncStream<Delivery> { stream }

    /// Says a delivery was taken care of: its bytes no longer count against
    /// ``Configuration/maxPendingBytes``.
    public func consumed(_ delivery: Delivery) {
        state.withLock { $0.pendingBytes -= delivery.bytes.count }
    }

    /// The peers connected now, in replica order.
    public var peers: [Peer] {
        state.withLock { $0.links.values.map(\.peer) }.sorted { $0.replica < $1.replica }
    }

    /// The port this channel listens on (0 before ``listen()``).
    public var port: UInt16 { state.withLock { $0.port } }

    /// The reasons of the most recent drops (up to 32), oldest first: for tests and status.
    public var recentDrops: [String] { state.withLock { $0.drops } }

    // MARK: Control

    /// Starts listening on ``Configuration/host`` and ``Configuration/port``; returns the
    /// port. Does nothing but return the port when already listening.
    @discardableResult
    public func listen() throws(ConcordError) -> UInt16 {
        if let port = state.withLock({ $0.listener == nil ? nil : $0.port }) { return port }
        let (socket, port) = try PeerSocket.listen(host: configuration.host, port: configuration.port)
        state.withLock {
            $0.listener = socket
            $0.port = port
        }
        spawn { [self] in await acceptLoop(socket) }
        logger.debug("listening for peers", metadata: ["port": "\(port)"])
        return port
    }

    /// Dials `host:port` and runs the handshake; the peer it reached. Throws when it cannot
    /// connect, the handshake fails (the other side does not hold the store key), or the
    /// channel is full or stopped.
    @discardableResult
    public func connect(host: String, port: UInt16) async throws(ConcordError) -> Peer {
        try reserveSlot()
        let address = "\(host):\(port)"
        let socket: PeerSocket
        do {
            socket = try await PeerSocket.connect(host: host, port: port, timeout: configuration.handshakeTimeout)
        } catch {
            releaseSlot()
            throw error
        }
        do {
            let theirs = try await PeerHandshake(channelReplica: replica, key: key, configuration: configuration).dial(socket)
            return try register(socket, replica: theirs, address: address, dialled: true)
        } catch {
            socket.close()
            releaseSlot()
            note("handshake with \(address) failed: \(error.message)")
            throw error
        }
    }

    /// Keeps a connection to `host:port`: dials it now and again every
    /// ``Configuration/redialInterval`` while it is not connected, until ``stop()``.
    public func keepConnected(host: String, port: UInt16) {
        let interval = configuration.redialInterval
        spawn { [self] in
            var reached: ReplicaID?
            while !isStopped {
                if reached == nil || !state.withLock({ $0.links[reached!] != nil }) {
                    reached = (try? await connect(host: host, port: port))?.replica
                }
                try? await Task.sleep(for: .milliseconds(interval))
            }
        }
    }

    /// Sends the sealed object `bytes` at `path` (this replica's batch) to every connected peer.
    public func send(path: String, bytes: [UInt8]) {
        let frame = PeerFrame.object(path: path, bytes: bytes).encoded
        for link in state.withLock({ Array($0.links.values) }) { enqueue(frame, on: link) }
    }

    /// Drops the connection to `replica`, logging `reason` in one line.
    public func drop(_ replica: ReplicaID, reason: String) {
        guard let link = state.withLock({ $0.links[replica] }) else { return }
        close(link, reason: reason)
    }

    /// Closes every connection and stops listening; later dials and sends do nothing.
    public func stop() {
        let (listener, links, tasks) = state.withLock { state in
            state.stopped = true
            defer { state.tasks = [] }
            return (state.listener, Array(state.links.values), state.tasks)
        }
        listener?.close()
        for link in links { close(link, reason: nil) }
        for task in tasks { task.cancel() }
        continuation.finish()
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    // MARK: Connections

    private func spawn(_ body: @escaping @Sendable () async -> Void) {
        let task = Task { await body() }
        state.withLock { $0.tasks.append(task) }
    }

    private func reserveSlot() throws(ConcordError) {
        let refusal: String? = state.withLock { state in
            if state.stopped { return "the peer channel is stopped" }
            guard state.slots < configuration.maxPeers else { return "already \(configuration.maxPeers) peers" }
            state.slots += 1
            return nil
        }
        if let refusal { throw ConcordError(.limitExceeded, refusal) }
    }

    private func releaseSlot() {
        state.withLock { $0.slots -= 1 }
    }

    private func acceptLoop(_ listener: PeerSocket) async {
        while !isStopped {
            guard let accepted = try? await listener.accept(timeout: 500) else {
                if listener.isClosed { return }
                continue
            }
            let (socket, host) = accepted
            do throws(ConcordError) {
                try reserveSlot()
            } catch {
                socket.close()
                note("refused a peer at \(host): \(error.message)")
                continue
            }
            spawn { [self] in
                do throws(ConcordError) {
                    let theirs = try await PeerHandshake(channelReplica: replica, key: key, configuration: configuration).answer(socket)
                    _ = try register(socket, replica: theirs, address: host, dialled: false)
                } catch {
                    socket.close()
                    releaseSlot()
                    note("handshake with \(host) failed: \(error.message)")
                }
            }
        }
    }

    /// Adds a connection past its handshake and starts its reader, writer and pinger.
    ///
    /// Two connections to one replica (both sides dialled): both sides keep the one the
    /// lower replica id dialled, and close the other without a fault; the peer returned is
    /// the one kept.
    private func register(_ socket: PeerSocket, replica theirs: ReplicaID, address: String, dialled: Bool) throws(ConcordError) -> Peer {
        let peer = Peer(replica: theirs, address: address, dialled: dialled)
        let link = Link(peer: peer, socket: socket)
        let keepsNew = (dialled ? replica : theirs) == min(replica, theirs)
        let (refusal, kept, replaced): (String?, Peer?, Link?) = state.withLock { state in
            if state.stopped { return ("the peer channel is stopped", nil, nil) }
            if theirs == replica { return ("it is this replica", nil, nil) }
            if let existing = state.links[theirs], !keepsNew || existing.peer.dialled == dialled { return (nil, existing.peer, nil) }
            let old = state.links[theirs]
            state.links[theirs] = link
            if old != nil { state.slots -= 1 }  // the old one's slot; the new one holds its own
            return (nil, nil, old)
        }
        if let refusal {
            socket.close()
            releaseSlot()
            throw ConcordError(.invalidOperation, refusal)
        }
        if let kept {
            socket.close()
            releaseSlot()
            return kept
        }
        if let replaced {
            replaced.socket.close()
            replaced.outbox.finish()
        }
        logger.info("peer connected", metadata: ["peer": "\(peer)"])
        spawn { [self] in await readLoop(link) }
        spawn { [self] in await writeLoop(link) }
        let ping = PeerFrame.ping.encoded, interval = configuration.pingInterval
        spawn { [self] in
            while !link.socket.isClosed {
                try? await Task.sleep(for: .milliseconds(interval))
                enqueue(ping, on: link)
            }
        }
        return peer
    }

    private func readLoop(_ link: Link) async {
        var lastSeq: UInt64 = 0
        do throws(ConcordError) {
            while true {
                let frame = try await PeerFrame.read(from: link.socket, idle: configuration.idleTimeout, stall: configuration.stallTimeout)
                guard case let .object(path, bytes) = frame else {
                    if frame == .ping { continue }
                    throw ConcordError(.malformed, "a handshake frame after the handshake")
                }
                guard case let .batch(origin, seq)? = RemoteLayout.parse(path), origin == link.peer.replica else {
                    throw ConcordError(.malformed, "it sent \(path), not a batch of its own")
                }
                guard seq > lastSeq else { throw ConcordError(.malformed, "it sent batch \(seq) after \(lastSeq) (a replay)") }
                lastSeq = seq
                // Deliveries wait for room rather than pile up.
                while !link.socket.isClosed, !state.withLock({ state in
                    guard state.pendingBytes == 0 || state.pendingBytes + bytes.count <= configuration.maxPendingBytes else { return false }
                    state.pendingBytes += bytes.count
                    return true
                }) {
                    try? await Task.sleep(for: .milliseconds(5))
                }
                continuation.yield(Delivery(peer: link.peer.replica, path: path, bytes: bytes, origin: origin, seq: seq))
            }
        } catch {
            let orderly = link.socket.isClosed || error.message == PeerSocket.closedByPeer
            close(link, reason: orderly ? nil : error.message)
        }
    }

    private func writeLoop(_ link: Link) async {
        for await frame in link.outgoing {
            do throws(ConcordError) {
                try await link.socket.write(frame, timeout: configuration.stallTimeout)
                link.queued.subtract(frame.count, ordering: .relaxed)
            } catch {
                close(link, reason: link.socket.isClosed ? nil : error.message)
                return
            }
        }
    }

    private func enqueue(_ frame: [UInt8], on link: Link) {
        let queued = link.queued.add(frame.count, ordering: .relaxed).newValue
        if queued > configuration.maxPendingBytes + frame.count && queued > frame.count {
            close(link, reason: "it has fallen \(queued) bytes behind")
            return
        }
        link.outbox.yield(frame)
    }

    /// Closes `link` once, logging `reason` (nil: a close asked for, not a fault).
    private func close(_ link: Link, reason: String?) {
        let removed = state.withLock { state -> Bool in
            guard state.links[link.peer.replica] === link else { return false }
            state.links[link.peer.replica] = nil
            state.slots -= 1
            return true
        }
        link.socket.close()
        link.outbox.finish()
        guard removed else { return }
        if let reason {
            note("dropped peer \(link.peer): \(reason)")
        } else {
            logger.info("peer disconnected", metadata: ["peer": "\(link.peer)"])
        }
    }

    /// One logged line, kept among the recent drops.
    private func note(_ line: String) {
        logger.notice("\(line)")
        state.withLock { state in
            state.drops.append(line)
            if state.drops.count > 32 { state.drops.removeFirst() }
        }
    }
}
