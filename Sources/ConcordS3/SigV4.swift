import CSodium
import ConcordHTTP

/// AWS Signature Version 4 (`AWS4-HMAC-SHA256`), on libsodium's SHA-256 and HMAC-SHA-256.
///
/// One signer for two rule sets: generic AWS services normalize the path (`.` and `..`
/// segments, repeated slashes) before encoding it; S3 signs the object key exactly as sent,
/// encoded once. The whole public AWS SigV4 test suite runs against the generic rules
/// (ConcordHTTPTests), and the S3 tests sign every request to moto and Ceph RGW, which
/// check the signature.
///
/// Inputs are *decoded*: the path and query items as a person would write them. The
/// signer encodes them (RFC 3986 unreserved characters stay, everything else becomes
/// `%XX` of its UTF-8 bytes), and ``SigV4/encode(_:keepSlash:)`` gives the same encoding
/// for the URL actually sent, so what is signed is what is sent.
public struct SigV4: Sendable {
    /// An access key, its secret, and a session token for temporary credentials.
    public struct Credentials: Sendable, Equatable {
        public let accessKey: String
        public let secretKey: String
        public let sessionToken: String?

        public init(accessKey: String, secretKey: String, sessionToken: String? = nil) {
            self.accessKey = accessKey
            self.secretKey = secretKey
            self.sessionToken = sessionToken
        }
    }

    /// What a signature covers, and the signature itself.
    public struct Signature: Sendable, Equatable {
        public let canonicalRequest: String
        public let stringToSign: String
        public let signedHeaders: String
        /// The `Authorization` header's value.
        public let authorization: String
    }

    public let credentials: Credentials
    public let region: String
    public let service: String
    /// S3's rules: the path is signed as given (no normalization), encoded once.
    public let s3: Bool

    public init(credentials: Credentials, region: String, service: String = "s3", s3: Bool = true) {
        self.credentials = credentials
        self.region = region
        self.service = service
        self.s3 = s3
    }

    /// The hash S3 asks for in `x-amz-content-sha256` for an empty body.
    public static let emptyPayloadHash = hex(sha256([]))

    /// Signs a request. `date` is `YYYYMMDD'T'HHMMSS'Z'` and must also be sent as
    /// `x-amz-date` among `headers`; `payloadHash` is the hex SHA-256 of the body.
    public func sign(
        method: String, path: String, query: [(String, String)], headers: [(String, String)],
        payloadHash: String, date: String
    ) -> Signature {
        let (canonical, signed) = Self.canonicalRequest(
            method: method, path: path, query: query, headers: headers, payloadHash: payloadHash, normalizePath: !s3)
        let day = String(date.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let stringToSign = "AWS4-HMAC-SHA256\n\(date)\n\(scope)\n\(Self.hex(Self.sha256(Array(canonical.utf8))))"
        let signature = signature(stringToSign: stringToSign, day: day)
        return Signature(
            canonicalRequest: canonical, stringToSign: stringToSign, signedHeaders: signed,
            authorization: "AWS4-HMAC-SHA256 Credential=\(credentials.accessKey)/\(scope), SignedHeaders=\(signed), Signature=\(signature)")
    }

    /// The hex signature of `stringToSign` with the key derived for `day` (`YYYYMMDD`).
    public func signature(stringToSign: String, day: String) -> String {
        var key = Self.hmac(Array("AWS4\(credentials.secretKey)".utf8), Array(day.utf8))
        for part in [region, service, "aws4_request"] { key = Self.hmac(key, Array(part.utf8)) }
        return Self.hex(Self.hmac(key, Array(stringToSign.utf8)))
    }

    /// The canonical request and the signed-headers list.
    public static func canonicalRequest(
        method: String, path: String, query: [(String, String)], headers: [(String, String)],
        payloadHash: String, normalizePath: Bool
    ) -> (String, String) {
        let canonicalPath = normalizePath ? encode(normalized(path), keepSlash: true) : encode(path.isEmpty ? "/" : path, keepSlash: true)
        let canonicalQuery = query
            .map { (encode($0.0, keepSlash: false), encode($0.1, keepSlash: false)) }
            .sorted { $0.0 != $1.0 ? $0.0 < $1.0 : $0.1 < $1.1 }
            .map { "\($0.0)=\($0.1)" }
            .joined(separator: "&")
        var merged: [String: [String]] = [:]
        for (name, value) in headers {
            merged[name.lowercased(), default: []].append(trimmed(value))
        }
        let names = merged.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(merged[$0]!.joined(separator: ","))\n" }.joined()
        let signed = names.joined(separator: ";")
        return ([method, canonicalPath, canonicalQuery, canonicalHeaders, signed, payloadHash].joined(separator: "\n"), signed)
    }

    /// RFC 3986 encoding of `text`'s UTF-8 bytes: unreserved characters (and `/` when
    /// `keepSlash`) stay, every other byte is `%XX` in upper-case hex.
    public static func encode(_ text: String, keepSlash: Bool) -> String {
        PercentEncoding.encode(text, keepSlash: keepSlash)
    }

    /// The path with `.` and `..` segments resolved and repeated slashes collapsed (generic
    /// services only; S3 keys are signed as they are).
    static func normalized(_ path: String) -> String {
        var segments: [Substring] = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: true) {
            switch segment {
            case ".": continue
            case "..": _ = segments.popLast()
            default: segments.append(segment)
            }
        }
        let joined = "/" + segments.joined(separator: "/")
        return path.hasSuffix("/") && !segments.isEmpty ? joined + "/" : joined
    }

