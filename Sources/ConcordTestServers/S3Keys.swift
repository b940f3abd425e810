import ConcordCore
import ConcordHTTP
import ConcordS3
import Foundation
import NIOHTTP1

/// Signed requests on any key of an S3 bucket, as anyone with the bucket's credentials can
/// send them: what an ``ConcordS3/S3Remote`` never does — objects at names outside the
/// layout (`heads/`, a `..` segment), keys beside or above a store's prefix, a multipart
/// upload that is never finished. Keys are sent as they are (S3 does not resolve `..`).
public struct S3Keys: Sendable {
    /// An answer that was not a success: the key cannot be written (or read) so.
    public struct Refused: Error, CustomStringConvertible {
        public let status: Int
        public let text: String
        public var description: String { "HTTP \(status) \(text.prefix(300))" }
    }

    public let bucket: String
    let origin: String
    let host: String
    let signer: SigV4
    let transport: HTTPTransport

    public init(_ server: RunningServer, bucket: String) {
        self.bucket = bucket
        origin = server.origin
        host = String(server.origin.drop { $0 != "/" }.dropFirst(2))
        signer = SigV4(credentials: .init(accessKey: server.accessKey, secretKey: server.secretKey), region: "us-east-1")
        transport = HTTPTransport(remoteName: "S3 bucket \(bucket) at \(server.origin)", retry: .init(attempts: 3, base: .milliseconds(50)))
    }

    public func put(_ key: String, _ bytes: [UInt8]) async throws {
        try check(await send("PUT", key, body: bytes))
    }

    /// The object at `key`, or nil if there is none.
    public func get(_ key: String) async throws -> [UInt8]? {
        let response = try await send("GET", key, limit: 64 << 20)
        if response.status == 404 { return nil }
        return try check(response).body
    }

    public func delete(_ key: String) async throws {
        let response = try await send("DELETE", key)
        if response.status != 404 { try check(response) }
    }

    /// Every key that starts with `prefix`.
    public func list(prefix: String = "") async throws -> [String] {
        var keys: [String] = []
        var token: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", prefix)]
            if let token { query.append(("continuation-token", token)) }
            let response = try check(await send("GET", nil, query: query, limit: 32 << 20))
            guard let answer = S3XML.parse(response.body, record: "Contents") else { throw Refused(status: response.status, text: response.text) }
            keys += answer.records.compactMap { $0["Key"] }
            token = answer.fields["IsTruncated"] == "true" ? answer.fields["NextContinuationToken"] : nil
        } while token != nil
        return keys
    }

    /// Starts a multipart upload at `key` and leaves it unfinished; returns its id.
    public func startUpload(_ key: String) async throws -> String {
        let response = try check(await send("POST", key, query: [("uploads", "")]))
        guard let id = S3XML.parse(response.body, record: "-")?.fields["UploadId"] else { throw Refused(status: response.status, text: response.text) }
        return id
    }

    /// The unfinished multipart uploads: key and id.
    public func uploads() async throws -> [(key: String, id: String)] {
        let response = try check(await send("GET", nil, query: [("uploads", "")], limit: 32 << 20))
        guard let answer = S3XML.parse(response.body, record: "Upload") else { throw Refused(status: response.status, text: response.text) }
        return answer.records.compactMap { record in record["Key"].flatMap { key in record["UploadId"].map { (key, $0) } } }
    }

    public func abort(_ key: String, id: String) async throws {
        let response = try await send("DELETE", key, query: [("uploadId", id)])
        if response.status != 404 { try check(response) }
    }

    @discardableResult
    func check(_ response: HTTPResponse) throws -> HTTPResponse {
        guard (200...299).contains(response.status) else { throw Refused(status: response.status, text: response.text) }
        return response
    }

    /// A signed path-style request; `key` nil addresses the bucket.
    func send(_ method: String, _ key: String?, query: [(String, String)] = [], body: [UInt8] = [], limit: UInt64 = 1 << 20) async throws -> HTTPResponse {
        let path = "/" + bucket + (key.map { "/" + $0 } ?? "")
        let payloadHash = SigV4.hex(SigV4.sha256(body))
        let (signer, host, origin) = (signer, host, origin)
        return try await transport.send(key ?? "bucket \(bucket)", body: method == "PUT" ? body : nil, limit: limit) { _ in
            let date = S3Remote.amzDate(Date())
            let headers = [("Host", host), ("x-amz-date", date), ("x-amz-content-sha256", payloadHash)]
            let signature = signer.sign(method: method, path: path, query: query, headers: headers, payloadHash: payloadHash, date: date)
            var http = HTTPHeaders(headers)
            http.add(name: "Authorization", value: signature.authorization)
            let queryText = query.map { $0.1.isEmpty && $0.0 == "uploads" ? "uploads" : "\(SigV4.encode($0.0, keepSlash: false))=\(SigV4.encode($0.1, keepSlash: true))" }
                .joined(separator: "&")
            return HTTPRequestSpec(method: HTTPMethod(rawValue: method), url: origin + SigV4.encode(path, keepSlash: true) + (queryText.isEmpty ? "" : "?" + queryText), headers: http)
        }
    }
}
