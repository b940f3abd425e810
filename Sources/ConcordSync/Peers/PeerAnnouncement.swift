import ConcordCore
import ConcordRemote
import Foundation

/// Where a replica's LAN peer channel listens, as it announces it on the remote
/// (`heads/peers/<tag>`, docs/ARCHITECTURE.md, "The peer channel"): sealed under the store
/// key (signed in a shared store), so the storage reads nothing of it and members read
/// addresses.
public struct PeerAnnouncement: Hashable, Sendable, Codable, CustomStringConvertible {
    /// The replica whose channel listens.
    public var replica: ReplicaID
    /// The IPv4 addresses it listens on: its interfaces' non-loopback ones, then loopback.
    public var addresses: [String]
    /// The port it listens on.
    public var port: UInt16
    /// When it was written, and when it stops holding (milliseconds since the epoch).
    public var written: UInt64
    public var expires: UInt64

    /// The longest an announcement may say it holds: a day.
    public static let maxLifetime: UInt64 = 86_400_000

    public init(replica: ReplicaID, addresses: [String], port: UInt16, written: UInt64, expires: UInt64) {
        self.replica = replica
        self.addresses = addresses
        self.port = port
        self.written = written
        self.expires = expires
    }

    public var description: String {
        "\(replica) at \(addresses.map { "\($0):\(port)" }.joined(separator: ", "))"
    }

    /// Whether it no longer holds at `now`.
    public func isExpired(at now: UInt64) -> Bool { now >= expires }

    private enum CodingKeys: String, CodingKey { case replica, addresses, port, written, expires }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .replica)
        guard let replica = ReplicaID(hex: text), replica.description == text else {
            throw DecodingError.dataCorruptedError(forKey: .replica, in: container, debugDescription: "not a replica id")
        }
        self.replica = replica
        addresses = try container.decode([String].self, forKey: .addresses)
        port = try container.decode(UInt16.self, forKey: .port)
        written = try container.decode(UInt64.self, forKey: .written)
        expires = try container.decode(UInt64.self, forKey: .expires)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(replica.description, forKey: .replica)
        try container.encode(addresses, forKey: .addresses)
        try container.encode(port, forKey: .port)
        try container.encode(written, forKey: .written)
        try container.encode(expires, forKey: .expires)
    }

    /// The JSON written (sealed) at its name.
    func json() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return Array((try? encoder.encode(self)) ?? Data())
    }

    /// The replica an announcement's JSON names (before the rest is checked).
    static func replica(in json: [UInt8], path: String) throws(ConcordError) -> ReplicaID {
        try decode(json, path: path).replica
    }

    /// Decodes and checks an announcement's JSON: a port, 1 to
    /// `RemoteLayout.maxAnnouncedAddresses` IPv4 addresses in dotted-quad form, and a lifetime
    /// of at most ``maxLifetime``. Throws `malformed` otherwise.
    static func decode(_ json: [UInt8], path: String) throws(ConcordError) -> PeerAnnouncement {
        let announcement: PeerAnnouncement
        do {
            announcement = try JSONDecoder().decode(PeerAnnouncement.self, from: Data(json))
        } catch {
            throw ConcordError(.malformed, "peer announcement \(path) does not parse")
        }
        guard announcement.port != 0, (1...RemoteLayout.maxAnnouncedAddresses).contains(announcement.addresses.count),
            announcement.addresses.allSatisfy(isIPv4), announcement.expires > announcement.written,
            announcement.expires - announcement.written <= maxLifetime
        else {
            throw ConcordError(.malformed, "peer announcement \(path) names no port, no addresses, too many, one that is not IPv4, or a lifetime past a day")
        }
        return announcement
    }

    /// Whether `text` is an IPv4 address as `a.b.c.d` (each 0–255, no leading zeros).
    static func isIPv4(_ text: String) -> Bool {
        let parts = text.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { part in
            guard (1...3).contains(part.count), part.allSatisfy(\.isASCII), part.allSatisfy(\.isNumber), let value = Int(part) else { return false }
            return value <= 255 && (part.count == 1 || part.first != "0")
        }
    }
}
