import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

struct RemoteCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remote",
        abstract: "Show or set where this store syncs, or change the remote's passphrase.",
        subcommands: [RemoteShow.self, RemoteSet.self, RemotePassphrase.self],
        defaultSubcommand: RemoteShow.self)
}

struct RemoteShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show this store's remote.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let location = try RemoteLocation.configured(in: store)
        let keyFile = try store.syncValue(CLIConfig.keyFile)
        let storeID = try SyncEngine.remoteStoreID(in: store)
        let reachable = location.map { FileManager.default.fileExists(atPath: $0.folder) }
        var lines: [String] = []
        if let location {
            lines.append("remote \(location.url)\(reachable == true ? "" : " (the folder is missing: is its drive mounted?)")")
            lines.append("  unlocked with \(keyFile.map { "key file \($0)" } ?? "a passphrase ($CONCORD_PASSPHRASE or a prompt)")")
            if let storeID { lines.append("  remote store \(storeID)") }
        } else {
            lines.append("no remote: set one with `concord remote set file:///path/to/folder`")
        }
        options.emit(
            .object([
                ("remote", .string(location?.url)), ("folder", .string(location?.folder)),
                ("reachable", reachable.map(JSON.bool) ?? .null),
                ("keyFile", .string(keyFile)), ("storeID", .string(storeID)),
            ]),
            lines.joined(separator: "\n"))
    }
}

struct RemoteSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Point this store at a remote; creates the remote store if the folder holds none.",
        discussion: """
            URL is file:///path/to/folder (https:// WebDAV and s3:// are not supported yet). If the \
            folder holds a concord.json, the passphrase (or --key-file) must unlock it; otherwise a \
            new remote store is created there, protected by the passphrase (typed twice on a \
            terminal) or by --key-file FILE (a new random key is written to FILE if it does not \
            exist). $CONCORD_KDF_LIMITS sets the Argon2id cost of a new passphrase.
            """)

    @Argument(help: ArgumentHelp("The remote: file:///path/to/folder.", valueName: "url")) var url: String
    @Flag(name: .long, help: "Create the folder if it does not exist.") var create = false
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let location = try RemoteLocation(parsing: url)
        let store = try options.openStore()
        var isFolder: ObjCBool = false
        let exists = FileManager.default.fileExists(atPath: location.folder, isDirectory: &isFolder)
        if exists && !isFolder.boolValue {
            throw CLIError("notAFolder", "\(location.folder) is a file, not a folder: give the remote's folder")
        }
        if !exists && !create {
            throw CLIError("noFolder", "the remote folder \(location.folder) does not exist: check the path and that its drive is mounted, or pass --create to create it")
        }
        let remote = try FolderRemote(root: location.folder, createIfMissing: create)
        let keyFile = options.keyFile.map(Paths.absolute)
        let storeID: StoreID
        let created: Bool
        var notes: [String] = []
        if let bytes = try await remote.get(RemoteLayout.manifestPath, limit: RemoteLayout.maxObjectSize(for: .manifest)) {
            let manifest = try StoreManifest(json: bytes)
            let credential = try RemoteConnection.credential(for: manifest, location: location, store: nil, options: options)
            _ = try RemoteConnection.unlock(manifest, with: credential)
            storeID = manifest.storeID
            created = false
        } else if let keyFile {
            let key: StoreKey
            if FileManager.default.fileExists(atPath: keyFile) {
                key = try Secrets.key(file: keyFile)
            } else {
                key = try Secrets.writeNewKey(to: keyFile)
                notes.append("wrote a new key to \(keyFile): copy it to every device that syncs; whoever holds it can read the store")
            }
            let manifest = StoreManifest.createForKeyFile(storeKey: key)
            try await remote.put(RemoteLayout.manifestPath, manifest.jsonBytes())
            storeID = manifest.storeID
            created = true
        } else {
            let passphrase = try Secrets.passphrase(for: "the new remote store at \(location.folder)", prompt: "New passphrase", confirm: true)
            storeID = try await SyncEngine.createRemote(remote, passphrase: passphrase, limits: try Secrets.limits()).storeID
            created = true
        }
        if let recorded = try SyncEngine.remoteStoreID(in: store), recorded != storeID.hex {
            throw CLIError(
                "storeMismatch",
                "this replica already synced with remote store \(recorded), but \(location.folder) holds store \(storeID.hex): a replica belongs to one store — create a new replica with `concord init --store NEW.db` and set its remote")
        }
        try store.setSyncValue(CLIConfig.remote, location.url)
        try store.setSyncValue(CLIConfig.keyFile, keyFile)
        let how = keyFile.map { "key file \($0)" } ?? "passphrase"
        options.emit(
            .object([
                ("remote", .string(location.url)), ("folder", .string(location.folder)), ("storeID", .string(storeID.hex)),
                ("created", .bool(created)), ("keyFile", .string(keyFile)),
            ]),
            ([created ? "created a remote store in \(location.folder) (\(how))" : "unlocked the remote store in \(location.folder) (\(how))",
              "  remote \(location.url)", "  store \(storeID.hex)"] + notes.map { "  " + $0 } + ["  next: `concord sync`"])
                .joined(separator: "\n"))
    }
}

struct RemotePassphrase: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "passphrase",
        abstract: "Change the remote store's passphrase (no data is re-encrypted).",
        discussion: """
            The current passphrase comes from $CONCORD_PASSPHRASE (or --key-file, or a prompt); the \
            new one from $CONCORD_NEW_PASSPHRASE or a prompt (typed twice). Other devices then need \
            the new passphrase.
            """)

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        guard let location = try RemoteLocation.configured(in: store) else { throw CLIError.noRemote }
        let remote = try FolderRemote(root: location.folder)
        let manifest = try await RemoteConnection.readManifest(remote, location: location)
        let credential = try RemoteConnection.credential(for: manifest, location: location, store: store, options: options)
        let key = try RemoteConnection.unlock(manifest, with: credential)
        let newPassphrase = try Secrets.passphrase(
            for: "the remote store at \(location.folder)", prompt: "New passphrase", confirm: true,
            variable: Secrets.newPassphraseVariable)
        let updated = try manifest.settingPassphrase(newPassphrase, storeKey: key, limits: try Secrets.limits())
        try await remote.put(RemoteLayout.manifestPath, updated.jsonBytes())
        options.emit(
            .object([("remote", .string(location.url)), ("storeID", .string(updated.storeID.hex)), ("changed", .bool(true))]),
            "changed the passphrase of the remote store in \(location.folder); other devices need the new passphrase from now on")
    }
}
