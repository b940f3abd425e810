import Foundation
import Testing

/// A shared store end to end through the `concord` binary, on one folder remote: an owner,
/// a writer and a reader converge; writes that no member could make — a reader's, an
/// unsigned one, one signed by a key that is not a member, a removed member's later one —
/// are rejected by every replica and named by doctor; nothing of the members is in plaintext
/// on the remote.
@Suite struct SharingCLITests {
    /// The folder of the named store on the remote at `remote`.
    func storeFolder(_ cli: CLI, _ remote: String) throws -> String {
        let stores = cli.path("\(remote)/stores")
        return stores + "/" + (try #require(try FileManager.default.contentsOfDirectory(atPath: stores).first))
    }

    /// Writes from the store `rogue` (set up by `prepare`) pushed to a scratch remote that
    /// holds only the real store's `concord.json`, then planted — every batch and head of
    /// it — into the real remote. Returns the rogue's replica id.
    func plant(_ cli: CLI, rogue: String, record: String, prepare: (String) throws -> Void) throws -> String {
        let scratch = "scratch-\(rogue)"
        let real = try storeFolder(cli, "remote")
        let copy = cli.path("\(scratch)/stores") + "/" + URL(fileURLWithPath: real).lastPathComponent
        try FileManager.default.createDirectory(atPath: copy, withIntermediateDirectories: true)
        try FileManager.default.copyItem(atPath: real + "/concord.json", toPath: copy + "/concord.json")
        try cli.on(rogue, ["remote", "set", "file://" + cli.path(scratch), "--remote-store", "family"])
        try prepare(scratch)
        try cli.on(rogue, ["put", "c", record, "v=planted"])
        try cli.on(rogue, ["sync"])
        let replica = try #require(try FileManager.default.contentsOfDirectory(atPath: copy + "/replicas").first)
        try FileManager.default.createDirectory(atPath: real + "/replicas/\(replica)/deltas", withIntermediateDirectories: true)
        for batch in try FileManager.default.contentsOfDirectory(atPath: copy + "/replicas/\(replica)/deltas") {
            try FileManager.default.copyItem(atPath: copy + "/replicas/\(replica)/deltas/\(batch)", toPath: real + "/replicas/\(replica)/deltas/\(batch)")
        }
        for head in try FileManager.default.contentsOfDirectory(atPath: copy + "/heads") where head.hasPrefix(replica) {
            try FileManager.default.copyItem(atPath: copy + "/heads/\(head)", toPath: real + "/heads/\(head)")
        }
        return replica
    }

    /// Runs a command on the member store `name` with no passphrase anywhere.
    @discardableResult
    func member(_ cli: CLI, _ name: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> CLI.Result {
        let result = try cli.run(arguments + ["--store", cli.path("\(name).db")], environment: ["CONCORD_PASSPHRASE": nil])
        #expect(result.status == 0, "concord \(arguments.joined(separator: " ")) on \(name) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    func records(_ cli: CLI, _ name: String) throws -> Set<String> {
        let listed = try cli.run(["list", "c", "--json", "--store", cli.path("\(name).db")]).object()["records"] as? [[String: Any]] ?? []
        return Set(listed.compactMap { $0["id"] as? String })
    }

    /// ``member(_:_:_:sourceLocation:)`` for async tests (the child waited for off the pool).
    @discardableResult
    func memberAsync(_ cli: CLI, _ name: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> CLI.Result {
        let result = try await cli.runAsync(arguments + ["--store", cli.path("\(name).db")], environment: ["CONCORD_PASSPHRASE": nil])
        #expect(result.status == 0, "concord \(arguments.joined(separator: " ")) on \(name) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// ``records(_:_:)`` for async tests.
    func recordsAsync(_ cli: CLI, _ name: String) async throws -> Set<String> {
        let listed = try await cli.runAsync(["list", "c", "--json", "--store", cli.path("\(name).db")]).object()["records"] as? [[String: Any]] ?? []
        return Set(listed.compactMap { $0["id"] as? String })
    }

    @Test func anOwnerAWriterAndAReaderConvergeAndUnauthorizedWritesAreRejectedEverywhere() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        // The owner shares its passphrase store; a writer and a reader join with their identities.
        try cli.on("owner", ["init", "--name", "olivia-device"])
        try cli.on("owner", ["id", "create"])
        try cli.on("owner", ["remote", "set", cli.remoteURL, "--remote-store", "family", "--create"])
        try cli.on("owner", ["put", "c", "before-sharing", "v=1"])
        try cli.on("owner", ["sync"])
        var keys: [String: String] = [:]
        for name in ["writer", "reader"] {
            try cli.on(name, ["init", "--name", name])
            keys[name] = try #require(try cli.on(name, ["id", "create", "--json"]).object()["publicKey"] as? String)
        }
        expectFailure(try cli.run(["join", cli.remoteURL, "--remote-store", "family", "--store", cli.path("writer.db")]), status: 1, mentioning: ["grant"])
        try cli.on("owner", ["members", "add", keys["writer"]!, "--name", "wendy", "--role", "writer"])
        try cli.on("owner", ["members", "add", keys["reader"]!, "--name", "rita", "--role", "reader"])
        let listed = try #require(try cli.on("owner", ["members", "list", "--json"]).json() as? [[String: Any]])
        #expect(listed.map { "\($0["name"]!) \($0["role"]!) \($0["status"]!)" }.sorted() == ["olivia-device owner active", "rita reader active", "wendy writer active"])
        #expect(Set(listed.compactMap { $0["publicKey"] as? String }).isSuperset(of: keys.values))
        for name in ["writer", "reader"] {
            try member(cli, name, ["join", cli.remoteURL, "--remote-store", "family"])
        }
        try cli.on("writer", ["put", "c", "by-wendy", "v=2"])
        try member(cli, "writer", ["sync"])
        // The reader's own change stays local: it only pulls, and says so.
        try cli.on("reader", ["put", "c", "by-rita", "v=3"])
        let readerSync = try member(cli, "reader", ["sync"])
        #expect(readerSync.stderr.contains("reader"))
        try cli.on("owner", ["sync"])
        #expect(try records(cli, "owner") == ["before-sharing", "by-wendy"])
        #expect(try records(cli, "reader") == ["before-sharing", "by-wendy", "by-rita"])

        // Planted: the reader's write (it holds the store key, so it can seal one; its
        // identity in a store of its own), an unsigned one, and one signed by a key that
        // is not a member.
        try cli.on("rogue-reader", ["init"])
        try FileManager.default.copyItem(atPath: cli.path("reader.db.identity"), toPath: cli.path("rogue-reader.db.identity"))
        let fromReader = try plant(cli, rogue: "rogue-reader", record: "planted-reader") { _ in
            try cli.on("rogue-reader", ["members", "add", keys["writer"]!, "--name", "x", "--role", "writer"])
        }
        try cli.on("rogue-unsigned", ["init"])
        let unsigned = try plant(cli, rogue: "rogue-unsigned", record: "planted-unsigned") { _ in }
        try cli.on("rogue-stranger", ["init"])
        try cli.on("rogue-stranger", ["id", "create"])
        let stranger = try plant(cli, rogue: "rogue-stranger", record: "planted-stranger") { _ in
            try cli.on("rogue-stranger", ["members", "add", keys["writer"]!, "--name", "x", "--role", "writer"])
        }
        // A removed member's later write, under its own replica id past the removal's cut:
        // the writer, not yet aware of its removal, writes through a copy of the remote
        // from before it, and that batch and head are planted into the real remote.
        try FileManager.default.copyItem(atPath: cli.path("remote"), toPath: cli.path("before-removal"))
        try cli.on("owner", ["members", "remove", "wendy"])
        try cli.on("writer", ["remote", "set", "file://" + cli.path("before-removal"), "--remote-store", "family"])
        try cli.on("writer", ["put", "c", "after-removal", "v=4"])
        try member(cli, "writer", ["sync"])
        try cli.on("writer", ["remote", "set", cli.remoteURL, "--remote-store", "family"])
        let before = try storeFolder(cli, "before-removal")
        let real = try storeFolder(cli, "remote")
        var lateReplicas: Set<String> = []
        for replica in try FileManager.default.contentsOfDirectory(atPath: before + "/replicas") {
            for batch in try FileManager.default.contentsOfDirectory(atPath: before + "/replicas/\(replica)/deltas") {
                let path = "/replicas/\(replica)/deltas/\(batch)"
                guard !FileManager.default.fileExists(atPath: real + path) else { continue }
                #expect(batch == "0000000000000002", "the writer's second batch, under its own id")
                try FileManager.default.copyItem(atPath: before + path, toPath: real + path)
                lateReplicas.insert(replica)
            }
        }
        for head in try FileManager.default.contentsOfDirectory(atPath: before + "/heads") where !FileManager.default.fileExists(atPath: real + "/heads/\(head)") {
            try FileManager.default.copyItem(atPath: before + "/heads/\(head)", toPath: real + "/heads/\(head)")
        }
        let writerReplica = try #require(lateReplicas.first)
        #expect(lateReplicas.count == 1)

        // Every replica rejects every one of them, naming it, and still converges.
        for name in ["owner", "reader"] {
            let synced = name == "owner" ? try cli.on(name, ["sync"]) : try member(cli, name, ["sync"])
            for replica in [fromReader, unsigned, stranger, writerReplica] {
                #expect(synced.stderrLines.contains { $0.contains(replica) && $0.contains("unauthentic") }, "\(name) does not name \(replica): \(synced.stderr)")
            }
            #expect(try records(cli, name).isDisjoint(with: ["planted-reader", "planted-unsigned", "planted-stranger", "after-removal"]))
            #expect(try records(cli, name).isSuperset(of: ["before-sharing", "by-wendy"]), "the removed member's earlier write stays")
        }
        let doctor = try cli.run(["doctor", "--json", "--store", cli.path("owner.db")])
        #expect(doctor.status == 1)
        let findings = try #require(try doctor.object()["problems"] as? [[String: Any]])
        let unauthentic = findings.filter { $0["kind"] as? String == "unauthentic" }.compactMap { $0["path"] as? String }
        for replica in [fromReader, unsigned, stranger, writerReplica] {
            #expect(unauthentic.contains { $0.contains(replica) }, "doctor does not name \(replica): \(findings)")
        }
        // The removed member's own sync fails in one line.
        expectFailure(try cli.run(["sync", "--store", cli.path("writer.db")], environment: ["CONCORD_PASSPHRASE": nil]), status: 1, mentioning: ["removed"])
        #expect(try records(cli, "writer").isSuperset(of: ["before-sharing", "by-wendy", "after-removal"]), "the removed member keeps its copy")
        // Its copy is read-only from then on: a local write is refused, and nothing changes.
        expectFailure(try cli.run(["put", "--store", cli.path("writer.db"), "c", "after-told", "v=5"]), status: 1, mentioning: ["read-only"])
        #expect(try !records(cli, "writer").contains("after-told"))
        let after = try #require(try cli.on("owner", ["members", "list", "--json"]).json() as? [[String: Any]])
        #expect(after.first { $0["name"] as? String == "wendy" }?["status"] as? String == "removed")

        // Nothing of the members in plaintext on the remote: no name, no public key in any
        // form, no store name.
        var secrets = ["wendy", "rita", "olivia-device", "family"].map { Array($0.utf8) }
        for key in keys.values {
            let hex = String(key.dropFirst(4))
            secrets += [Array(key.utf8), Array(hex.prefix(64).utf8), Array(hex.dropFirst(64).prefix(64).utf8)]
            let bytes = stride(from: 0, to: 128, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
            secrets += [Array(bytes.prefix(32)), Array(bytes.suffix(32))]
        }
        let enumerator = try #require(FileManager.default.enumerator(atPath: cli.path("remote")))
        var checked = 0
        while let relative = enumerator.nextObject() as? String {
            let path = cli.path("remote/\(relative)")
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            let contents = [UInt8](try Data(contentsOf: URL(fileURLWithPath: path)))
            checked += 1
            for secret in secrets {
                #expect(!contents.contains(secret) && !relative.utf8.contains(secret), "\(relative) holds a member's name or key in plaintext")
            }
        }
        #expect(checked > 10)
    }

    @Test func theRootStoreIsSharedAndJoinedAndDeletingTheMembersDoesNotTurnItBackIntoAnUnsignedOne() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("owner", ["init", "--name", "owner"])
        try cli.on("owner", ["id", "create"])
        try cli.on("owner", ["remote", "set", cli.remoteURL, "--create"])
        try cli.on("owner", ["put", "c", "a", "v=1"])
        try cli.on("owner", ["sync"])
        // A device of the owner with the passphrase only, which synced before the sharing.
        try cli.on("phone", ["init", "--name", "phone"])
        try cli.on("phone", ["remote", "set", cli.remoteURL])
        try cli.on("phone", ["sync"])
        try cli.on("writer", ["init", "--name", "writer"])
        let key = try #require(try cli.on("writer", ["id", "create", "--json"]).object()["publicKey"] as? String)
        try cli.on("owner", ["members", "add", key, "--name", "wendy", "--role", "writer"])
        try member(cli, "writer", ["join", cli.remoteURL])
        try cli.on("writer", ["put", "c", "b", "v=2"])
        try member(cli, "writer", ["sync"])
        // The phone finds the store shared on its next sync: it applies the member's signed
        // write, and only pulls from then on.
        try cli.on("phone", ["put", "c", "from-phone", "v=3"])
        let phone = try cli.on("phone", ["sync"])
        #expect(phone.stderr.contains("pulled only") && phone.stderr.contains("no identity"), "\(phone.stderr)")
        #expect(try records(cli, "phone") == ["a", "b", "from-phone"])

        // The membership logs deleted from the remote; a new passphrase device, which never
        // saw them, pushes an unsigned write. Every replica that saw the store shared rejects it.
        try FileManager.default.removeItem(atPath: cli.path("remote/members"))
        try cli.on("intruder", ["init"])
        try cli.on("intruder", ["remote", "set", cli.remoteURL])
        try cli.on("intruder", ["put", "c", "unsigned", "v=4"])
        try cli.on("intruder", ["sync"])
        for name in ["owner", "writer", "phone"] {
            let synced = name == "writer" ? try member(cli, name, ["sync"]) : try cli.on(name, ["sync"])
            #expect(synced.stderr.contains("unauthentic"), "\(name): \(synced.stderr)")
            #expect(try records(cli, name).isSuperset(of: ["a", "b"]) && !(try records(cli, name).contains("unsigned")))
        }
        let listed = try #require(try cli.on("owner", ["members", "list", "--json"]).json() as? [[String: Any]])
        #expect(listed.count == 2)
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes.
    func contains(_ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, needle.count <= count else { return false }
        return (0...(count - needle.count)).contains { self[$0..<($0 + needle.count)].elementsEqual(needle) }
    }
}

extension String.UTF8View {
    func contains(_ needle: [UInt8]) -> Bool { Array(self).contains(needle) }
}
