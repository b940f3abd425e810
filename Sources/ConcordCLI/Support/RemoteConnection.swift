import ArgumentParser
import Concord
import ConcordCrypto
import ConcordRemote
import ConcordS3
import ConcordSync
import ConcordWebDAV
import Foundation

/// Where a store's remote is: a folder (`file:///path` or a plain path), a WebDAV
/// collection (`https://[user@]host/path`), or an S3 bucket and prefix
/// (`s3://bucket/prefix`, with the endpoint and region as query items). The canonical
/// URL (``url``) is what the store keeps in its `remote` setting; it never holds a
/// password or a secret.
enum RemoteLocation: Hashable {
    case folder(String)
    /// `url` is canonical: scheme, `user@` if any, host, port, path ending in `/`.
    case webDAV(url: String, user: String?)
    /// `endpoint` is nil for AWS.
    case s3(bucket: String, prefix: String, endpoint: String?, region: String)

    /// The password of a WebDAV server.
    static let passwordVariable = "CONCORD_REMOTE_PASSWORD"

    /// The canonical URL stored in the store's `remote` setting.
    var url: String {
        switch self {
        case let .folder(folder):
            return URL(fileURLWithPath: folder, isDirectory: false).absoluteString
        case let .webDAV(url, _):
            return url
        case let .s3(bucket, prefix, endpoint, region):
            var components = URLComponents()
            components.scheme = "s3"
            components.host = bucket
            components.path = "/" + prefix
            components.queryItems = (endpoint.map { [URLQueryItem(name: "endpoint", value: $0)] } ?? []) + [URLQueryItem(name: "region", value: region)]
            return components.string ?? "s3://\(bucket)/\(prefix)"
        }
    }

    /// How messages name the remote: the folder's path, the WebDAV URL, or the bucket and
    /// prefix (with a custom endpoint).
    var display: String {
        switch self {
        case let .folder(folder): folder
        case let .webDAV(url, _): url
        case let .s3(bucket, prefix, endpoint, _): "s3://\(bucket)/\(prefix)\(endpoint.map { " at \($0)" } ?? "")"
        }
    }

    /// `folder`, `webdav` or `s3` (in `--json` documents).
    var kind: String {
        switch self {
        case .folder: "folder"
        case .webDAV: "webdav"
        case .s3: "s3"
        }
    }

    /// The folder of a folder remote, else nil.
    var folder: String? {
        if case let .folder(folder) = self { folder } else { nil }
    }

    /// Parses what a person typed: a `file://` URL or a plain folder path, an `https://`
    /// (or `http://`) WebDAV URL, or `s3://bucket/prefix`. `user`, `endpoint` and
    /// `region` are the `remote set` options; they must fit the URL's kind.
    init(parsing text: String, user: String? = nil, endpoint: String? = nil, region: String? = nil) throws {
        let lower = text.lowercased()
        let isWebDAV = lower.hasPrefix("https://") || lower.hasPrefix("http://")
        let isS3 = lower.hasPrefix("s3://")
        if !isWebDAV, user != nil { throw ValidationError("--user applies to a WebDAV remote (https://host/path), not '\(Entry.clip(text))'") }
        if !isS3, endpoint != nil || region != nil {
            throw ValidationError("--endpoint and --region apply to an S3 remote (s3://bucket/prefix), not '\(Entry.clip(text))'")
        }
        if isWebDAV {
            self = try Self.webDAV(parsing: text, user: user)
        } else if isS3 {
            self = try Self.s3(parsing: text, endpoint: endpoint, region: region)
        } else if lower.hasPrefix("file://") {
            let path: String
            if let url = URL(string: text), url.isFileURL {
                guard url.host == nil || url.host == "" || url.host == "localhost" else {
                    throw ValidationError("'\(text)' names host \(url.host ?? ""); a file URL is file:///absolute/path")
                }
                path = url.path
            } else {
                path = String(text.dropFirst("file://".count))
            }
            guard path.hasPrefix("/") else { throw ValidationError("'\(text)' is not file:///absolute/path") }
            self = .folder(Paths.absolute(path))
        } else if text.contains("://") {
            throw ValidationError("'\(Entry.clip(text))' is not a remote Concord knows: use file:///path/to/folder, https://host/path (WebDAV) or s3://bucket/prefix")
        } else {
            guard !text.isEmpty else { throw ValidationError("the remote URL is empty") }
            self = .folder(Paths.absolute(text))
        }
    }

