import ArgumentParser
import Concord
import ConcordCrypto
import ConcordRemote
import ConcordSync
import Foundation

/// Where a store's remote is. Only folders (`file:///path`) exist so far; WebDAV
/// (`https://`) and S3 (`s3://`) are refused with "not supported yet".
struct RemoteLocation: Hashable {
    /// The folder that is the remote store's root.
    let folder: String

    /// The canonical URL stored in the store's `cli.remote` sync value.
    var url: String { URL(fileURLWithPath: folder, isDirectory: false).absoluteString }

    /// Parses what a person typed: a `file://` URL or a plain folder path.
    init(parsing text: String) throws {
        let lower = text.lowercased()
        if lower.hasPrefix("https://") || lower.hasPrefix("http://") || lower.hasPrefix("webdav://") || lower.hasPrefix("davs://") {
            throw CLIError("notSupported", "WebDAV remotes (\(text)) are not supported yet: use a folder (file:///path), for instance one your WebDAV client mounts")
        }
        if lower.hasPrefix("s3://") {
            throw CLIError("notSupported", "S3 remotes (\(text)) are not supported yet: use a folder (file:///path), for instance one an S3 file system mounts")
        }
        if lower.hasPrefix("file://") {
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
            folder = Paths.absolute(path)
            return
        }
        if text.contains("://") {
            throw ValidationError("'\(text)' is not a remote Concord knows: use file:///path/to/folder")
        }
        guard !text.isEmpty else { throw ValidationError("the remote URL is empty") }
        folder = Paths.absolute(text)
    }

    init(folder: String) {
        self.folder = folder
    }

    /// The store's configured remote, or nil.
    static func configured(in store: Store) throws -> RemoteLocation? {
        guard let url = try store.syncValue(CLIConfig.remote) else { return nil }
        return try RemoteLocation(parsing: url)
    }
}

/// The CLI's own settings, kept per store in its sync key-value table (never secrets).
enum CLIConfig {
    /// The remote URL, `file:///…`.
    static let remote = "cli.remote"
    /// The absolute path of the key file that unlocks the remote, if one is used.
    static let keyFile = "cli.keyFile"
    /// The BLAKE2b of the `concord.json` this store last unlocked (hex): to tell an older
    /// copy of it from a wrong passphrase.
    static let manifest = "cli.manifest"
    /// When this store last finished a sync through the CLI (ms since the epoch).
    static let lastSync = "cli.lastSync"
}

/// An unlocked remote store and a sync engine over it.
struct RemoteConnection {
    let location: RemoteLocation
    let remote: FolderRemote
    let manifest: StoreManifest
    let key: StoreKey
    let engine: SyncEngine

    /// Connects `store` to its configured remote: opens the folder (which must exist),
    /// reads `concord.json`, and unlocks the key with the key file or the passphrase.
    static func open(_ store: Store, options: GlobalOptions) async throws -> RemoteConnection {
        guard let location = try RemoteLocation.configured(in: store) else { throw CLIError.noRemote }
        let remote = try FolderRemote(root: location.folder)
        let manifest = try await readManifest(remote, location: location)
        // Before any passphrase: a concord.json of another store (re-created, or swapped in)
        // is named as such, never answered with "wrong passphrase" or merged into.
        if let recorded = try SyncEngine.remoteStoreID(in: store), recorded != manifest.storeID.hex {
            throw ConcordError(.storeMismatch, SyncEngine.storeChangedMessage(found: manifest.storeID.hex, recorded: recorded, at: location.folder))
        }
        let credential = try credential(for: manifest, location: location, store: store, options: options)
        let key: StoreKey
        let fingerprint = ContentHasher.hash(manifest.jsonBytes()).hex
        do {
            key = try unlock(manifest, with: credential)
        } catch let error as ConcordError where error.code == .wrongKey {
            // A concord.json that is not the one this replica last unlocked — restored from
            // an older backup, say from before a passphrase change — is named as such.
            if let last = try store.syncValue(CLIConfig.manifest), last != fingerprint {
                throw ConcordError(.wrongKey, "the passphrase does not unlock \(location.folder)'s concord.json, and it is not the concord.json this replica last unlocked: it may have been restored from an older backup (from before a passphrase change); try the passphrase it had then, and set the current one again with `concord remote passphrase`")
            }
            throw error
        }
        if try store.syncValue(CLIConfig.manifest) != fingerprint { try store.setSyncValue(CLIConfig.manifest, fingerprint) }
        let engine = SyncEngine(store: store, remote: remote, key: key, storeID: manifest.storeID)
        return RemoteConnection(location: location, remote: remote, manifest: manifest, key: key, engine: engine)
    }

    static func readManifest(_ remote: FolderRemote, location: RemoteLocation) async throws -> StoreManifest {
        guard let bytes = try await remote.get(RemoteLayout.manifestPath, limit: RemoteLayout.maxObjectSize(for: .manifest)) else {
            throw CLIError("noRemoteStore", "the folder \(location.folder) holds no Concord store (no concord.json): run `concord remote set \(location.url)` to create one there")
        }
        return try StoreManifest(json: bytes)
    }

    /// The key file (from --key-file, else the store's recorded one) or the passphrase.
    static func credential(for manifest: StoreManifest, location: RemoteLocation, store: Store?, options: GlobalOptions) throws -> Secrets.Credential {
        if let path = try options.keyFile.map(Paths.absolute) ?? store?.syncValue(CLIConfig.keyFile) {
            return .key(try Secrets.key(file: path), file: path)
        }
        guard manifest.kdf != .keyFile else {
            throw CLIError("needKeyFile", "the remote store at \(location.folder) is unlocked with a key file, not a passphrase: pass --key-file FILE")
        }
        return .passphrase(try Secrets.passphrase(for: "the remote store at \(location.folder)"))
    }

    static func unlock(_ manifest: StoreManifest, with credential: Secrets.Credential) throws -> StoreKey {
        switch credential {
        case let .passphrase(passphrase):
            return try manifest.unlock(passphrase: passphrase)
        case let .key(key, file):
            do {
                try manifest.verify(key)
            } catch {
                throw CLIError("wrongKey", "the key file \(file) does not unlock this remote store (\(manifest.storeID)): pass the key file written when the store was created")
            }
            return key
        }
    }
}
