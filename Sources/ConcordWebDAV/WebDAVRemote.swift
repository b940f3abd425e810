import AsyncHTTPClient
import ConcordCore
import ConcordHTTP
import ConcordRemote
import Foundation
import NIOHTTP1
import Synchronization

/// A ``/ConcordRemote/Remote`` over WebDAV: Nextcloud, ownCloud, Synology, Box, Apache
/// `mod_dav`, nginx `dav-ext`, `rclone serve webdav`. The URL names the collection that is
/// the store's root; objects are resources at their layout paths below it.
///
/// How it talks, and why:
/// - **PUT, GET, DELETE; MKCOL on demand.** A put is tried first; only when the server
///   answers that the parent collection is missing (409, or 404 on some servers) are the
///   missing collections made, top down (405 "already exists" is success), and the put sent
///   again. A streamed put cannot be sent twice, so it makes its parents first (once per
///   collection and remote value).
/// - **Listings walk PROPFIND `Depth: 1`** per collection, never `Depth: infinity` (off on
///   most servers, and one that quietly answers it as `1` would hide objects). Only layout
///   folders are entered and only layout names returned; sub-collections are listed
///   concurrently (eight at a time). Hrefs may be absolute URLs or paths, percent-encoded
///   or not, with or without a trailing slash: all are accepted.
/// - **A missing root is an error, never an empty store** (``/ConcordRemote/ConcordCore/ConcordError/Code/remoteMissing``).
/// - **Conditional requests are never required**: nginx and rclone ignore them.
/// - **Streams use constant memory**: a streamed put is sent chunked as `read` produces it,
///   a streamed get hands chunks of at most 1 MiB to `write`.
/// - **A 200 to a put that was not stored** cannot be seen at the put; the sync's hourly
///   check of listed sizes finds it and puts the object again.
/// - Retries, timeouts and error wording: ``/ConcordHTTP/HTTPTransport``. The password is
///   sent only as HTTP Basic auth; use `https://` except on loopback.
public struct WebDAVRemote: LeftoverSweeping {
    /// The root collection's URL, ending in `/`.
    public let url: String
    let origin: String
    /// The root collection's path, percent-decoded, ending in `/`.
    let rootPath: String
    /// The root's path as sent (percent-encoded), ending in `/`.
    let encodedRootPath: String
    let authorization: String?
    let transport: HTTPTransport
    let collections: KnownCollections

    /// Collections known to exist, so streamed puts make their parents once.
    final class KnownCollections: Sendable {
        let paths = Mutex<Set<String>>([])
    }

    /// A remote at `url` (`https://host[:port]/path`; `http://` works too). `user` and
    /// `password` are sent as HTTP Basic auth when `user` is given; `bounds` say how long a
    /// read may take (``/ConcordHTTP/HTTPBounds``).
    public init(url: String, user: String? = nil, password: String? = nil, retry: HTTPRetryPolicy = .init(), bounds: HTTPBounds = .init()) throws(ConcordError) {
        guard let parsed = URLComponents(string: url), let scheme = parsed.scheme?.lowercased(), scheme == "http" || scheme == "https",
              let host = parsed.host, !host.isEmpty else {
            throw ConcordError(.invalidOperation, "'\(url)' is not a WebDAV URL: give https://host/path/to/folder")
        }
        let port = parsed.port.map { ":\($0)" } ?? ""
        let hostPart = host.contains(":") ? "[\(host)]" : host
        origin = "\(scheme)://\(hostPart)\(port)"
        var path = parsed.path.isEmpty ? "/" : parsed.path
        if !path.hasSuffix("/") { path += "/" }
        rootPath = path
        encodedRootPath = PercentEncoding.encode(path, keepSlash: true)
        self.url = origin + encodedRootPath
        if let user {
            authorization = "Basic " + Data("\(user):\(password ?? "")".utf8).base64EncodedString()
        } else {
            authorization = nil
        }
        transport = HTTPTransport(remoteName: "WebDAV remote \(origin + encodedRootPath)", retry: retry, bounds: bounds)
        collections = KnownCollections()
    }

    // MARK: - Remote

