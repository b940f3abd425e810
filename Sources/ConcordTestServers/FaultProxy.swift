import ConcordHTTP
import Foundation
import NIOHTTP1

/// A loopback proxy in front of a running server that injects HTTP-level faults on demand
/// (`scripts/fault-proxy.py`): 503 or 429 with `Retry-After`, 500, 507, a connection reset or a
/// truncated response half-way through the body, a slow answer, a PUT answered 201 and
/// never stored, a PROPFIND answer without sizes.
public struct FaultProxy: Sendable {
    public enum Mode: String, Sendable {
        case status503, status429, status500, status507, reset, truncate, slow, unstored, sizeless
    }

    /// `http://127.0.0.1:PORT`: send requests here instead of to the server.
    public let origin: String
    let control: HTTPTransport

    /// Starts a proxy in front of `server`, stopped when this process ends.
    public static func start(in front: RunningServer) async throws -> FaultProxy {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("scripts/fault-proxy.py").path
        let port = try LoopbackServers.freePort()
        let log = front.directory + "/fault-proxy-\(port).log"
        try LoopbackServers.launch("python3 \(script) \(port) \(front.origin)", environment: [:], log: log)
        try await LoopbackServers.waitForPort(port, kind: front.kind, log: log)
        let origin = "http://127.0.0.1:\(port)"
        return FaultProxy(origin: origin, control: HTTPTransport(remoteName: "fault proxy at \(origin)", retry: .init(attempts: 1)))
    }

    /// The next `count` requests (of `method`, if given) get `mode`.
    public func arm(_ mode: Mode, count: Int = 1, method: String? = nil, delay: Double = 2) async throws {
        var url = "\(origin)/__fault?mode=\(mode.rawValue)&count=\(count)&delay=\(delay)"
        if let method { url += "&method=\(method)" }
        let target = url
        let response = try await control.send("fault control") { _ in HTTPRequestSpec(method: .POST, url: target) }
        guard response.status == 204 else { throw ServerUnavailable(description: "the fault proxy refused \(mode): \(response.status)") }
    }

    /// How many requests each mode hit so far.
    public func hits() async throws -> [Mode: Int] {
        let target = "\(origin)/__fault"
        let response = try await control.send("fault counts") { _ in HTTPRequestSpec(method: .GET, url: target) }
        var hits: [Mode: Int] = [:]
        for line in String(decoding: response.body, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: "=")
            if parts.count == 2, let mode = Mode(rawValue: String(parts[0])), let count = Int(parts[1]) { hits[mode] = count }
        }
        return hits
    }
}
