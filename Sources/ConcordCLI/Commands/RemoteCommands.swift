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
        let keyFile = try store.setting(CLIConfig.keyFile)
        let storeID = try SyncEngine.remoteStoreID(in: store)
        // A folder is checked here; an HTTP remote is not contacted (`concord status` does).
        let reachable = location?.folder.map { FileManager.default.fileExists(atPath: $0) }
        var lines: [String] = []
        if let location {
            lines.append("remote \(location.url)\(reachable == false ? " (the folder is missing: is its drive mounted?)" : "")")
            if let note = location.backend.credentialsNote { lines.append("  \(note)") }
            lines.append("  unlocked with \(keyFile.map { "key file \($0)" } ?? "a passphrase ($CONCORD_PASSPHRASE or a prompt)")")
            if let storeID { lines.append("  remote store \(storeID)\(location.named == nil ? "" : " (a named store below \(location.root.url))")") }
        } else {
            lines.append("no remote: set one with `concord remote set file:///path/to/folder` (or https://host/path, s3://bucket/prefix)")
        }
        options.emit(
            .object([
                ("remote", .string(location?.url)), ("folder", .string(location?.folder)),
                ("kind", .string(location.map(\.kind))), ("reachable", reachable.map(JSON.bool) ?? .null),
                ("keyFile", .string(keyFile)), ("storeID", .string(storeID)),
                ("root", .string(location?.named == nil ? nil : location?.root.url)),
            ]),
            lines.joined(separator: "\n"))
    }
}

