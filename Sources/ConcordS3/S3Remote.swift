import AsyncHTTPClient
import ConcordCore
import ConcordHTTP
import ConcordRemote
import Foundation
import NIOCore
import NIOHTTP1

/// A ``/ConcordRemote/Remote`` over S3-compatible object storage: AWS S3, Cloudflare R2,
/// Backblaze B2, Wasabi, MinIO, Ceph RGW, Garage. Objects are keys `prefix + path` in one
/// bucket.
///
/// How it talks, and why:
/// - **Signature V4** on every request (``SigV4``), with the payload's SHA-256; a session
///   token is signed too. Path-style (`endpoint/bucket/key`, the default for a custom
///   endpoint: MinIO, RGW and moto need it) or virtual-hosted addressing (`bucket.host/key`,
///   the default on AWS).
/// - **Listings** are `ListObjectsV2` with the prefix, following continuation tokens; only
///   layout names are returned.
/// - **Files over 8 MiB go up in parts** (``partSize``): each part is retried on its own;
///   a failed upload is aborted; uploads abandoned by a crash are aborted by
///   ``sweepLeftovers(olderThan:now:)`` (run by `concord compact`). Memory stays one part.
///   No ETag is trusted: RGW answers a completed upload with an empty one.
/// - A missing bucket is ``/ConcordRemote/ConcordCore/ConcordError/Code/remoteMissing``, a refused key or
///   secret ``/ConcordRemote/ConcordCore/ConcordError/Code/remoteAuth`` — never "an empty store".
/// - Retries, timeouts and wording: ``/ConcordHTTP/HTTPTransport``.
public struct S3Remote: LeftoverSweeping {
    public let bucket: String
    /// The key prefix of the store: empty, or ending in `/`.
    public let prefix: String
    public let region: String
    /// `scheme://host[:port]` of the endpoint.
    public let endpoint: String
    public let pathStyle: Bool
    let signer: SigV4
    let transport: HTTPTransport
    /// The `Host` header value (and URL authority) of requests.
    let host: String
    let scheme: String

    /// Files larger than this go up as multipart uploads of parts this large: 8 MiB.
    public static let partSize = 8 << 20

