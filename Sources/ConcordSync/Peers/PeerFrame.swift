import ConcordCore
import ConcordCrypto
import ConcordRemote

/// A message of the peer channel, as it travels: `type` (1 byte), `head` length (2 bytes,
/// big-endian), `body` length (4 bytes, big-endian), head, body.
///
/// | type | head | body |
/// |---|---|---|
/// | 1 hello | the sender's replica id | version 1, 32 bytes of nonce, credential (empty today) |
/// | 2 proof | empty | 32 bytes (`PeerProof`) |
/// | 3 object | a remote path (`replicas/<replica>/deltas/<seq>`) | the sealed bytes at that path |
/// | 4 ping | empty | empty |
///
/// Every length is checked before anything is read past the header: a head over 256 bytes,
/// a hello's body over 4 KiB, a proof not 32 bytes, an object whose path is not a batch's
/// or whose body is over `RemoteLayout.maxObjectSize(forPath:)` (the
/// bound a read from the remote has) — the frame is refused and the peer dropped.
enum PeerFrame: Equatable, Sendable {
    case hello(PeerProof.Hello)
    case proof([UInt8])
    case object(path: String, bytes: [UInt8])
    case ping

    static let version: UInt8 = 1
    static let maxHead = 256
    static let maxHelloBody = 4_096

    /// The frame's bytes.
    var encoded: [UInt8] {
        let (type, head, body): (UInt8, [UInt8], [UInt8])
        switch self {
        case let .hello(hello): (type, head, body) = (1, Array(hello.replica.utf8), [Self.version] + hello.nonce + hello.credential)
        case let .proof(proof): (type, head, body) = (2, [], proof)
        case let .object(path, bytes): (type, head, body) = (3, Array(path.utf8), bytes)
        case .ping: (type, head, body) = (4, [], [])
        }
        let headCount = UInt16(head.count), bodyCount = UInt32(body.count)
        var out: [UInt8] = [type, UInt8(headCount >> 8), UInt8(truncatingIfNeeded: headCount)]
        out += [UInt8(bodyCount >> 24), UInt8(truncatingIfNeeded: bodyCount >> 16), UInt8(truncatingIfNeeded: bodyCount >> 8), UInt8(truncatingIfNeeded: bodyCount)]
        return out + head + body
    }

    /// The next frame from `socket`: its first byte within `idle` ms, the rest with no wait
    /// for more longer than `stall` ms. Throws `limitExceeded` or `malformed` for a frame
    /// no honest peer sends, and whatever the socket throws.
    static func read(from socket: PeerSocket, idle: Int, stall: Int) async throws(ConcordError) -> PeerFrame {
        let first = try await socket.read(exactly: 1, timeout: idle)[0]
        guard (1...4).contains(first) else { throw ConcordError(.malformed, "a frame of unknown type \(first)") }
        let header = try await socket.read(exactly: 6, timeout: stall)
        let headCount = Int(header[0]) << 8 | Int(header[1])
        let bodyCount = UInt64(header[2]) << 24 | UInt64(header[3]) << 16 | UInt64(header[4]) << 8 | UInt64(header[5])
        guard headCount <= maxHead else { throw ConcordError(.limitExceeded, "a frame's head of \(headCount) bytes is over \(maxHead)") }
        let head = headCount == 0 ? [] : try await socket.read(exactly: headCount, timeout: stall)
        let limit: UInt64
        switch first {
        case 1: limit = UInt64(maxHelloBody)
        case 2: limit = UInt64(PeerProof.proofCount)
        case 3:
            let path = String(decoding: head, as: UTF8.self)
            guard case .batch? = RemoteLayout.parse(path) else { throw ConcordError(.malformed, "an object frame names \(path.debugDescription), not a batch") }
            limit = RemoteLayout.maxObjectSize(forPath: path)
        case 4: limit = 0
        default: throw ConcordError(.malformed, "a frame of unknown type \(first)")
        }
        guard bodyCount <= limit else { throw ConcordError(.limitExceeded, "a frame's body of \(bodyCount) bytes is over the \(limit) its kind may have") }
        let body = bodyCount == 0 ? [] : try await socket.read(exactly: Int(bodyCount), timeout: stall)
        switch first {
        case 1:
            guard body.count >= 1 + PeerProof.nonceCount, body[0] == version else { throw ConcordError(.unsupportedVersion, "a hello of another version or too short") }
            return .hello(PeerProof.Hello(
                replica: String(decoding: head, as: UTF8.self), nonce: Array(body[1..<(1 + PeerProof.nonceCount)]),
                credential: Array(body[(1 + PeerProof.nonceCount)...])))
        case 2:
            guard body.count == PeerProof.proofCount else { throw ConcordError(.malformed, "a proof of \(body.count) bytes") }
            return .proof(body)
        case 3: return .object(path: String(decoding: head, as: UTF8.self), bytes: body)
        default: return .ping
        }
    }
}
