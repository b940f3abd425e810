import ConcordCore
import ConcordHTTP
import ConcordRemote
import ConcordS3
import ConcordWebDAV
import Foundation

/// A fresh, empty remote on a running server: a new collection (WebDAV) or a new prefix in
/// a new bucket (S3), so tests running at once never see each other's objects.
public enum Backends {
    /// The backends the loopback servers speak, each with the servers that speak it.
    public static let all: [any LoopbackBackend.Type] = [WebDAVLocation.self, S3Location.self]

    /// - Parameter origin: where to send the requests instead of the server itself (a
    ///   ``FaultProxy`` in front of it).
    public static func fresh(_ kind: ServerKind, through origin: String? = nil, retry: HTTPRetryPolicy = .init()) async throws -> any Remote {
        var server = try await LoopbackServers.shared.server(kind)
        if let origin { server.origin = origin }
        guard let backend = all.first(where: { $0.servers.contains(kind) }) else {
            throw ServerUnavailable(description: "no backend speaks to \(kind)")
        }
        return try await backend.fresh(on: server, root: "t" + UUID().uuidString.prefix(12).lowercased(), retry: retry)
    }

    public static func s3(_ server: RunningServer, bucket: String, prefix: String, secret: String? = nil, retry: HTTPRetryPolicy = .init()) throws -> S3Remote {
        try S3Remote(
            bucket: bucket, prefix: prefix, endpoint: server.origin, region: "us-east-1",
            credentials: .init(accessKey: server.accessKey, secretKey: secret ?? server.secretKey), retry: retry)
    }
}

/// A backend the loopback servers speak: which of them do, and how a client names a new
/// root on one — the URL, the options and the environment that carries the credentials,
/// as a person gives them to the command line.
public protocol LoopbackBackend: RemoteBackend {
    static var servers: [ServerKind] { get }
    static func root(_ name: String, on server: RunningServer) -> (url: String, options: [String: String], environment: [String: String])
    var retry: HTTPRetryPolicy { get set }
}

extension LoopbackBackend {
    /// The root `name` on `server`, parsed, opened and created as the command line does.
    static func fresh(on server: RunningServer, root name: String, retry: HTTPRetryPolicy) async throws -> any Remote {
        let root = root(name, on: server)
        var location = try Self(parsing: root.url, options: root.options)
        location.retry = retry
        return try await location.open(root: .createIfMissing, access: RemoteAccess(environment: root.environment))
    }
}

extension WebDAVLocation: LoopbackBackend {
    public static let servers: [ServerKind] = [.apache, .nginx, .nginxSelfSigned, .rclone, .rcloneAuth]

    /// A collection below `/stores/`; ``ServerKind/rcloneAuth`` with its user and password.
    public static func root(_ name: String, on server: RunningServer) -> (url: String, options: [String: String], environment: [String: String]) {
        let url = "\(server.origin)/stores/\(name)"
        guard server.kind == .rcloneAuth else { return (url, [:], [:]) }
        return (url, ["user": ServerKind.webDAVUser], [passwordVariable: ServerKind.webDAVPassword])
    }
}

extension S3Location: LoopbackBackend {
    public static let servers: [ServerKind] = [.moto, .motoSigned, .rgw]

    /// The prefix `store/` of a new bucket `name`, signed with the server's key.
    public static func root(_ name: String, on server: RunningServer) -> (url: String, options: [String: String], environment: [String: String]) {
        ("s3://\(name)/store/", ["endpoint": server.origin, "region": "us-east-1"],
         ["AWS_ACCESS_KEY_ID": server.accessKey, "AWS_SECRET_ACCESS_KEY": server.secretKey])
    }
}