struct RemoteSet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "set",
        abstract: "Point this store at a remote; creates the remote store if the remote holds none.",
        discussion: """
            URL is a folder (file:///path/to/folder, or a path), a WebDAV folder \
            (https://host/path, --user NAME when the server asks for one: the password comes \
            from $CONCORD_REMOTE_PASSWORD or a prompt and is never stored; http:// works too, \
            with a warning unless the host is this machine), or S3-compatible storage \
            (s3://bucket/prefix, --endpoint URL for a service other than AWS, --region R; \
            credentials from $AWS_ACCESS_KEY_ID and $AWS_SECRET_ACCESS_KEY, with \
            $AWS_SESSION_TOKEN, or $AWS_PROFILE in ~/.aws/credentials). If the remote holds a \
            concord.json, the passphrase (or --key-file) must unlock it; otherwise a new remote \
            store is created there, protected by the passphrase (typed twice on a terminal) or \
            by --key-file FILE (a new random key is written to FILE if it does not exist). \
            $CONCORD_KDF_LIMITS sets the Argon2id cost of a new passphrase.
            """)

    @Argument(help: ArgumentHelp("The remote: file:///path/to/folder, https://host/path or s3://bucket/prefix.", valueName: "url")) var url: String
    @Flag(name: .long, help: "Create the folder, WebDAV folder or bucket if it does not exist (and, with --remote-store, the named store).") var create = false
    @Option(name: .customLong("remote-store"), help: ArgumentHelp("A named store on the remote (`concord stores list URL` lists them); without it, the one store at the remote's root.", valueName: "name"))
    var remoteStore: String?
    @OptionGroup var remoteOptions: RemoteOptions
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let location = try remoteOptions.location(url)
        if let remoteStore {
            do {
                try StoreManifest.validateName(remoteStore)
            } catch {
                throw ValidationError("--remote-store: \(error.message)")
            }
        }
        let store = try options.openStore()
        location.warnIfInsecure()
        if let remoteStore {
            return try await setNamed(remoteStore, root: location, store: store)
        }
        let remote = try await location.open(checkRoot: true, create: create)
        let keyFile = options.keyFile.map(Paths.absolute)
        let storeID: StoreID
        let created: Bool
        var notes: [String] = []
        let recorded = try SyncEngine.remoteStoreID(in: store)
        var existing = try await remote.getManifest().map(StoreManifest.init(json:))
        if existing == nil, let recorded {
            // This replica synced with a store: never create another in its place. Put back
            // the concord.json it keeps, if the folder lost it; otherwise refuse.
            guard try SyncEngine.keptManifest(in: store)?.storeID.hex == recorded,
                  let restored = try await SyncEngine.restoreManifest(remote, from: store) else {
                throw ConcordError(.storeMismatch, "this replica synced with remote store \(recorded), and \(location.display) holds no concord.json: nothing was written there — point this replica at its store's folder, or create a new replica with `concord init --store NEW.db` for a new store")
            }
            notes.append("\(location.display) held no concord.json: put back the copy this replica unlocked")
            existing = restored
        }
        if let manifest = existing {
            if let recorded, recorded != manifest.storeID.hex {
                throw ConcordError(.storeMismatch, "this replica already synced with remote store \(recorded), but \(location.display) holds store \(manifest.storeID.hex): a replica belongs to one store — create a new replica with `concord init --store NEW.db` and set its remote")
            }
            let credential = try RemoteConnection.credential(for: manifest, location: location, store: nil, options: options)
            _ = try RemoteConnection.unlock(manifest, with: credential)
            storeID = manifest.storeID
            created = false
            try SyncEngine.keepManifest(manifest, in: store)
        } else {
            // No concord.json: create a store, unless the place holds another store's objects
            // (its concord.json deleted): a new store there would strand them.
            if try await SyncEngine.holdsStoreLayout(remote) {
                throw ConcordError(.invalidOperation, "\(location.display) holds a Concord store's heads and batches but no concord.json (it was deleted): nothing was written — sync a replica that unlocked this store (it puts its copy back), or restore concord.json from a backup; to start a new store, use an empty folder")
            }
            let manifest: StoreManifest
            if let keyFile {
                let key: StoreKey
                if FileManager.default.fileExists(atPath: keyFile) {
                    key = try Secrets.key(file: keyFile)
                } else {
                    key = try Secrets.writeNewKey(to: keyFile)
                    notes.append("wrote a new key to \(keyFile): copy it to every device that syncs; whoever holds it can read the store")
                }
                manifest = StoreManifest.createForKeyFile(storeKey: key)
                try await remote.put(RemoteLayout.manifestPath, manifest.jsonBytes())
            } else {
                let passphrase = try Secrets.passphrase(for: "the new remote store at \(location.display)", prompt: "New passphrase", confirm: true)
                _ = try await SyncEngine.createRemote(remote, passphrase: passphrase, limits: try Secrets.limits())
                manifest = try await RemoteConnection.readManifest(remote, location: location)
            }
            storeID = manifest.storeID
            created = true
            try SyncEngine.keepManifest(manifest, in: store)
        }
        try store.setSetting(CLIConfig.remote, location.url)
        try store.setSetting(CLIConfig.remoteStore, nil)
        try store.setSetting(CLIConfig.keyFile, keyFile)
        let how = keyFile.map { "key file \($0)" } ?? "passphrase"
        options.emit(
            .object([
                ("remote", .string(location.url)), ("folder", .string(location.folder)), ("kind", .string(location.kind)), ("storeID", .string(storeID.hex)),
                ("created", .bool(created)), ("keyFile", .string(keyFile)),
            ]),
            ([created ? "created a remote store in \(location.display) (\(how))" : "unlocked the remote store in \(location.display) (\(how))",
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
        guard let location = try RemoteLocation.configured(in: store) else { throw ConcordError.noRemote }
        let remote = try await location.open()
        let manifest = try await RemoteConnection.readManifest(remote, location: location)
        let credential = try RemoteConnection.credential(for: manifest, location: location, store: store, options: options)
        let key = try RemoteConnection.unlock(manifest, with: credential)
        let newPassphrase = try Secrets.passphrase(
            for: "the remote store at \(location.display)", prompt: "New passphrase", confirm: true,
            variable: Secrets.newPassphraseVariable)
        let updated = try manifest.settingPassphrase(newPassphrase, storeKey: key, limits: try Secrets.limits())
        try await remote.put(RemoteLayout.manifestPath, updated.jsonBytes())
        try SyncEngine.keepManifest(updated, in: store)
        options.emit(
            .object([("remote", .string(location.url)), ("storeID", .string(updated.storeID.hex)), ("changed", .bool(true))]),
            "changed the passphrase of the remote store in \(location.display); other devices need the new passphrase from now on")
    }
}
