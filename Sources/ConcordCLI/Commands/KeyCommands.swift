import ArgumentParser
import Concord
import Foundation

struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key",
        abstract: "Manage the store key's generations.",
        subcommands: [KeyRotate.self])
}

struct KeyRotate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rotate",
        abstract: "Rotate the store key: a new key sealed to the public keys given and to this device.",
        discussion: """
            Everything written from now on is sealed under the new key. Replicas whose identity \
            is given pick it up at their next sync; every other replica finds it was removed, \
            and keeps what it already had, read-only. Needs this store's identity (`concord id create`).
            """)

    @Argument(help: "The public keys (cpk1…, from `concord id show`) to seal the new key to, besides this device's.")
    var recipients: [String] = []
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let keys = try recipients.map { text throws(ConcordError) in try PublicIdentity(string: text) }
        let connection = try await RemoteConnection.open(store, options: options)
        let rotation = try await connection.engine.rotateStoreKey(recipients: keys)
        options.emit(
            .object([
                ("generation", .string(rotation.generation.description)),
                ("parents", .array(rotation.parents.map { .string($0.description) })),
                ("recipients", .int(Int64(rotation.recipients))),
            ]),
            "rotated the store key to generation \(rotation.generation) (sealed to \(rotation.recipients) identit\(rotation.recipients == 1 ? "y" : "ies"))")
    }
}
