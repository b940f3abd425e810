import ConcordCore
import ConcordCrypto

/// The peer channel's handshake, on a connected socket (``PeerChannel``):
///
/// 1. the dialer sends its hello; the listener answers with its own;
/// 2. the dialer sends its proof over both hellos; the listener checks it, and only then
///    sends its own, which the dialer checks.
///
/// Every read waits at most the handshake timeout. Succeeds with the other side's replica
/// id; throws `authenticationFailed` when a proof does not check (the other side does not
/// hold the store key), and `malformed` when a message is not the one expected.
struct PeerHandshake {
    let channelReplica: ReplicaID
    let key: SubKey
    let configuration: PeerChannel.Configuration

    private var timeout: Int { configuration.handshakeTimeout }

    /// The dialer's side.
    func dial(_ socket: PeerSocket) async throws(ConcordError) -> ReplicaID {
        let mine = PeerProof.Hello(replica: channelReplica.description, nonce: PeerProof.nonce())
        try await socket.write(PeerFrame.hello(mine).encoded, timeout: timeout)
        let theirs = try await hello(from: socket)
        try await socket.write(PeerFrame.proof(PeerProof.proof(.dialer, dialer: mine, listener: theirs, key: key)).encoded, timeout: timeout)
        guard case let .proof(proof) = try await PeerFrame.read(from: socket, idle: timeout, stall: timeout) else {
            throw ConcordError(.malformed, "the peer did not answer with a proof")
        }
        guard PeerProof.verify(proof, .listener, dialer: mine, listener: theirs, key: key) else {
            throw ConcordError(.authenticationFailed, "the peer's proof does not check: it does not hold this store's key")
        }
        return try replica(theirs)
    }

    /// The listener's side.
    func answer(_ socket: PeerSocket) async throws(ConcordError) -> ReplicaID {
        let theirs = try await hello(from: socket)
        let mine = PeerProof.Hello(replica: channelReplica.description, nonce: PeerProof.nonce())
        try await socket.write(PeerFrame.hello(mine).encoded, timeout: timeout)
        guard case let .proof(proof) = try await PeerFrame.read(from: socket, idle: timeout, stall: timeout) else {
            throw ConcordError(.malformed, "the peer did not send a proof")
        }
        guard PeerProof.verify(proof, .dialer, dialer: theirs, listener: mine, key: key) else {
            throw ConcordError(.authenticationFailed, "the peer's proof does not check: it does not hold this store's key")
        }
        try await socket.write(PeerFrame.proof(PeerProof.proof(.listener, dialer: theirs, listener: mine, key: key)).encoded, timeout: timeout)
        return try replica(theirs)
    }

    private func hello(from socket: PeerSocket) async throws(ConcordError) -> PeerProof.Hello {
        guard case let .hello(hello) = try await PeerFrame.read(from: socket, idle: timeout, stall: timeout) else {
            throw ConcordError(.malformed, "the peer did not begin with a hello")
        }
        // The member-identity hook: a credential is refused until stores have members.
        guard hello.credential.isEmpty else { throw ConcordError(.unsupportedVersion, "the peer offers a credential this version does not know") }
        _ = try replica(hello)
        return hello
    }

    private func replica(_ hello: PeerProof.Hello) throws(ConcordError) -> ReplicaID {
        guard let replica = ReplicaID(hex: hello.replica) else { throw ConcordError(.malformed, "the peer's replica id \(hello.replica.debugDescription) is not one") }
        return replica
    }
}