    /// A header value with its ends trimmed and inner runs of spaces made one.
    static func trimmed(_ value: String) -> String {
        var out = ""
        var lastWasSpace = false
        for character in value.trimmingSpaces() {
            if character == " " || character == "\t" {
                if !lastWasSpace { out.append(" ") }
                lastWasSpace = true
            } else {
                out.append(character)
                lastWasSpace = false
            }
        }
        return out
    }

    /// SHA-256 of `bytes`.
    public static func sha256(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBytes { sha256($0) }
    }

    /// SHA-256 of the bytes at `raw` (read in place: no copy of a large body).
    public static func sha256(_ raw: UnsafeRawBufferPointer) -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        if let base = raw.baseAddress, !raw.isEmpty {
            _ = crypto_hash_sha256(&digest, base.assumingMemoryBound(to: UInt8.self), UInt64(raw.count))
        } else {
            var none: UInt8 = 0  // a valid pointer for no bytes
            _ = crypto_hash_sha256(&digest, &none, 0)
        }
        return digest
    }

    /// HMAC-SHA-256 of `message` under `key` (any length).
    public static func hmac(_ key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var state = crypto_auth_hmacsha256_state()
        var mac = [UInt8](repeating: 0, count: Int(crypto_auth_hmacsha256_BYTES))
        let keyBytes = key.isEmpty ? [0] : key  // a valid pointer even for an empty key
        keyBytes.withUnsafeBufferPointer { _ = crypto_auth_hmacsha256_init(&state, $0.baseAddress!, key.count) }
        message.withUnsafeBufferPointer { m in
            if let base = m.baseAddress { _ = crypto_auth_hmacsha256_update(&state, base, UInt64(m.count)) }
        }
        _ = crypto_auth_hmacsha256_final(&state, &mac)
        return mac
    }

    /// Lower-case hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes { out += [digits[Int(byte >> 4)], digits[Int(byte & 15)]] }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A running SHA-256, for bodies hashed as they stream.
public struct SHA256Stream {
    private var state = crypto_hash_sha256_state()

    public init() { _ = crypto_hash_sha256_init(&state) }

    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { b in
            if let base = b.baseAddress { _ = crypto_hash_sha256_update(&state, base, UInt64(b.count)) }
        }
    }

    public mutating func finish() -> [UInt8] {
        var digest = [UInt8](repeating: 0, count: Int(crypto_hash_sha256_BYTES))
        _ = crypto_hash_sha256_final(&state, &digest)
        return digest
    }
}

extension String {
    func trimmingSpaces() -> Substring {
        var view = Substring(self)
        while let first = view.first, first == " " || first == "\t" { view = view.dropFirst() }
        while let last = view.last, last == " " || last == "\t" { view = view.dropLast() }
        return view
    }
}
