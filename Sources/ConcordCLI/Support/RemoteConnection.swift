import ArgumentParser
import Concord
import ConcordCrypto
import ConcordRemote
import ConcordS3
import ConcordSync
import ConcordWebDAV
import Foundation

/// Where a store's remote is: a location of one of the backends the CLI knows
/// (``backends``: a folder, `file:///path` or a plain path; a WebDAV collection,
/// `https://[user@]host/path`; an S3 bucket and prefix, `s3://bucket/prefix` with the
/// endpoint and region as query items). The canonical URL (``url``) is what the store
/// keeps in its `remote` setting; it never holds a password or a secret.
struct RemoteLocation {
    /// The backends the CLI knows, in the order its messages name them.
    static let backends = RemoteBackends([FolderLocation.self, WebDAVLocation.self, S3Location.self])

    let backend: any RemoteBackend
    /// For a named store (`remote set URL --remote-store NAME`): the remote's root and the
    /// store's id; ``backend`` is then the store's own folder, `stores/<id>/` below the root.
    let named: (root: any RemoteBackend, id: StoreID)?

    init(_ backend: any RemoteBackend) {
        self.backend = backend
        named = nil
    }

    /// The named store `id` below the root `root`.
    init(root: any RemoteBackend, store id: StoreID) {
        backend = root.child(RemoteLayout.storesFolder).child(id.hex)
        named = (root, id)
    }

    /// The remote's root: the named store's root, else this location itself.
    var root: RemoteLocation { named.map { RemoteLocation($0.root) } ?? self }

    /// The canonical URL stored in the store's `remote` setting.
    var url: String { backend.url }

    /// How messages name the remote: the folder's path, the WebDAV URL, or the bucket and
    /// prefix (with a custom endpoint).
    var display: String { backend.display }

    /// `folder`, `webdav` or `s3` (in `--json` documents).
    var kind: String { type(of: backend).kind }

    /// The folder of a folder remote, else nil.
    var folder: String? { backend.folder }

    /// Parses what a person typed: a `file://` URL or a plain folder path, an `https://`
    /// (or `http://`) WebDAV URL, or `s3://bucket/prefix`. `user`, `endpoint` and
    /// `region` are the `remote set` options; they must fit the URL's kind.
    init(parsing text: String, user: String? = nil, endpoint: String? = nil, region: String? = nil) throws {
        let options = [("user", user), ("endpoint", endpoint), ("region", region)].reduce(into: [String: String]()) { options, option in
            if let value = option.1 { options[option.0] = value }
        }
        do {
            backend = try Self.backends.location(parsing: text, options: options)
        } catch {
            throw ValidationError(error.message)
        }
        named = nil
    }

    /// Whether the remote is reached over plain HTTP to a host other than this machine
    /// (the password, or the request signatures, cross the network unprotected).
    var isPlainHTTPOffLoopback: Bool {
        guard let target = backend.httpOrigin, let parsed = URLComponents(string: target), parsed.scheme?.lowercased() == "http" else { return false }
        let host = (parsed.host ?? "").lowercased()
        return !(host == "localhost" || host == "::1" || host == "[::1]" || host.hasPrefix("127."))
    }

    /// The location `name/` below this one: the demo's private corner of a remote.
    func child(_ name: String) -> RemoteLocation {
        RemoteLocation(backend.child(name))
    }

    /// The remote this location names. `checkRoot` first checks that the folder, WebDAV
    /// collection or bucket exists, creating it when `create` (for `remote set`); without
    /// it, a missing one is found by the first request. The WebDAV password comes from
    /// $CONCORD_REMOTE_PASSWORD or a prompt; S3 credentials from the AWS environment.
    func open(checkRoot: Bool = false, create: Bool = false, advice: String = "pass --create to create it") async throws -> any LeftoverSweeping {
        let root: RootCheck = !checkRoot ? .none : create ? .createIfMissing : .mustExist(advice: advice)
        if let named {
            // The store's concord.json read through the root first: a store folder (or
            // `stores/`) replaced by a link is refused there, never followed.
            let rootRemote = try await named.root.open(root: root, access: Self.access)
            _ = try await rootRemote.get(RemoteLayout.storeManifest(named.id.hex), limit: RemoteLayout.maxManifestSize)
            return try await backend.open(root: .none, access: Self.access)
        }
        return try await backend.open(root: root, access: Self.access)
    }

    /// Credentials from the environment, else a prompt.
    static let access = RemoteAccess(ask: { variable, what, label in try Secrets.passphrase(for: what, prompt: label, variable: variable) })

    /// Warns on stderr when the remote is plain HTTP off this machine.
    func warnIfInsecure() {
        guard isPlainHTTPOffLoopback else { return }
        FileHandle.standardError.write(Data("concord: warning: \(display) is plain http:// to another machine: the password or the request signatures cross the network unencrypted (the store's contents stay encrypted); use https://\n".utf8))
    }

    /// The store's configured remote, or nil.
    /// A named store's location is its root's URL with the store's id (`remoteStore`).
    static func configured(in store: Store) throws -> RemoteLocation? {
        guard let url = try store.setting(CLIConfig.remote) else { return nil }
        let location = try RemoteLocation(parsing: url)
        guard let named = try store.setting(CLIConfig.remoteStore) else { return location }
        guard let id = StoreID(hex: named) else {
            throw ConcordError(.malformed, "this store's remoteStore setting (\(named)) is not a store id: set the remote again with `concord remote set URL --remote-store NAME`")
        }
        return RemoteLocation(root: location.backend, store: id)
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
    /// The id of the named store (`remote set URL --remote-store NAME`) below the remote's
    /// root, whose URL is `remote`; absent for the store at the root.
    static let remoteStore = "remoteStore"
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
        // This device's identity, when it has one: it opens the key generations sealed to it.
        let identityPath = IdCommand.secretPath(options)
        let identity = FileManager.default.fileExists(atPath: identityPath) ? try DeviceIdentity(contentsOfSecretFile: identityPath) : nil
        let engine = SyncEngine(store: store, remote: remote, key: key, storeID: manifest.storeID, identity: identity)
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