    static func webDAV(parsing text: String, user given: String?) throws -> RemoteLocation {
        guard let parsed = URLComponents(string: text), let scheme = parsed.scheme?.lowercased(), let host = parsed.host, !host.isEmpty else {
            throw ValidationError("'\(Entry.clip(text))' is not a WebDAV URL: give https://host/path/to/folder")
        }
        guard parsed.password == nil else {
            throw ValidationError("the URL holds a password: never put it in the URL (the store would keep it); give the user with --user and the password in $\(passwordVariable) or at the prompt")
        }
        guard parsed.query == nil, parsed.fragment == nil else {
            throw ValidationError("'\(Entry.clip(text))' has a query or a fragment: give https://host/path/to/folder")
        }
        if let given, let inURL = parsed.user, given != inURL {
            throw ValidationError("the URL names user \(inURL) and --user \(given): give one")
        }
        let user = given ?? parsed.user
        if let user { guard !user.isEmpty, !user.contains(":") else { throw ValidationError("the user name '\(user)' is empty or holds ':'") } }
        var path = parsed.path.isEmpty ? "/" : parsed.path
        if !path.hasSuffix("/") { path += "/" }
        var canonical = URLComponents()
        canonical.scheme = scheme
        canonical.user = user
        canonical.host = host
        canonical.port = parsed.port
        canonical.path = path
        guard let url = canonical.string else { throw ValidationError("'\(Entry.clip(text))' is not a WebDAV URL: give https://host/path/to/folder") }
        return .webDAV(url: url, user: user)
    }

    static func s3(parsing text: String, endpoint given: String?, region givenRegion: String?) throws -> RemoteLocation {
        guard let parsed = URLComponents(string: text), let bucket = parsed.host, !bucket.isEmpty else {
            throw ValidationError("'\(Entry.clip(text))' names no bucket: give s3://bucket/prefix")
        }
        guard parsed.user == nil, parsed.password == nil, parsed.port == nil else {
            throw ValidationError("'\(Entry.clip(text))' is not s3://bucket/prefix: credentials come from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY (or $AWS_PROFILE), an endpoint from --endpoint")
        }
        var query: [String: String] = [:]
        for item in parsed.queryItems ?? [] {
            guard ["endpoint", "region"].contains(item.name), let value = item.value, !value.isEmpty else {
                throw ValidationError("'\(Entry.clip(text))' has a query item '\(item.name)' Concord does not know: give --endpoint URL and --region R instead")
            }
            query[item.name] = value
        }
        let endpoint = given ?? query["endpoint"]
        if let endpoint {
            guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""), !(url.host ?? "").isEmpty,
                  url.path.isEmpty || url.path == "/", url.query == nil, url.user == nil else {
                throw ValidationError("--endpoint '\(Entry.clip(endpoint))' is not https://host[:port]")
            }
        }
        let environment = ProcessInfo.processInfo.environment
        let region = givenRegion ?? query["region"] ?? environment["AWS_REGION"].flatMap { $0.isEmpty ? nil : $0 }
            ?? environment["AWS_DEFAULT_REGION"].flatMap { $0.isEmpty ? nil : $0 } ?? "us-east-1"
        guard !region.isEmpty, region.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" }) else {
            throw ValidationError("--region '\(Entry.clip(region))' is not a region name (like us-east-1)")
        }
        var prefix = parsed.path
        while prefix.hasPrefix("/") { prefix.removeFirst() }
        if !prefix.isEmpty && !prefix.hasSuffix("/") { prefix += "/" }
        guard !prefix.split(separator: "/", omittingEmptySubsequences: false).dropLast().contains(where: { $0.isEmpty || $0 == "." || $0 == ".." }) else {
            throw ValidationError("the prefix '\(prefix)' has an empty, '.' or '..' part")
        }
        let location = RemoteLocation.s3(bucket: bucket, prefix: prefix, endpoint: endpoint.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }, region: region)
        do {
            _ = try S3Remote(bucket: bucket, prefix: prefix, endpoint: location.endpoint, region: region, credentials: .init(accessKey: "", secretKey: ""))
        } catch {
            throw ValidationError(error.message)
        }
        return location
    }

    var endpoint: String? {
        if case let .s3(_, _, endpoint, _) = self { endpoint } else { nil }
    }

    /// Whether the remote is reached over plain HTTP to a host other than this machine
    /// (the password, or the request signatures, cross the network unprotected).
    var isPlainHTTPOffLoopback: Bool {
        let target: String? = switch self {
        case .folder: nil
        case let .webDAV(url, _): url
        case let .s3(_, _, endpoint, _): endpoint
        }
        guard let target, let parsed = URLComponents(string: target), parsed.scheme?.lowercased() == "http" else { return false }
        let host = (parsed.host ?? "").lowercased()
        return !(host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127."))
    }

    /// The location `name/` below this one: the demo's private corner of a remote.
    func child(_ name: String) -> RemoteLocation {
        switch self {
        case let .folder(folder): .folder(folder + "/" + name)
        case let .webDAV(url, user): .webDAV(url: url + name + "/", user: user)
        case let .s3(bucket, prefix, endpoint, region): .s3(bucket: bucket, prefix: prefix + name + "/", endpoint: endpoint, region: region)
        }
    }

    /// The remote this location names. `checkRoot` first checks that the folder, WebDAV
    /// collection or bucket exists, creating it when `create` (for `remote set`); without
    /// it, a missing one is found by the first request. The WebDAV password comes from
    /// $CONCORD_REMOTE_PASSWORD or a prompt; S3 credentials from the AWS environment.
    func open(checkRoot: Bool = false, create: Bool = false) async throws -> any LeftoverSweeping {
        switch self {
        case let .folder(folder):
            if checkRoot {
                var isFolder: ObjCBool = false
                let exists = FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder)
                if exists && !isFolder.boolValue {
                    throw ConcordError(.notAFolder, "\(folder) is a file, not a folder: give the remote's folder")
                }
                if !exists && !create {
                    throw ConcordError(.noFolder, "the remote folder \(folder) does not exist: check the path and that its drive is mounted, or pass --create to create it")
                }
            }
            return try FolderRemote(root: folder, createIfMissing: create)
        case let .webDAV(url, user):
            let password = try user.map { _ in
                try Secrets.passphrase(for: "the WebDAV server \(url)", prompt: "Password", variable: Self.passwordVariable)
            }
            let remote = try WebDAVRemote(url: url, user: user, password: password)
            if checkRoot, try await !remote.rootExists() {
                guard create else {
                    throw ConcordError(.noFolder, "the WebDAV folder \(url) does not exist: check the URL, or pass --create to create it")
                }
                try await remote.createRoot()
            }
            return remote
        case let .s3(bucket, prefix, endpoint, region):
            let remote = try S3Remote(bucket: bucket, prefix: prefix, endpoint: endpoint, region: region, credentials: try .fromEnvironment())
            if checkRoot, try await !remote.bucketExists() {
                guard create else {
                    throw ConcordError(.noBucket, "the bucket \(bucket) does not exist at \(remote.endpoint) (region \(region)): check its name, the endpoint and the region, or pass --create to create it")
                }
                try await remote.createBucket()
            }
            return remote
        }
    }

    /// Warns on stderr when the remote is plain HTTP off this machine.
    func warnIfInsecure() {
        guard isPlainHTTPOffLoopback else { return }
        FileHandle.standardError.write(Data("concord: warning: \(display) is plain http:// to another machine: the password or the request signatures cross the network unencrypted (the store's contents stay encrypted); use https://\n".utf8))
    }

    /// The store's configured remote, or nil.
    static func configured(in store: Store) throws -> RemoteLocation? {
        guard let url = try store.setting(CLIConfig.remote) else { return nil }
        return try RemoteLocation(parsing: url)
    }
}

