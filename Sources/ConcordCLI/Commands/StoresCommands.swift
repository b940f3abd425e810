import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

struct StoresCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stores",
        abstract: "List or delete the stores of a remote.",
        subcommands: [StoresList.self, StoresDelete.self])
}

struct StoresList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "list",
        abstract: "List the stores of a remote: each one's id, creation time and size, and the names of those the passphrase or key file opens.",
        discussion: """
            Names are sealed under each store's own key: a store the passphrase ($CONCORD_PASSPHRASE, \
            a prompt, or --key-file) does not open is listed without its name. Without a passphrase \
            or a terminal, every store is listed without its name.
            """)

    @Argument(help: ArgumentHelp("The remote's root: file:///path/to/folder, https://host/path or s3://bucket/prefix.", valueName: "url")) var url: String
    @OptionGroup var remoteOptions: RemoteOptions
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let location = try remoteOptions.location(url)
        location.warnIfInsecure()
        _ = try await location.open(checkRoot: true, advice: "check the URL")
        let credential: RemoteStores.Credential?
        if let keyFile = options.keyFile {
            credential = .key(try Secrets.key(file: keyFile))
        } else if ProcessInfo.processInfo.environment[Secrets.passphraseVariable].map({ !$0.isEmpty }) == true || isatty(STDIN_FILENO) == 1 {
            credential = .passphrase(try Secrets.passphrase(for: "the stores on \(location.display)"))
        } else {
            credential = nil
        }
        let entries = try await RemoteStores(root: location.backend, access: RemoteLocation.access).list(credential: credential)
        let documents: [JSON] = entries.map { entry in
            .object([
                ("name", .string(entry.name)), ("id", .string(entry.id.hex)), ("opened", .bool(entry.opened)), ("root", .bool(entry.isRoot)),
                ("created", .uint(entry.created)), ("bytes", .uint(entry.bytes)), ("objects", .int(Int64(entry.objects))),
                ("problem", .string(entry.problem)),
            ])
        }
        var lines = entries.isEmpty ? ["\(location.display) holds no store"] : []
        for entry in entries {
            let label = entry.isRoot ? "(the store at the root)" : entry.name.map { "\"\($0)\"" } ?? (credential == nil ? "(name sealed: no passphrase given)" : "(name sealed: not opened by this \(options.keyFile == nil ? "passphrase" : "key file"))")
            let created = entry.created.map { " created \(Format.time($0))" } ?? ""
            lines.append("\(label)  \(entry.id.hex)\(created)  \(entry.objects) object\(entry.objects == 1 ? "" : "s"), \(entry.bytes) bytes\(entry.problem.map { "  problem: \($0)" } ?? "")")
        }
        options.emit(.object([("remote", .string(location.url)), ("stores", .array(documents))]), lines.joined(separator: "\n"))
    }
}

struct StoresDelete: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delete",
        abstract: "Delete a named store of a remote: every object below its folder, its concord.json last.",
        discussion: """
            The passphrase (or --key-file) must open the store. Refused while another device synced \
            it within the last 24 hours (its heads say when), unless --force. An interrupted \
            deletion is finished by running the command again. Other stores are not touched.
            """)

    @Argument(help: ArgumentHelp("The remote's root: file:///path/to/folder, https://host/path or s3://bucket/prefix.", valueName: "url")) var url: String
    @Argument(help: ArgumentHelp("The store's name.", valueName: "name")) var name: String
    @Flag(name: .long, help: "Delete even when another device synced the store recently.") var force = false
    @OptionGroup var remoteOptions: RemoteOptions
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        do {
            try StoreManifest.validateName(name)
        } catch {
            throw ValidationError(error.message)
        }
    }

    func run() async throws {
        let location = try remoteOptions.location(url)
        location.warnIfInsecure()
        _ = try await location.open(checkRoot: true, advice: "check the URL")
        let stores = RemoteStores(root: location.backend, access: RemoteLocation.access)
        let credential: RemoteStores.Credential = try options.keyFile.map { .key(try Secrets.key(file: $0)) }
            ?? .passphrase(try Secrets.passphrase(for: "the store \"\(name)\" on \(location.display)"))
        guard let found = try await stores.find(named: name, credential: credential) else {
            throw ConcordError(.noSuchStore, "\(location.display) holds no store named \"\(name)\" that this \(options.keyFile == nil ? "passphrase" : "key file") opens: nothing was deleted (`concord stores list \(location.url)` shows the stores)")
        }
        // This device's own replica of the store, if --store is one, does not count as "another device".
        var excluding = Set<ReplicaID>()
        var own: Store?
        if FileManager.default.fileExists(atPath: options.storePath), let store = try? Store(path: options.storePath),
           try SyncEngine.remoteStoreID(in: store) == found.manifest.storeID.hex {
            excluding.insert(store.replicaID)
            own = store
        }
        let deletion = try await stores.delete(
            found.manifest.storeID, key: found.key, now: UInt64(Date().timeIntervalSince1970 * 1000), force: force, excluding: excluding)
        // This replica keeps its local copy but no longer syncs: its next sync would put the
        // store back (it republishes what the remote lost).
        if let own { try own.setSetting(CLIConfig.remote, nil) }
        options.emit(
            .object([
                ("remote", .string(location.url)), ("name", .string(name)), ("id", .string(deletion.id.hex)),
                ("objectsDeleted", .int(Int64(deletion.objectsDeleted))), ("bytesDeleted", .uint(deletion.bytesDeleted)),
                ("disconnected", .bool(own != nil)),
            ]),
            "deleted the store \"\(name)\" (\(deletion.id.hex)) from \(location.display): \(deletion.objectsDeleted) object\(deletion.objectsDeleted == 1 ? "" : "s"), \(deletion.bytesDeleted) bytes"
                + (own == nil ? "" : "\n  this replica (\(options.storePath)) keeps its local copy and no longer has a remote"))
    }
}