    /// - Parameters:
    ///   - bucket: the bucket's name.
    ///   - prefix: the folder in the bucket that holds the store (may be empty).
    ///   - endpoint: `https://host[:port]` of an S3-compatible service; nil for AWS
    ///     (`https://s3.<region>.amazonaws.com`).
    ///   - region: the region requests are signed for (`us-east-1` when the service has
    ///     none).
    ///   - credentials: the access key and secret that sign every request
    ///     (``SigV4/Credentials/fromEnvironment(_:)`` reads them as the AWS tools do).
    ///   - pathStyle: nil chooses path-style for a custom endpoint, virtual-hosted for AWS.
    ///   - retry: how failed requests are retried (``/ConcordHTTP/HTTPRetryPolicy``).
    ///   - bounds: how long a read may take (``/ConcordHTTP/HTTPBounds``).
    public init(
        bucket: String, prefix: String = "", endpoint: String? = nil, region: String = "us-east-1",
        credentials: SigV4.Credentials, pathStyle: Bool? = nil, retry: HTTPRetryPolicy = .init(), bounds: HTTPBounds = .init()
    ) throws(ConcordError) {
        guard !bucket.isEmpty, bucket.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "." || $0 == "_" }) else {
            throw ConcordError(.invalidOperation, "'\(bucket)' is not a bucket name: use letters, digits, '-' and '.'")
        }
        let endpointText = endpoint ?? "https://s3.\(region).amazonaws.com"
        guard let url = URLComponents(string: endpointText), let scheme = url.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = url.host, !host.isEmpty else {
            throw ConcordError(.invalidOperation, "'\(endpointText)' is not an endpoint: give https://host[:port]")
        }
        self.bucket = bucket
        var trimmed = prefix
        while trimmed.hasPrefix("/") { trimmed.removeFirst() }
        if !trimmed.isEmpty && !trimmed.hasSuffix("/") { trimmed += "/" }
        self.prefix = trimmed
        self.region = region
        self.scheme = scheme
        let port = url.port.map { ":\($0)" } ?? ""
        self.endpoint = "\(scheme)://\(host)\(port)"
        let usePathStyle = pathStyle ?? (endpoint != nil)
        self.pathStyle = usePathStyle
        self.host = usePathStyle ? host + port : "\(bucket).\(host)\(port)"
        signer = SigV4(credentials: credentials, region: region)
        transport = HTTPTransport(remoteName: "S3 remote s3://\(bucket)/\(trimmed) at \(self.endpoint)", retry: retry, bounds: bounds)
    }

    // MARK: - Remote

    public func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let limit = RemoteLayout.maxObjectSize(forPath: path)
        guard UInt64(bytes.count) <= limit else { throw ConcordError.objectTooLarge(path, size: UInt64(bytes.count), limit: limit) }
        try await putObject(path, bytes)
    }

    public func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        try await get(path, limit: RemoteLayout.maxObjectSize(forPath: path))
    }

    public func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        try RemoteLayout.validateObjectPath(path)
        let response = try await request("GET", key: prefix + path, object: path, limit: limit)
        switch response.status {
        case 200: return response.body
        case 404 where errorCode(response) != "NoSuchBucket": return nil
        default: throw failure(response, path, doing: "read")
        }
    }

    public func delete(_ path: String) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let response = try await request("DELETE", key: prefix + path, object: path)
        guard (200...299).contains(response.status) || (response.status == 404 && errorCode(response) != "NoSuchBucket") else {
            throw failure(response, path, doing: "delete")
        }
    }

    public func list(prefix listPrefix: String) async throws(ConcordError) -> [RemoteObject] {
        try RemoteLayout.validatePrefix(listPrefix)
        var objects: [RemoteObject] = []
        var token: String?
        var pages = Pages(remote: transport.remoteName, listing: listPrefix.isEmpty ? "the store" : listPrefix, limit: transport.bounds.maxListingPages)
        repeat {
            try pages.next()
            var query = [("list-type", "2"), ("prefix", prefix + listPrefix)]
            if let token { query.append(("continuation-token", token)) }
            var (response, reader) = try await request(
                "GET", key: "", object: pages.listing, query: query, limit: RemoteLayout.maxListingPageSize, reader: S3XML.answer(record: "Contents"))
            guard response.status == 200 else { throw failure(response, listPrefix.isEmpty ? "the store" : listPrefix, doing: "list") }
            guard let answer = reader?.finish()?.result, answer.root == "ListBucketResult" else {
                throw ConcordError(.remote, "\(transport.remoteName) answered a listing with XML that does not parse: is the endpoint an S3 service?")
            }
            for record in answer.records {
                guard let key = record["Key"], key.hasPrefix(prefix) else { continue }
                let path = String(key.dropFirst(prefix.count))
                guard path.hasPrefix(listPrefix), RemoteLayout.parse(path) != nil else { continue }
                objects.append(RemoteObject(
                    path: path, size: record["Size"].flatMap { UInt64($0) },
                    modified: record["LastModified"].flatMap(HTTPDate.iso8601Millis)))
            }
            let truncated = answer.fields["IsTruncated"] == "true"
            let next = answer.fields["NextContinuationToken"].flatMap { $0.isEmpty ? nil : $0 }
            if truncated, next == nil {
                throw ConcordError(.remote, "\(transport.remoteName) said a listing of \(listPrefix) goes on but gave no continuation token; nothing local was lost, the next sync tries again")
            }
            token = truncated ? next : nil
            if let token { try pages.follow(token) }
        } while token != nil
        return objects
    }

    public func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        // One part in memory at a time, filled to exactly `partSize` in the buffer the
        // request sends (hashed in place for the signature); what a chunk holds past the
        // part's end starts the next one.
        var carry: [UInt8] = []
        var ended = false
        // One buffer serves every part (it grows to a part's size only for a file that
        // large): refilling it allocates nothing, so memory stays flat through a
        // multi-gigabyte upload.
        var part = ByteBuffer()
        func nextPart() throws(ConcordError) {
            part.clear()
            part.writeBytes(carry)
            carry = []
            while !ended, part.readableBytes < Self.partSize {
                let chunk = try read()
                if chunk.isEmpty { ended = true; break }
                let room = Self.partSize - part.readableBytes
                if chunk.count <= room {
                    part.writeBytes(chunk)
                } else {
                    part.writeBytes(chunk[..<room])
                    carry = Array(chunk[room...])
                }
            }
        }
        try nextPart()
        if ended && carry.isEmpty {
            try await putObject(path, part)
            return
        }
        let upload = try await createMultipartUpload(path)
        var numbers: [(Int, String)] = []
        do throws(ConcordError) {
            var number = 1
            while true {
                let etag = try await uploadPart(path, uploadID: upload, number: number, body: part)
                numbers.append((number, etag))
                number += 1
                if ended && carry.isEmpty { break }
                try nextPart()
                if part.readableBytes == 0 { break }
            }
            try await completeMultipartUpload(path, uploadID: upload, parts: numbers)
        } catch {
            await abortMultipartUpload(path, uploadID: upload)
            throw error
        }
    }

    public func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await getStream(path, limit: .max, write: write)
    }

    public func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try RemoteLayout.validateObjectPath(path)
        let key = prefix + path
        return try await transport.stream(
            path, limit: limit,
            prepare: { _ in self.spec("GET", key: key, query: [], payloadHash: SigV4.emptyPayloadHash, extra: []) },
            accept: { (response) throws(ConcordError) -> Bool in
                switch response.status {
                case 200: return true
                case 404 where self.errorCode(response) != "NoSuchBucket": return false
                default: throw self.failure(response, path, doing: "read")
                }
            },
            write: write)
    }

    // MARK: - Bucket and leftovers

    /// Creates the bucket (for `remote set --create`); one that exists and is ours is fine.
    public func createBucket() async throws(ConcordError) {
        let body: [UInt8] = region == "us-east-1" ? [] : Array("""
            <CreateBucketConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><LocationConstraint>\(region)</LocationConstraint></CreateBucketConfiguration>
            """.utf8)
        let response = try await request("PUT", key: nil, object: "bucket \(bucket)", body: body)
        guard (200...299).contains(response.status) || errorCode(response) == "BucketAlreadyOwnedByYou" else {
            throw failure(response, "bucket \(bucket)", doing: "create")
        }
    }

    /// Whether the bucket exists (and these credentials may list it).
    public func bucketExists() async throws(ConcordError) -> Bool {
        let response = try await request("GET", key: "", object: "bucket \(bucket)", query: [("list-type", "2"), ("max-keys", "0")])
        if response.status == 200 { return true }
        if response.status == 404 && errorCode(response) == "NoSuchBucket" { return false }
        throw failure(response, "bucket \(bucket)", doing: "list")
    }

    /// Aborts the multipart uploads below the store's prefix started more than `age` ms
    /// before `now` — uploads a crash or a lost connection abandoned, whose parts the
    /// service keeps (and bills) until aborted. Returns how many it aborted.
    public func sweepLeftovers(olderThan age: UInt64, now: UInt64) async throws(ConcordError) -> Int {
        var aborted = 0
        var keyMarker: String?
        var uploadMarker: String?
        var pages = Pages(remote: transport.remoteName, listing: "multipart uploads", limit: transport.bounds.maxListingPages)
        repeat {
            try pages.next()
            var query = [("uploads", ""), ("prefix", prefix)]
            if let keyMarker { query.append(("key-marker", keyMarker)) }
            if let uploadMarker { query.append(("upload-id-marker", uploadMarker)) }
            var (response, reader) = try await request(
                "GET", key: "", object: pages.listing, query: query, limit: RemoteLayout.maxListingPageSize, reader: S3XML.answer(record: "Upload"))
            guard response.status == 200, let answer = reader?.finish()?.result else {
                throw failure(response, "multipart uploads", doing: "list")
            }
            for upload in answer.records {
                guard let key = upload["Key"], let id = upload["UploadId"], key.hasPrefix(prefix) else { continue }
                let started = upload["Initiated"].flatMap(HTTPDate.iso8601Millis) ?? 0
                guard started + age <= now else { continue }
                let abort = try await request("DELETE", key: key, object: key, query: [("uploadId", id)])
                if (200...299).contains(abort.status) || abort.status == 404 { aborted += 1 }
            }
            let truncated = answer.fields["IsTruncated"] == "true"
            keyMarker = truncated ? answer.fields["NextKeyMarker"] : nil
            uploadMarker = truncated ? answer.fields["NextUploadIdMarker"] : nil
            if let keyMarker { try pages.follow(keyMarker + "\u{0}" + (uploadMarker ?? "")) }
        } while keyMarker != nil
        return aborted
    }

    // MARK: - Multipart

    func createMultipartUpload(_ path: String) async throws(ConcordError) -> String {
        let response = try await request("POST", key: prefix + path, object: path, query: [("uploads", "")], extra: [("Content-Type", "application/octet-stream")])
        guard response.status == 200, let answer = S3XML.parse(response.body, record: "-"), let id = answer.fields["UploadId"], !id.isEmpty else {
            throw failure(response, path, doing: "start an upload of")
        }
        return id
    }

    func uploadPart(_ path: String, uploadID: String, number: Int, body: ByteBuffer) async throws(ConcordError) -> String {
        let response = try await request(
            "PUT", key: prefix + path, object: "\(path) part \(number)", query: [("partNumber", String(number)), ("uploadId", uploadID)], buffer: body)
        guard response.status == 200 else { throw failure(response, "\(path) part \(number)", doing: "upload") }
        return response.headers.first(name: "ETag") ?? ""
    }

    func completeMultipartUpload(_ path: String, uploadID: String, parts: [(Int, String)]) async throws(ConcordError) {
        let xml = "<CompleteMultipartUpload>" + parts.map { "<Part><PartNumber>\($0.0)</PartNumber><ETag>\(Self.escape($0.1))</ETag></Part>" }.joined() + "</CompleteMultipartUpload>"
        let response = try await request("POST", key: prefix + path, object: path, query: [("uploadId", uploadID)], body: Array(xml.utf8))
        // S3 may answer 200 and put an error in the body (the upload failed while it waited).
        guard response.status == 200, S3XML.parse(response.body, record: "-")?.root != "Error" else {
            throw failure(response, path, doing: "complete the upload of")
        }
    }

    func abortMultipartUpload(_ path: String, uploadID: String) async {
        _ = try? await request("DELETE", key: prefix + path, object: path, query: [("uploadId", uploadID)])
    }

    // MARK: - Requests

    func putObject(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try await putObject(path, ByteBuffer(bytes: bytes))
    }

    func putObject(_ path: String, _ buffer: ByteBuffer) async throws(ConcordError) {
        let response = try await request("PUT", key: prefix + path, object: path, buffer: buffer, extra: [("Content-Type", "application/octet-stream")])
        guard (200...299).contains(response.status) else { throw failure(response, path, doing: "write") }
    }

    /// A signed request. `key` nil addresses the bucket itself (`PUT /bucket`); "" its
    /// root (listings).
    func request(
        _ method: String, key: String?, object: String, query: [(String, String)] = [], body: [UInt8]? = nil,
        limit: UInt64 = 1 << 20, extra: [(String, String)] = []
    ) async throws(ConcordError) -> HTTPResponse {
        let payloadHash = SigV4.hex(SigV4.sha256(body ?? []))
        return try await transport.send(object, body: body, limit: limit) { _ in
            self.spec(method, key: key, query: query, payloadHash: payloadHash, extra: extra)
        }
    }

    /// A signed request without a body whose successful answer is read by `reader` as it
    /// arrives (a listing page, parsed as it comes): `reader` comes back for a 2xx answer,
    /// nil otherwise.
    func request<Reader: HTTPBodyReader>(
        _ method: String, key: String?, object: String, query: [(String, String)], limit: UInt64, reader: Reader
    ) async throws(ConcordError) -> (HTTPResponse, Reader?) {
        let payloadHash = SigV4.hex(SigV4.sha256([]))
        return try await transport.send(object, limit: limit, reader: { reader }) { _ in
            self.spec(method, key: key, query: query, payloadHash: payloadHash, extra: [])
        }
    }

    /// ``request(_:key:object:query:body:limit:extra:)`` with the body in a buffer, hashed
    /// and sent in place.
    func request(
        _ method: String, key: String?, object: String, query: [(String, String)] = [], buffer: ByteBuffer,
        limit: UInt64 = 1 << 20, extra: [(String, String)] = []
    ) async throws(ConcordError) -> HTTPResponse {
        let payloadHash = SigV4.hex(buffer.withUnsafeReadableBytes { SigV4.sha256($0) })
        return try await transport.send(object, buffer: buffer, limit: limit) { _ in
            self.spec(method, key: key, query: query, payloadHash: payloadHash, extra: extra)
        }
    }

    func spec(_ method: String, key: String?, query: [(String, String)], payloadHash: String, extra: [(String, String)]) -> HTTPRequestSpec {
        var path: String
        if pathStyle {
            path = "/" + bucket + (key.map { $0.isEmpty ? "" : "/" + $0 } ?? "")
        } else {
            path = "/" + (key ?? "")
        }
        if path.isEmpty { path = "/" }
        let date = Self.amzDate(Date())
        var headers: [(String, String)] = [("Host", host), ("x-amz-date", date), ("x-amz-content-sha256", payloadHash)]
        if let token = signer.credentials.sessionToken { headers.append(("x-amz-security-token", token)) }
        headers += extra
        let signature = signer.sign(method: method, path: path, query: query, headers: headers, payloadHash: payloadHash, date: date)
        var httpHeaders = HTTPHeaders(headers)
        httpHeaders.add(name: "Authorization", value: signature.authorization)
        // A `/` in a query value goes unencoded: S3 decodes either form before it signs, and
        // moto re-encodes a `%2F` as `/` before checking the signature.
        let queryText = query.map { $0.1.isEmpty && $0.0 == "uploads" ? "uploads" : "\(SigV4.encode($0.0, keepSlash: false))=\(SigV4.encode($0.1, keepSlash: true))" }
            .joined(separator: "&")
        let url = "\(scheme)://\(host)\(SigV4.encode(path, keepSlash: true))\(queryText.isEmpty ? "" : "?" + queryText)"
        return HTTPRequestSpec(method: HTTPMethod(rawValue: method), url: url, headers: httpHeaders)
    }

    /// The `Code` of an S3 error body.
    func errorCode(_ response: HTTPResponse) -> String? {
        S3XML.parse(response.body, record: "-")?.fields["Code"]
    }

    func failure(_ response: HTTPResponse, _ object: String, doing: String) -> ConcordError {
        let answer = S3XML.parse(response.body, record: "-")
        let code = answer?.fields["Code"] ?? ""
        let message = answer?.fields["Message"] ?? ""
        let detail = [code, message].filter { !$0.isEmpty }.joined(separator: ": ")
        switch code {
        case "NoSuchBucket":
            return ConcordError(.remoteMissing, "\(transport.remoteName): bucket \(bucket) does not exist: check the name, --endpoint and --region, or create it (`concord remote set s3://\(bucket)/… --create`); nothing local was lost")
        case "SignatureDoesNotMatch":
            return ConcordError(.remoteAuth, "\(transport.remoteName) refused the signature of \(object) (SignatureDoesNotMatch): the secret key does not belong to the access key — check AWS_SECRET_ACCESS_KEY; nothing local was lost")
        case "InvalidAccessKeyId":
            return ConcordError(.remoteAuth, "\(transport.remoteName) does not know the access key (InvalidAccessKeyId): check AWS_ACCESS_KEY_ID (or the profile) and --endpoint; nothing local was lost")
        case "QuotaExceeded", "EntityTooLarge", "InsufficientStorage":
            return ConcordError(.remoteFull, "\(transport.remoteName) refused \(object) (\(detail)): raise the quota or free space, then sync again; nothing local was lost")
        default:
            return transport.unexpected(response, object: object, doing: doing, detail: detail.isEmpty ? nil : detail)
        }
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;").replacingOccurrences(of: ">", with: "&gt;")
            .replacingOccurrences(of: "\"", with: "&quot;")
    }

    /// `YYYYMMDD'T'HHMMSS'Z'` in UTC.
    public static func amzDate(_ date: Date) -> String {
        let seconds = Int64(date.timeIntervalSince1970)
        let days = seconds / 86_400
        let rest = seconds % 86_400
        // Civil from days (Howard Hinnant's algorithm).
        let z = days + 719_468
        let era = z / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yoe + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ n: Int64) -> String { n < 10 ? "0\(n)" : "\(n)" }
        return "\(year)\(two(month))\(two(day))T\(two(rest / 3600))\(two(rest / 60 % 60))\(two(rest % 60))Z"
    }
}