/// The options that say where and how to reach an HTTP remote (`remote set`, `demo`).
struct RemoteOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("WebDAV: the user name (the password comes from $CONCORD_REMOTE_PASSWORD or a prompt, and is never stored).", valueName: "name"))
    var user: String?

    @Option(name: .long, help: ArgumentHelp("S3: the service's endpoint, https://host[:port] (default: AWS).", valueName: "url"))
    var endpoint: String?

    @Option(name: .long, help: ArgumentHelp("S3: the region (default: $AWS_REGION, else us-east-1).", valueName: "region"))
    var region: String?

    func location(_ text: String) throws -> RemoteLocation {
        try RemoteLocation(parsing: text, user: user, endpoint: endpoint, region: region)
    }
}

/// The CLI's own settings, kept per store in its settings table (`concord_settings`,
/// ``ConcordStore/Store/setting(_:)``), as text by these keys (never secrets).
enum CLIConfig {
    /// The remote URL: `file:///…`, `https://…` or `s3://…`.
    static let remote = "remote"
    /// The absolute path of the key file that unlocks the remote, if one is used.
    static let keyFile = "keyFile"
    /// The BLAKE2b of the `concord.json` this store last unlocked (hex): to tell an older
    /// copy of it from a wrong passphrase.
    static let manifest = "manifest"
    /// When this store last finished a sync through the CLI (ms since the epoch, in decimal).
    static let lastSync = "lastSync"
}

/// An unlocked remote store and a sync engine over it.
struct RemoteConnection {
    let location: RemoteLocation
    let remote: any LeftoverSweeping
    let manifest: StoreManifest
    let key: StoreKey
    let engine: SyncEngine

