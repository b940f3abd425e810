import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

struct MembersCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "members",
        abstract: "List, add and remove the members of a shared store.",
        discussion: """
            A member is a public key (`concord id show`) with a name and a role: owner (manages \
            members, writes), writer, or reader. Adding a member to a store that is not shared \
            yet makes this device's identity its first owner. Every batch, head and snapshot of a \
            shared store is signed by its writer and checked by every replica.
            """,
        subcommands: [MembersList.self, MembersAdd.self, MembersRemove.self])
}

struct MembersList: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List the store's members: name, role, public key, status.")

    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let membership = try await connection.engine.members()
        let members = membership.sorted
        let document = JSON.array(members.map { member in
            .object([("name", .string(member.name)), ("role", .string(member.role.name)), ("publicKey", .string(member.identity.description)), ("status", .string(member.status))])
        })
        let text = members.isEmpty
            ? "this store is not shared (no members): `concord members add PUBKEY --name NAME --role ROLE` shares it"
            : members.map { "\($0.name)\t\($0.role)\t\($0.status)\t\($0.identity)" }.joined(separator: "\n")
        options.emit(document, text)
    }
}

struct MembersAdd: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add",
        abstract: "Add a member (owner only): grants it the store key, sealed to its public key.")

    @Argument(help: ArgumentHelp("The member's public key (what `concord id show` prints: cpk1…).", valueName: "PUBKEY")) var publicKey: String
    @Option(name: .long, help: "The member's name, shown in `members list`.") var name: String
    @Option(name: .long, help: "owner, writer or reader.") var role: String
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        guard MemberRole(role) != nil else { throw ValidationError("--role is owner, writer or reader, not \(role)") }
        guard !name.isEmpty else { throw ValidationError("--name must not be empty") }
    }

    func run() async throws {
        let member = try PublicIdentity(string: publicKey)
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let membership = try await connection.engine.addMember(member, name: name, role: MemberRole(role)!)
        let storeOption = remoteStoreOption(connection)
        options.emit(
            .object([("name", .string(name)), ("role", .string(role)), ("publicKey", .string(member.description)), ("members", .int(Int64(membership.members.count)))]),
            "added \"\(name)\" as \(role) (\(membership.members.values.filter { !$0.isRemoved }.count) active members)\n  next: the member runs `concord join \(connection.location.root.url)\(storeOption)`")
    }

    private func remoteStoreOption(_ connection: RemoteConnection) -> String {
        guard connection.location.named != nil, let name = try? connection.manifest.name(with: connection.key) else { return "" }
        return " --remote-store \(name)"
    }
}

struct MembersRemove: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "remove",
        abstract: "Remove a member (owner only): whatever it signs after this is rejected everywhere.",
        discussion: """
            The removal records, per replica of the member, the last change this replica had \
            applied: later ones are rejected by every replica. What the member already had, it \
            keeps. The store key is then rotated to the members left: what is sealed after they \
            read the new key is under a key the removed member never gets.
            """)

    @Argument(help: "The member's name.") var name: String
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let membership = try await connection.engine.removeMember(named: name)
        options.emit(
            .object([("removed", .string(name)), ("members", .int(Int64(membership.members.values.filter { !$0.isRemoved }.count)))]),
            "removed \"\(name)\": what it signs from now on is rejected by every replica; the store key was rotated to the \(membership.members.values.filter { !$0.isRemoved }.count) members left")
    }
}

struct Join: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Join a shared store with this store's identity (no passphrase).",
        discussion: """
            The store at --store must have an identity (`concord id create`) that an owner added \
            (`concord members add`). Finds the key grant sealed to it on the remote, checks the \
            membership, and makes this store a replica of the shared store; then run `concord sync`.
            """)

    @Argument(help: "The remote's URL (its root).") var url: String
    @Option(name: .customLong("remote-store"), help: ArgumentHelp("The named store to join (default: the store at the root).", valueName: "NAME")) var remoteStore: String?
    @OptionGroup var remoteOptions: RemoteOptions
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        guard let identity = try options.identity() else {
            throw ConcordError(.invalidKey, "joining takes this store's identity, and there is none (no \(options.storePath).identity): run `concord id create`, and have an owner add the public key it prints")
        }
        if let recorded = try SyncEngine.remoteStoreID(in: store) {
            throw ConcordError(.storeMismatch, "this replica already synced with remote store \(recorded): join with a new store (`concord init --store NEW.db`, then `concord id create`)")
        }
        let root = try remoteOptions.location(url)
        let rootRemote = try await root.open(checkRoot: true)
        var location = root
        var found: (key: StoreKey, storeID: StoreID, root: [UInt8])?
        if let remoteStore {
            let stores = RemoteStores(root: root.backend, access: RemoteLocation.access)
            for entry in try await stores.list(credential: nil) where !entry.isRoot {
                let remote = try await stores.open(entry.id)
                guard let granted = try? await SyncEngine.grantedKey(remote, identity: identity),
                      let manifest = try? await RemoteConnection.readManifest(remote, location: root),
                      (try? manifest.name(with: granted.key)) == remoteStore else { continue }
                found = granted
                location = RemoteLocation(root: root.backend, store: entry.id)
                break
            }
        } else {
            found = try await SyncEngine.grantedKey(rootRemote, identity: identity)
        }
        guard let found else {
            throw ConcordError(.notFound, "no \(remoteStore.map { "store named \"\($0)\"" } ?? "store") on \(root.display) has a key grant for this identity: check that an owner added \(identity.publicIdentity.description.prefix(16))… (`concord members add`)")
        }
        let remote = try await location.open()
        let manifest = try await RemoteConnection.readManifest(remote, location: location)
        try SyncEngine.pinMembershipRoot(found.root, in: store)
        let engine = SyncEngine(store: store, remote: remote, key: found.key, storeID: found.storeID, identity: identity)
        let membership = try await engine.members()
        guard let me = membership.member(signingKey: identity.publicIdentity.signingKey), !me.isRemoved else {
            throw ConcordError(.notFound, "a key grant opens with this identity, but the membership does not list it as an active member: ask an owner to add it again")
        }
        try SyncEngine.keepManifest(manifest, in: store)
        try store.setSetting(CLIConfig.remote, root.url)
        try store.setSetting(CLIConfig.remoteStore, location.named?.id.hex)
        try store.setSetting(CLIConfig.unlockWith, "identity")
        options.emit(
            .object([("remote", .string(root.url)), ("remoteStore", .string(remoteStore)), ("storeID", .string(found.storeID.hex)), ("name", .string(me.name)), ("role", .string(me.role.name))]),
            "joined store \(found.storeID.hex) on \(root.display) as \"\(me.name)\" (\(me.role))\n  next: `concord sync`")
    }
}
