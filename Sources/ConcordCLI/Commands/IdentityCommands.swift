import ArgumentParser
import Concord
import Foundation

struct IdCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "id",
        abstract: "Create or show this store's device identity (an X25519 and an Ed25519 key pair).",
        subcommands: [IdCreate.self, IdShow.self])

    /// The identity's secret file: beside the store file, `PATH.identity`.
    static func secretPath(_ options: GlobalOptions) -> String {
        options.storePath + ".identity"
    }
}

struct IdCreate: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "create",
        abstract: "Create this store's device identity; prints its public key.",
        discussion: """
            The secret part is written beside the store (PATH.identity, mode 0600), never to the \
            remote and never to any output; an existing identity is never replaced.
            """)

    @OptionGroup var options: GlobalOptions

    func run() throws {
        _ = try options.openStore()
        let path = IdCommand.secretPath(options)
        let identity = DeviceIdentity.generate()
        try identity.writeNewSecretFile(at: path)
        options.emit(
            .object([("publicKey", .string(identity.publicIdentity.description)), ("secretFile", .string(path))]),
            "created this device's identity (secret part in \(path), readable by you only)\n  public key \(identity.publicIdentity)")
    }
}

struct IdShow: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "show", abstract: "Show this store's device public key.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        _ = try options.openStore()
        let path = IdCommand.secretPath(options)
        guard FileManager.default.fileExists(atPath: path) else {
            throw ConcordError(.notFound, "this store has no identity (no \(path)): create one with `concord id create`")
        }
        let identity = try DeviceIdentity(contentsOfSecretFile: path)
        options.emit(.object([("publicKey", .string(identity.publicIdentity.description))]), identity.publicIdentity.description)
    }
}

extension GlobalOptions {
    /// This store's device identity, from `PATH.identity` when that file exists; else nil.
    func identity() throws -> DeviceIdentity? {
        let path = storePath + ".identity"
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        return try DeviceIdentity(contentsOfSecretFile: path)
    }
}