    /// Connects `store` to its configured remote: opens it (a folder must exist), reads
    /// `concord.json`, and unlocks the key with the key file or the passphrase.
    static func open(_ store: Store, options: GlobalOptions) async throws -> RemoteConnection {
        guard let location = try RemoteLocation.configured(in: store) else { throw ConcordError.noRemote }
        let remote = try await location.open()
        let manifest: StoreManifest
        do {
            manifest = try await readManifest(remote, location: location)
        } catch let error as ConcordError where error.code == .noRemoteStore || error.code == .malformed {
            // Deleted, or damaged (torn, truncated): put back the copy this replica keeps, if
            // it is of the store it synced with.
            guard let restored = try await SyncEngine.restoreManifest(remote, from: store) else { throw error }
            let what = error.code == .malformed ? "a damaged concord.json (\(error.message))" : "no concord.json (deleted?)"
            FileHandle.standardError.write(Data("concord: warning: \(location.display) held \(what): put back the copy this replica unlocked (store \(restored.storeID.hex))\n".utf8))
            manifest = restored
        }
        // Before any passphrase: a concord.json of another store (re-created, or swapped in)
        // is named as such, never answered with "wrong passphrase" or merged into.
        if let recorded = try SyncEngine.remoteStoreID(in: store), recorded != manifest.storeID.hex {
            throw ConcordError(.storeMismatch, SyncEngine.storeChangedMessage(found: manifest.storeID.hex, recorded: recorded, at: location.display))
        }
        let credential = try credential(for: manifest, location: location, store: store, options: options)
        let key: StoreKey
        let fingerprint = ContentHasher.hash(manifest.jsonBytes()).hex
        do {
            key = try unlock(manifest, with: credential)
        } catch let error as ConcordError where error.code == .wrongKey {
            // A concord.json that is not the one this replica last unlocked — restored from
            // an older backup, say from before a passphrase change — is named as such.
            if let last = try store.setting(CLIConfig.manifest), last != fingerprint {
                throw ConcordError(.wrongKey, "the passphrase does not unlock \(location.display)'s concord.json, and it is not the concord.json this replica last unlocked: it may have been restored from an older backup (from before a passphrase change); try the passphrase it had then, and set the current one again with `concord remote passphrase`")
            }
            throw error
        }
        if try store.setting(CLIConfig.manifest) != fingerprint { try store.setSetting(CLIConfig.manifest, fingerprint) }
        try SyncEngine.keepManifest(manifest, in: store)
        let engine = SyncEngine(store: store, remote: remote, key: key, storeID: manifest.storeID)
        return RemoteConnection(location: location, remote: remote, manifest: manifest, key: key, engine: engine)
    }

    static func readManifest(_ remote: any Remote, location: RemoteLocation) async throws -> StoreManifest {
        guard let bytes = try await remote.getManifest() else {
            // A WebDAV collection that is gone reads as "no concord.json": say which it is.
            if let webDAV = remote as? WebDAVRemote, try await !webDAV.rootExists() {
                throw ConcordError(.noFolder, "the WebDAV folder \(location.display) does not exist (deleted, or the URL changed): check the URL; nothing local was lost")
            }
            throw ConcordError(.noRemoteStore, "\(location.display) holds no Concord store (no concord.json): run `concord remote set \(location.url)` to create one there")
        }
        if SyncEngine.looksLikeWebPage(bytes) {
            throw ConcordError(.remote, "\(location.display) answered a web page instead of concord.json: a captive portal or a proxy is in the way (sign in to the network, or check the URL); nothing was read or written")
        }
        return try StoreManifest(json: bytes)
    }

    /// The key file (from --key-file, else the store's recorded one) or the passphrase.
    static func credential(for manifest: StoreManifest, location: RemoteLocation, store: Store?, options: GlobalOptions) throws -> Secrets.Credential {
        if let path = try options.keyFile.map(Paths.absolute) ?? store?.setting(CLIConfig.keyFile) {
            return .key(try Secrets.key(file: path), file: path)
        }
        guard manifest.kdf != .keyFile else {
            throw ConcordError(.needKeyFile, "the remote store at \(location.display) is unlocked with a key file, not a passphrase: pass --key-file FILE")
        }
        return .passphrase(try Secrets.passphrase(for: "the remote store at \(location.display)"))
    }

    static func unlock(_ manifest: StoreManifest, with credential: Secrets.Credential) throws -> StoreKey {
        switch credential {
        case let .passphrase(passphrase):
            return try manifest.unlock(passphrase: passphrase)
        case let .key(key, file):
            do {
                try manifest.verify(key)
            } catch {
                throw ConcordError(.wrongKey, "the key file \(file) does not unlock this remote store (\(manifest.storeID)): pass the key file written when the store was created")
            }
            return key
        }
    }
}
