import ConcordCore
import ConcordHTTP
import ConcordRemote
import ConcordS3
import ConcordWebDAV
import Foundation

/// A fresh, empty remote on a running server: a new collection (WebDAV) or a new prefix in
/// a new bucket (S3), so tests running at once never see each other's objects.
public enum Backends {
    /// - Parameter origin: where to send the requests instead of the server itself (a
    ///   ``FaultProxy`` in front of it).
    public static func fresh(_ kind: ServerKind, through origin: String? = nil, retry: HTTPRetryPolicy = .init()) async throws -> any Remote {
        var server = try await LoopbackServers.shared.server(kind)
        if let origin { server.origin = origin }
        let name = "t" + UUID().uuidString.prefix(12).lowercased()
        switch kind {
        case .apache, .nginx, .nginxSelfSigned, .rclone, .rcloneAuth:
            let remote = kind == .rcloneAuth
                ? try WebDAVRemote(url: "\(server.origin)/stores/\(name)", user: ServerKind.webDAVUser, password: ServerKind.webDAVPassword, retry: retry)
                : try WebDAVRemote(url: "\(server.origin)/stores/\(name)", retry: retry)
            try await remote.createRoot()
            return remote
        case .moto, .motoSigned, .rgw:
            let remote = try s3(server, bucket: name, prefix: "store/", retry: retry)
            try await remote.createBucket()
            return remote
        }
    }

    public static func s3(_ server: RunningServer, bucket: String, prefix: String, secret: String? = nil, retry: HTTPRetryPolicy = .init()) throws -> S3Remote {
        try S3Remote(
            bucket: bucket, prefix: prefix, endpoint: server.origin, region: "us-east-1",
            credentials: .init(accessKey: server.accessKey, secretKey: secret ?? server.secretKey), retry: retry)
    }
}
