import ConcordCore
import ConcordHTTP
import ConcordRemote
import Foundation

/// An S3 remote's location: `s3://bucket/prefix`, with the endpoint (nil for AWS) and the
/// region as options or query items (`?endpoint=…&region=…`). Credentials are never part
/// of it: opening reads them from the AWS environment
/// (``SigV4/Credentials/fromEnvironment(_:)``). Opens an ``S3Remote``.
public struct S3Location: RemoteBackend {
    public let bucket: String
    /// The folder in the bucket, empty or ending in `/`.
    public let prefix: String
    /// `https://host[:port]` of an S3-compatible service, without a trailing `/`; nil for AWS.
    public let endpoint: String?
    public let region: String
    /// The retries of the remote it opens.
    public var retry: HTTPRetryPolicy = .init()

    public static let kind = "s3"
    public static let schemes = ["s3"]
    public static let example = "s3://bucket/prefix"
    public static let summary = "an S3 remote (s3://bucket/prefix)"
    public static var options: [String] { ["endpoint", "region"] }

    public var url: String {
        var components = URLComponents()
        components.scheme = "s3"
        components.host = bucket
        components.path = "/" + prefix
        components.queryItems = (endpoint.map { [URLQueryItem(name: "endpoint", value: $0)] } ?? []) + [URLQueryItem(name: "region", value: region)]
        return components.string ?? "s3://\(bucket)/\(prefix)"
    }

    /// The bucket and prefix, with a custom endpoint.
    public var display: String { "s3://\(bucket)/\(prefix)\(endpoint.map { " at \($0)" } ?? "")" }
    public var httpOrigin: String? { endpoint }
    public var credentialsNote: String? { "S3 credentials from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, or $AWS_PROFILE" }

    public func child(_ name: String) -> S3Location {
        S3Location(bucket: bucket, prefix: prefix + name + "/", endpoint: endpoint, region: region, retry: retry)
    }

    /// Its leftovers are abandoned multipart uploads.
    public static func sweptLeftovers(_ count: Int) -> String {
        "aborted \(count) multipart upload\(count == 1 ? "" : "s") abandoned over an hour ago"
    }

    /// An ``S3Remote`` signed with the credentials of `access`'s environment; a root check
    /// looks for the bucket and creates it when asked to.
    public func open(root: RootCheck, access: RemoteAccess) async throws -> any LeftoverSweeping {
        let remote = try S3Remote(
            bucket: bucket, prefix: prefix, endpoint: endpoint, region: region, credentials: try .fromEnvironment(access.environment), retry: retry)
        if root != .none, try await !remote.bucketExists() {
            if case let .mustExist(advice) = root {
                throw ConcordError(.noBucket, "the bucket \(bucket) does not exist at \(remote.endpoint) (region \(region)): check its name, the endpoint and the region, or \(advice)")
            }
            try await remote.createBucket()
        }
        return remote
    }
}

// Parsing sits in an extension so that the struct keeps its memberwise initializer.
extension S3Location {
    /// Parses `s3://bucket/prefix[?endpoint=…&region=…]`; `options` gives the endpoint and
    /// the region instead. The region defaults to `$AWS_REGION`, `$AWS_DEFAULT_REGION`, then
    /// `us-east-1`. Credentials, a port or another query item are refused.
    public init(parsing text: String, options: [String: String]) throws(RemoteLocationError) {
        let clipped = RemoteLocationError.clip(text)
        guard let parsed = URLComponents(string: text), let bucket = parsed.host, !bucket.isEmpty else {
            throw RemoteLocationError("'\(clipped)' names no bucket: give s3://bucket/prefix")
        }
        guard parsed.user == nil, parsed.password == nil, parsed.port == nil else {
            throw RemoteLocationError("'\(clipped)' is not s3://bucket/prefix: credentials come from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (or $AWS_PROFILE), an endpoint from --endpoint")
        }
        var query: [String: String] = [:]
        for item in parsed.queryItems ?? [] {
            guard ["endpoint", "region"].contains(item.name), let value = item.value, !value.isEmpty else {
                throw RemoteLocationError("'\(clipped)' has a query item '\(item.name)' Concord does not know: give --endpoint URL and --region R instead")
            }
            query[item.name] = value
        }
        let endpoint = options["endpoint"] ?? query["endpoint"]
        if let endpoint {
            guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), !(url.host ?? "").isEmpty,
                  url.path.isEmpty || url.path == "/", url.query == nil, url.user == nil else {
                throw RemoteLocationError("--endpoint '\(RemoteLocationError.clip(endpoint))' is not https://host[:port]")
            }
        }
        let environment = ProcessInfo.processInfo.environment
        let region = options["region"] ?? query["region"] ?? environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["AWS_DEFAULT_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        guard !region.isEmpty, region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw RemoteLocationError("--region '\(RemoteLocationError.clip(region))' is not a region name (like us-east-1)")
        }
        var prefix = parsed.path
        while prefix.hasPrefix("/") { prefix.removeFirst() }
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        guard !prefix.split(separator: "/", omittingEmptySubsequences: false).dropLast().contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw RemoteLocationError("the prefix '\(prefix)' has an empty, '.' or '..' part")
        }
        self.init(bucket: bucket, prefix: prefix, endpoint: endpoint.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }, region: region, retry: .init())
        do {
            _ = try S3Remote(bucket: bucket, prefix: prefix, endpoint: self.endpoint, region: region, credentials: .init(accessKey: "", secretKey: ""))
        } catch {
            throw RemoteLocationError(error.message)
        }
    }
}