    public func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let limit = RemoteLayout.maxObjectSize(forPath: path)
        guard UInt64(bytes.count) <= limit else { throw ConcordError.objectTooLarge(path, size: UInt64(bytes.count), limit: limit) }
        // Parents first, unless a listing or an earlier put showed them: nginx answers a put
        // below a missing collection with 500, which is indistinguishable from a failure.
        try await makeParents(of: path)
        var response = try await send("PUT", path, body: bytes, headers: [("Content-Type", "application/octet-stream")])
        if response.status == 409 || response.status == 404 {
            // A collection this remote knew was deleted since: make it again.
            forgetCollections(above: path)
            try await makeParents(of: path)
            response = try await send("PUT", path, body: bytes, headers: [("Content-Type", "application/octet-stream")])
        }
        guard (200...299).contains(response.status) else { throw failure(response, path, doing: "write") }
    }

    public func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        try await get(path, limit: RemoteLayout.maxObjectSize(forPath: path))
    }

    public func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        try RemoteLayout.validateObjectPath(path)
        let response = try await send("GET", path, limit: limit)
        switch response.status {
        case 200: return response.body
        case 404, 410: return nil
        default: throw failure(response, path, doing: "read")
        }
    }

    public func delete(_ path: String) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        let response = try await send("DELETE", path)
        guard (200...299).contains(response.status) || response.status == 404 || response.status == 410 else {
            throw failure(response, path, doing: "delete")
        }
    }

    public func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        try RemoteLayout.validatePrefix(prefix)
        let found = try await resources(under: prefix).compactMap { relative, entry in
            relative.hasPrefix(prefix) && RemoteLayout.parse(relative) != nil
                ? RemoteObject(path: relative, size: entry.size, modified: entry.modified) : nil
        }
        // A server may list a resource twice (once per href form); keep one.
        var seen: Set<String> = []
        return found.filter { seen.insert($0.path).inserted }
    }

    /// Every non-collection resource in the layout's collections that `prefix` reaches, by
    /// path relative to the root: PROPFIND `Depth: 1` per collection, eight at a time. Only
    /// a layout folder that the listing of its own parent names is entered, each once, and
    /// at most ``/ConcordRemote/RemoteLayout/maxListingFolders`` in all: a server that names
    /// other folders, or ever more of them, cannot make the walk endless.
    func resources(under prefix: String) async throws(ConcordError) -> [(String, PropfindEntry)] {
        let start = prefix.lastIndex(of: "/").map { String(prefix[...$0]) } ?? ""
        var found: [(String, PropfindEntry)] = []
        var pending = [start]
        var visited: Set<String> = [start]
        var first = true
        while !pending.isEmpty {
            let batch = Array(pending.prefix(8))
            pending.removeFirst(batch.count)
            let results = await withTaskGroup(of: Result<(String, [PropfindEntry]?)?, ConcordError>.self) { group in
                for folder in batch {
                    group.addTask {
                        do throws(ConcordError) { return .success((folder, try await self.propfind(folder))) } catch { return .failure(error) }
                    }
                }
                var all: [Result<(String, [PropfindEntry]?)?, ConcordError>] = []
                for await result in group { all.append(result) }
                return all
            }
            for result in results {
                guard let (listed, entries) = try result.get() else { continue }
                let folder = listed
                guard let entries else {
                    // A missing folder lists nothing — unless it is the root.
                    forgetCollections(below: folder)
                    if first { try await checkRootExists() }
                    continue
                }
                if !folder.isEmpty { collections.paths.withLock { _ = $0.insert(folder) } }
                for entry in entries {
                    guard entry.path.hasPrefix(rootPath) else { continue }
                    var relative = String(entry.path.dropFirst(rootPath.count))
                    if entry.isCollection {
                        if relative.hasSuffix("/") { relative.removeLast() }
                        guard !relative.isEmpty, RemoteLayout.isStoreFolder(relative) else { continue }
                        let folder = relative + "/"
                        // A collection lists itself too (and a hostile server may list anything):
                        // each folder is listed once.
                        guard folder.hasPrefix(prefix) || prefix.hasPrefix(folder), Self.isChild(folder, of: listed), visited.insert(folder).inserted else { continue }
                        guard visited.count <= RemoteLayout.maxListingFolders else {
                            throw ConcordError.endlessListing(transport.remoteName, prefix.isEmpty ? "its root" : prefix, "named more than \(RemoteLayout.maxListingFolders) folders")
                        }
                        pending.append(folder)
                    } else {
                        found.append((relative, entry))
                    }
                }
            }
            first = false
        }
        return found
    }

    public func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try RemoteLayout.validateObjectPath(path)
        try await makeParents(of: path)
        // Up under a temporary name, then moved over the object: some servers (rclone)
        // write a PUT in place, so a failed stream would otherwise tear the old object.
        let parent = path.lastIndex(of: "/").map { String(path[...$0]) } ?? ""
        let temporary = parent + Self.temporaryPrefix + UUID().uuidString.lowercased()
        let response = try await transport.upload(path, spec: request("PUT", temporary, headers: [("Content-Type", "application/octet-stream")])(0), read: read)
        guard (200...299).contains(response.status) else {
            _ = try? await send("DELETE", temporary)
            throw failure(response, path, doing: "write")
        }
        let moved = try await send("MOVE", temporary, headers: [("Destination", objectURL(path)), ("Overwrite", "T")])
        guard (200...299).contains(moved.status) else {
            _ = try? await send("DELETE", temporary)
            throw failure(moved, path, doing: "move into place")
        }
    }

    /// The prefix of the temporary name a streamed put writes before it moves the object
    /// into place; layout parsing rejects such names, so listings never return one.
    public static let temporaryPrefix = ".concord-tmp-"

    /// Deletes the temporaries (``temporaryPrefix``) that streamed puts cut off by a crash
    /// or a lost connection left in the layout's collections, last modified more than `age`
    /// ms before `now`; returns how many it deleted. `concord compact` runs it with an hour:
    /// a younger one may be another device's upload in progress.
    public func sweepLeftovers(olderThan age: UInt64, now: UInt64) async throws(ConcordError) -> Int {
        var deleted = 0
        for (relative, entry) in try await resources(under: "") {
            let name = relative.split(separator: "/").last.map(String.init) ?? relative
            guard name.hasPrefix(Self.temporaryPrefix), let modified = entry.modified, modified + age <= now else { continue }
            let response = try await send("DELETE", relative)
            if (200...299).contains(response.status) || response.status == 404 { deleted += 1 }
        }
        return deleted
    }

    /// Deletes the root collection and everything in it (WebDAV DELETE is recursive). The
    /// demo uses it to leave nothing behind; a store's own syncs never call it.
    public func deleteRoot() async throws(ConcordError) {
        let response = try await send("DELETE", "")
        guard (200...299).contains(response.status) || response.status == 404 else { throw failure(response, "its root collection", doing: "delete") }
    }

    public func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await getStream(path, limit: .max, write: write)
    }

    public func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try RemoteLayout.validateObjectPath(path)
        return try await transport.stream(
            path, limit: limit, prepare: request("GET", path),
            accept: { (response) throws(ConcordError) -> Bool in
                switch response.status {
                case 200: return true
                case 404, 410: return false
                default: throw failure(response, path, doing: "read")
                }
            },
            write: write)
    }

    // MARK: - Requests

    func objectURL(_ path: String) -> String { url + PercentEncoding.encode(path, keepSlash: true) }

    /// Whether `folder` (relative, ending in `/`) lies directly in `parent` (`""` for the root).
    static func isChild(_ folder: String, of parent: String) -> Bool {
        guard folder.count > parent.count, folder.hasPrefix(parent) else { return false }
        return !folder.dropFirst(parent.count).dropLast().contains("/")
    }

    func send(
        _ method: String, _ path: String, body: [UInt8]? = nil, limit: UInt64 = 1 << 20,
        headers extra: [(String, String)] = []
    ) async throws(ConcordError) -> HTTPResponse {
        try await transport.send(path, body: body, limit: limit, prepare: request(method, path, headers: extra))
    }

    /// Builds each attempt of a request: the method, the object's URL, `extra` headers and
    /// the credentials.
    func request(_ method: String, _ path: String, headers extra: [(String, String)] = []) -> @Sendable (_ attempt: Int) -> HTTPRequestSpec {
        request(method, url: objectURL(path), headers: extra)
    }

    /// ``request(_:_:headers:)`` to a full URL.
    func request(_ method: String, url: String, headers extra: [(String, String)] = []) -> @Sendable (_ attempt: Int) -> HTTPRequestSpec {
        let authorization = self.authorization
        return { _ in
            var headers = HTTPHeaders(extra)
            if let authorization { headers.add(name: "Authorization", value: authorization) }
            return HTTPRequestSpec(method: HTTPMethod(rawValue: method), url: url, headers: headers)
        }
    }

    static let propfindBody = Array("""
        <?xml version="1.0" encoding="utf-8"?>
        <D:propfind xmlns:D="DAV:"><D:prop><D:resourcetype/><D:getcontentlength/><D:getlastmodified/></D:prop></D:propfind>
        """.utf8)

    /// The entries of a collection (PROPFIND `Depth: 1`), or nil if it does not exist.
    func propfind(_ folder: String) async throws(ConcordError) -> [PropfindEntry]? {
        // The answer is parsed as it arrives: only its entries are kept.
        var (response, answer) = try await transport.send(
            folder, body: Self.propfindBody, limit: RemoteLayout.maxListingPageSize, reader: { PropfindParser.Answer(PropfindParser.Reader()) },
            prepare: request("PROPFIND", folder, headers: [("Depth", "1"), ("Content-Type", "application/xml; charset=utf-8")]))
        switch response.status {
        case 207:
            guard let entries = answer?.finish()?.entries else {
                throw ConcordError(.remote, "\(transport.remoteName) answered PROPFIND of \(folder.isEmpty ? "its root" : folder) with XML that does not parse: is the URL a WebDAV folder?")
            }
            return entries
        case 404, 410: return nil
        default: throw failure(response, folder.isEmpty ? "its root collection" : folder, doing: "list")
        }
    }

    /// Throws ``/ConcordRemote/ConcordCore/ConcordError/Code/remoteMissing`` if the root collection is gone.
    func checkRootExists() async throws(ConcordError) {
        let response = try await send("PROPFIND", "", body: Self.propfindBody, headers: [("Depth", "0"), ("Content-Type", "application/xml; charset=utf-8")])
        switch response.status {
        case 207: return
        case 404, 410, 409:
            throw ConcordError(.remoteMissing, "\(transport.remoteName) has no collection at \(rootPath): check the URL, or create the folder (`concord remote set URL --create`); nothing local was lost")
        default: throw failure(response, "its root collection", doing: "list")
        }
    }

    /// Makes the collections above `path` that are missing, top down (the root must exist).
    func makeParents(of path: String) async throws(ConcordError) {
        let components = path.split(separator: "/").dropLast()
        var folder = ""
        for component in components {
            folder += component + "/"
            if collections.paths.withLock({ $0.contains(folder) }) { continue }
            let response = try await makeCollection(objectURL(folder), name: folder)
            if let response {
                if response.status == 409 || response.status == 404 { try await checkRootExists() }
                throw failure(response, folder, doing: "create the folder")
            }
            let made = folder
            collections.paths.withLock { _ = $0.insert(made) }
        }
    }

    /// Forgets that the collections above `path` exist (a put found one missing).
    func forgetCollections(above path: String) {
        collections.paths.withLock { known in known = known.filter { !path.hasPrefix($0) } }
    }

    /// Forgets `folder` and every collection below it (a listing found it missing).
    func forgetCollections(below folder: String) {
        collections.paths.withLock { known in known = known.filter { !$0.hasPrefix(folder) } }
    }

    /// Creates the root collection (and its parents) if missing: for `remote set --create`.
    public func createRoot() async throws(ConcordError) {
        let components = rootPath.split(separator: "/")
        var path = "/"
        for component in components {
            path += component + "/"
            let target = origin + PercentEncoding.encode(path, keepSlash: true)
            if let response = try await makeCollection(target, name: path) { throw failure(response, path, doing: "create the folder") }
        }
    }

    /// MKCOL of the collection at `target` (a full URL): nil once it exists (made, or
    /// already there), else the answer that says why not. A MKCOL racing another of the same
    /// collection is answered 403 "File exists" by Apache and 423 Locked by rclone: then the
    /// collection is looked up, and the MKCOL tried again while the other one finishes.
    func makeCollection(_ target: String, name: String) async throws(ConcordError) -> HTTPResponse? {
        var attempt = 0
        while true {
            let response = try await transport.send(name, prepare: request("MKCOL", url: target))
            switch response.status {
            case 200, 201, 204, 405, 301, 302:
                return nil  // made, already there, or redirected to its slash form
            case 403, 423:
                if try await collectionExists(at: target) { return nil }
                guard attempt < 4 else { return response }
                try? await Task.sleep(for: .milliseconds(25 << attempt))
                attempt += 1
            default:
                return response
            }
        }
    }

    /// Whether a collection answers PROPFIND `Depth: 0` at `target` (a full URL).
    func collectionExists(at target: String) async throws(ConcordError) -> Bool {
        let response = try await transport.send(
            target, body: Self.propfindBody, prepare: request("PROPFIND", url: target, headers: [("Depth", "0"), ("Content-Type", "application/xml; charset=utf-8")]))
        return response.status == 207
    }

    /// Whether the root collection exists.
    public func rootExists() async throws(ConcordError) -> Bool {
        do {
            try await checkRootExists()
            return true
        } catch where error.code == .remoteMissing {
            return false
        }
    }

    func failure(_ response: HTTPResponse, _ object: String, doing: String) -> ConcordError {
        transport.unexpected(response, object: object, doing: doing)
    }
}
