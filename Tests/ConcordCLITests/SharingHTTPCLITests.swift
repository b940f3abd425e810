import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordSync
import ConcordTestServers
import Foundation
import Testing

/// A shared store end to end through the `concord` binary on each HTTP backend — a real
/// WebDAV server (rclone, Basic auth) and a real S3 server (moto) on loopback: an owner
/// shares a named store, a writer and a reader join with no passphrase, and the three
/// converge; the reader's write stays local; the owner removes the writer, whose next sync
/// fails in one line saying so, while the owner and the reader converge under the rotated
/// key, and nothing written since the removal opens with any key the writer holds.
/// (`SharingCLITests` and `MemberRemovalTests` do the same and more on a folder.)
@Suite struct SharingHTTPCLITests {
    @Test(arguments: HTTPRemoteTests.kinds)
    func membersJoinConvergeAndARemovedWriterIsLockedOutOverHTTP(_ kind: ServerKind) async throws {
        let (cli, target) = try await HTTPRemoteTests.Target.cli(kind)
        defer { cli.cleanUp() }
        let sharing = SharingCLITests()
        // The owner creates a named store on the server and shares it.
        try await cli.onAsync("owner", ["init", "--name", "olivia"])
        try await cli.onAsync("owner", ["id", "create"])
        let created = try await cli.onAsync("owner", ["remote", "set"] + target.arguments + ["--remote-store", "family", "--create", "--json"]).object()
        let storeID = try #require(created["storeID"] as? String)
        try await cli.onAsync("owner", ["put", "c", "before-sharing", "v=1"])
        try await cli.onAsync("owner", ["sync"])
        var keys: [String: String] = [:]
        for name in ["writer", "reader"] {
            try await cli.onAsync(name, ["init", "--name", name])
            keys[name] = try #require(try await cli.onAsync(name, ["id", "create", "--json"]).object()["publicKey"] as? String)
        }
        try await cli.onAsync("owner", ["members", "add", try #require(keys["writer"]), "--name", "wendy", "--role", "writer"])
        try await cli.onAsync("owner", ["members", "add", try #require(keys["reader"]), "--name", "rita", "--role", "reader"])
        // Both join with their identities only: no passphrase anywhere.
        for name in ["writer", "reader"] {
            let joined = try await sharing.memberAsync(cli, name, ["join"] + target.arguments + ["--remote-store", "family", "--json"]).object()
            #expect(joined["storeID"] as? String == storeID)
            #expect(joined["role"] as? String == name)
        }
        try await cli.onAsync("writer", ["put", "c", "by-wendy", "v=2"])
        try await sharing.memberAsync(cli, "writer", ["sync"])
        // The reader's write stays local: its sync only pulls, and says so.
        try await cli.onAsync("reader", ["put", "c", "by-rita", "v=3"])
        #expect(try await sharing.memberAsync(cli, "reader", ["sync"]).stderr.contains("reader"))
        try await cli.onAsync("owner", ["sync"])
        for name in ["writer", "reader"] { try await sharing.memberAsync(cli, name, ["sync"]) }
        #expect(try await sharing.recordsAsync(cli, "owner") == ["before-sharing", "by-wendy"])
        #expect(try await sharing.recordsAsync(cli, "writer") == ["before-sharing", "by-wendy"])
        #expect(try await sharing.recordsAsync(cli, "reader") == ["before-sharing", "by-wendy", "by-rita"])
        #expect(try await cli.dumpAsync("owner") == cli.dumpAsync("writer"))

        // Every batch, head and snapshot before the removal, with its bytes.
        let remote = try RemoteStoresTests.remote(target, folder: "/stores/\(storeID)")
        let before = try await Self.sealedObjects(remote)

        // The owner removes the writer (the store key rotates); the owner and the reader go on.
        try await cli.onAsync("owner", ["members", "remove", "wendy"])
        try await cli.onAsync("owner", ["put", "c", "after-removal", "v=4"])
        try await cli.onAsync("owner", ["sync"])
        try await sharing.memberAsync(cli, "reader", ["sync"])
        #expect(try await sharing.recordsAsync(cli, "owner") == ["before-sharing", "by-wendy", "after-removal"])
        #expect(try await sharing.recordsAsync(cli, "reader") == ["before-sharing", "by-wendy", "after-removal", "by-rita"])
        let listed = try #require(try await cli.onAsync("owner", ["members", "list", "--json"]).json() as? [[String: Any]])
        #expect(listed.first { $0["name"] as? String == "wendy" }?["status"] as? String == "removed")

        // The writer: its next sync fails in one line saying it was removed; it keeps its copy.
        try await cli.onAsync("writer", ["put", "c", "late-wendy", "v=5"])
        expectFailure(try await cli.runAsync(["sync", "--store", cli.path("writer.db")], environment: ["CONCORD_PASSPHRASE": nil]), status: 1, mentioning: ["removed"])
        #expect(try await sharing.recordsAsync(cli, "writer") == ["before-sharing", "by-wendy", "late-wendy"])
        try await cli.onAsync("owner", ["sync"])
        #expect(!(try await sharing.recordsAsync(cli, "owner").contains("late-wendy")))

        // Nothing written since the removal opens with any key the writer holds: generation
        // 0 from its grant, and every generation its identity opens in the key objects.
        let writer = try DeviceIdentity(contentsOfSecretFile: cli.path("writer.db.identity"))
        let granted = try #require(try await SyncEngine.grantedKey(remote, identity: writer))
        var keyObjects: [KeyObject] = []
        for object in try await remote.list(prefix: RemoteLayout.keyObjectsPrefix) {
            guard case let .keyObject(hex)? = RemoteLayout.parse(object.path), let id = KeyGenerationID(hex: hex) else { continue }
            keyObjects.append(try KeyObject(bytes: try await remote.get(object.path) ?? [], path: object.path, id: id))
        }
        #expect(!keyObjects.isEmpty, "the removal rotated the key")
        let ring = try Keyring(base: granted.key, objects: keyObjects, identity: writer)
        #expect(ring.isRemoved)
        let held = [granted.key] + Array(ring.keys.values)
        let written = try await Self.sealedObjects(remote).filter { before[$0.key] != $0.value }
        // The owner's batch of after-removal and its head, at least.
        #expect(written.count >= 2 && written.keys.contains { $0.hasPrefix("replicas/") }, "\(written.keys.sorted())")
        for (path, bytes) in written {
            let generation = try EncryptedObject.generation(of: bytes, path: path)
            #expect(!generation.isZero, "\(path) was sealed under generation 0 after the removal")
            for key in held {
                for purpose in [KeyPurpose.batches, .heads, .snapshots] {
                    #expect((try? EncryptedObject.open(bytes, path: path, key: key.of(generation).subkey(for: purpose))) == nil, "\(path) opened with a key the writer holds")
                }
            }
        }
    }

    /// Every batch, head and snapshot on `remote`, by path.
    static func sealedObjects(_ remote: any Remote) async throws -> [String: [UInt8]] {
        var found: [String: [UInt8]] = [:]
        for object in try await remote.list(prefix: "") {
            switch RemoteLayout.parse(object.path) {
            case .batch?, .head?, .snapshot?:
                let bytes = try await remote.get(object.path)
                #expect(bytes != nil, "\(object.path) was listed but is gone")
                found[object.path] = bytes
            default: continue
            }
        }
        return found
    }
}
