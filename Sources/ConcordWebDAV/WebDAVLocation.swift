import ConcordCore
import ConcordHTTP
import ConcordRemote
import Foundation

/// A WebDAV remote's location: `https://[user@]host[:port]/path/` (or `http://`), with
/// the user as the `user` option. The password is never part of it: opening reads it from
/// ``passwordVariable`` or asks (``/ConcordRemote/RemoteAccess``). Opens a ``WebDAVRemote``.
public struct WebDAVLocation: RemoteBackend {
    /// The canonical URL: scheme, `user@` if any, host, port, a path ending in `/`.
    public let url: String
    /// The user name HTTP Basic auth sends, if the server asks for one.
    public let user: String?
    /// The retries of the remote it opens.
    public var retry: HTTPRetryPolicy = .init()

    /// The environment variable the password is read from.
    public static let passwordVariable = "CONCORD_REMOTE_PASSWORD"

    public static let kind = "webdav"
    public static let schemes = ["https", "http"]
    public static let example = "https://host/path (WebDAV)"
    public static let summary = "a WebDAV remote (https://host/path)"
    public static var options: [String] { ["user"] }

    /// Parses `https://[user@]host/path`; `options["user"]` gives the user instead (both
    /// must then agree). A password in the URL, a query or a fragment is refused.
    public init(parsing text: String, options: [String: String]) throws(RemoteLocationError) {
        let clipped = RemoteLocationError.clip(text)
        guard let parsed = URLComponents(string: text), let scheme = parsed.scheme?.lowercased(), let host = parsed.host, !host.isEmpty else {
            throw RemoteLocationError("'\(clipped)' is not a WebDAV URL: give https://host/path/to/folder")
        }
        guard parsed.password == nil else {
            throw RemoteLocationError("the URL holds a password: never put it in the URL (the store would keep it); give the user with --user and the password in $\(Self.passwordVariable) or at the prompt")
        }
        guard parsed.query == nil, parsed.fragment == nil else {
            throw RemoteLocationError("'\(clipped)' has a query or a fragment: give https://host/path/to/folder")
        }
        let given = options["user"]
        if let given, let inURL = parsed.user, given != inURL {
            throw RemoteLocationError("the URL names user \(inURL) and --user \(given): give one")
        }
        let user = given ?? parsed.user
        if let user { guard !user.isEmpty, !user.contains(":") else { throw RemoteLocationError("the user name '\(user)' is empty or holds ':'") } }
        var path = parsed.path.isEmpty ? "/" : parsed.path
        if !path.hasSuffix("/") { path += "/" }
        var canonical = URLComponents()
        canonical.scheme = scheme
        canonical.user = user
        canonical.host = host
        canonical.port = parsed.port
        canonical.path = path
        guard let url = canonical.string else { throw RemoteLocationError("'\(clipped)' is not a WebDAV URL: give https://host/path/to/folder") }
        self.url = url
        self.user = user
    }

    init(url: String, user: String?, retry: HTTPRetryPolicy) {
        self.url = url
        self.user = user
        self.retry = retry
    }

    public var display: String { url }
    public var httpOrigin: String? { url }

    public var credentialsNote: String? {
        user.map { "WebDAV user \($0) (password from $\(Self.passwordVariable) or a prompt)" }
    }

    public func child(_ name: String) -> WebDAVLocation {
        WebDAVLocation(url: url + name + "/", user: user, retry: retry)
    }

    /// A ``WebDAVRemote``, with the password of ``user`` from ``passwordVariable`` or
    /// `access`'s question; a root check looks for the collection (PROPFIND) and makes it
    /// (MKCOL) when asked to.
    public func open(root: RootCheck, access: RemoteAccess) async throws -> any LeftoverSweeping {
        let password = try user.map { _ in try access.secret(Self.passwordVariable, for: "the WebDAV server \(url)", label: "Password") }
        let remote = try WebDAVRemote(url: url, user: user, password: password, retry: retry)
        if root != .none, try await !remote.rootExists() {
            if case let .mustExist(advice) = root {
                throw ConcordError(.noFolder, "the WebDAV folder \(url) does not exist: check the URL, or \(advice)")
            }
            try await remote.createRoot()
        }
        return remote
    }
}
