import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

extension RemoteSet {
    /// `remote set URL --remote-store NAME [--create]`: points the store at the named store
    /// of the remote's root that the passphrase (or key file) opens, creating it with
    /// `--create` when there is none. Records the root's URL and the store's id: every later
    /// command reaches the store's own folder, `stores/<id>/`, and nothing of another store.
    func setNamed(_ name: String, root location: RemoteLocation, store: Store) async throws {
        _ = try await location.open(checkRoot: true, create: create)
        let stores = RemoteStores(root: location.backend, access: RemoteLocation.access)
        let keyFile = options.keyFile.map(Paths.absolute)
        var notes: [String] = []
        let credential: RemoteStores.Credential
        var newKey = false
        if let keyFile {
            if FileManager.default.fileExists(atPath: keyFile) {
                credential = .key(try Secrets.key(file: keyFile))
            } else {
                guard create else {
                    throw ConcordError(.keyFile, "cannot read key file \(keyFile): it does not exist (with --create, a new key is written there for a new store)")
                }
                credential = .key(StoreKey.random())
                newKey = true
            }
        } else {
            credential = .passphrase(try Secrets.passphrase(for: "the store \"\(name)\" on \(location.display)"))
        }
        let recorded = try SyncEngine.remoteStoreID(in: store)
        let unlocked: RemoteStores.Unlocked
        let created: Bool
        if !newKey, let found = try await stores.find(named: name, credential: credential) {
            unlocked = found
            created = false
        } else {
            guard create else {
                throw ConcordError(.noSuchStore, "\(location.display) holds no store named \"\(name)\" that this \(keyFile == nil ? "passphrase" : "key file") opens: check the name and the passphrase (`concord stores list \(location.url)`), or pass --create to create it")
            }
            if let recorded {
                throw ConcordError(.storeMismatch, "this replica already synced with remote store \(recorded): a replica belongs to one store — create a new replica with `concord init --store NEW.db` for the new store \"\(name)\"")
            }
            if newKey, let keyFile, case let .key(key) = credential {
                try Secrets.writeKey(key, to: keyFile)
                notes.append("wrote a new key to \(keyFile): copy it to every device that syncs; whoever holds it can read the store")
            }
            unlocked = try await stores.create(named: name, credential: credential, limits: try Secrets.limits(), now: UInt64(Date().timeIntervalSince1970 * 1000))
            created = true
        }
        let id = unlocked.manifest.storeID
        if let recorded, recorded != id.hex {
            throw ConcordError(.storeMismatch, "this replica already synced with remote store \(recorded), but the store \"\(name)\" on \(location.display) is store \(id.hex): a replica belongs to one store — create a new replica with `concord init --store NEW.db` and set its remote")
        }
        try SyncEngine.keepManifest(unlocked.manifest, in: store)
        try store.setSetting(CLIConfig.remote, location.url)
        try store.setSetting(CLIConfig.remoteStore, id.hex)
        try store.setSetting(CLIConfig.keyFile, keyFile)
        let how = keyFile.map { "key file \($0)" } ?? "passphrase"
        options.emit(
            .object([
                ("remote", .string(location.url)), ("remoteStore", .string(name)), ("folder", .string(location.folder)),
                ("kind", .string(location.kind)), ("storeID", .string(id.hex)), ("created", .bool(created)), ("keyFile", .string(keyFile)),
            ]),
            ([created ? "created the store \"\(name)\" in \(location.display) (\(how))" : "unlocked the store \"\(name)\" in \(location.display) (\(how))",
              "  remote \(location.url)", "  store \(id.hex) (below \(RemoteLayout.storesPrefix)\(id.hex)/)"] + notes.map { "  " + $0 } + ["  next: `concord sync`"])
                .joined(separator: "\n"))
    }
}
