import Foundation
import Testing

/// `concord id create` and `concord id show`: a device identity whose secret part stays in
/// a 0600 file beside the store and never appears in any output.
@Suite struct IdentityCLITests {
    @Test func anIdentityIsCreatedBesideTheStoreShownAndNeverPrintsItsSecret() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init", "--name", "a"])
        expectFailure(try cli.run(["id", "show", "--store", cli.path("a.db")]), status: 1, mentioning: ["id create"])
        expectFailure(try cli.run(["id", "create", "--store", cli.path("missing.db")]), status: 1, mentioning: ["missing.db"])

        var outputs: [String] = []
        let created = try cli.on("a", ["id", "create", "--json"])
        let text = try cli.on("a", ["id", "show"])
        let shown = try cli.on("a", ["id", "show", "--json"])
        let again = try cli.run(["id", "create", "--store", cli.path("a.db")])
        expectFailure(again, status: 1, mentioning: ["already exists"])
        outputs += [created, text, shown, again].flatMap { [$0.stdout, $0.stderr] }

        let publicKey = try #require(try created.object()["publicKey"] as? String)
        #expect(publicKey.hasPrefix("cpk1") && publicKey.count == 140)
        #expect(try shown.object()["publicKey"] as? String == publicKey)
        #expect(text.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == publicKey)

        let secretPath = cli.path("a.db.identity")
        let attributes = try FileManager.default.attributesOfItem(atPath: secretPath)
        #expect(attributes[.posixPermissions] as? Int == 0o600)
        let secretFile = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: secretPath))) as? [String: Any])
        let secrets = try ["exchangeSecret", "signingSeed"].map { try #require(secretFile[$0] as? String) }
        for output in outputs {
            for secret in secrets {
                #expect(!output.lowercased().contains(secret) && !output.lowercased().contains(secret.prefix(16)))
            }
        }
        // Another store gets another identity.
        try cli.on("b", ["init", "--name", "b"])
        let other = try cli.on("b", ["id", "create", "--json"]).object()["publicKey"] as? String
        #expect(other != nil && other != publicKey)
    }

    @Test func badStoreNamesAreUsageErrorsAndUnknownOnesOneLineFailures() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init"])
        let store = ["--store", cli.path("a.db")]
        expectFailure(try cli.run(["remote", "set", cli.remoteURL, "--remote-store", ""] + store), status: 2, mentioning: ["empty"])
        expectFailure(try cli.run(["remote", "set", cli.remoteURL, "--remote-store", "a\tb"] + store), status: 2, mentioning: ["control"])
        expectFailure(try cli.run(["stores", "delete", cli.remoteURL, ""] + store), status: 2, mentioning: ["empty"])
        expectFailure(try cli.run(["stores", "list"] + store), status: 2, mentioning: ["url"])
        expectFailure(try cli.run(["stores", "list", cli.remoteURL] + store), status: 1, mentioning: ["does not exist"])
        try cli.on("a", ["remote", "set", cli.remoteURL, "--remote-store", "mine", "--create"])
        expectFailure(try cli.run(["remote", "set", cli.remoteURL, "--remote-store", "other"] + store), status: 1, mentioning: ["no store named", "--create"])
        expectFailure(try cli.run(["stores", "delete", cli.remoteURL, "mine"] + store, environment: ["CONCORD_PASSPHRASE": "wrong"]), status: 1, mentioning: ["no store named"])
        // A new passphrase keeps the store's name; this device's own recent sync does not
        // hold its own deletion back.
        try cli.on("a", ["put", "c", "r", "v=1"])
        try cli.on("a", ["sync"])
        _ = try cli.run(["remote", "passphrase"] + store, environment: ["CONCORD_NEW_PASSPHRASE": "the new one"])
        let renamed = try cli.run(["stores", "list", cli.remoteURL, "--json"], environment: ["CONCORD_PASSPHRASE": "the new one"])
        #expect((try renamed.object()["stores"] as? [[String: Any]])?.first?["name"] as? String == "mine")
        expectFailure(try cli.run(["stores", "delete", cli.remoteURL, "mine"] + store), status: 1, mentioning: ["no store named"])
        let deleted = try cli.run(["stores", "delete", cli.remoteURL, "mine", "--json"] + store, environment: ["CONCORD_PASSPHRASE": "the new one"])
        #expect(try deleted.object()["disconnected"] as? Bool == true)
        // The replica keeps its copy and no longer syncs, so nothing puts the store back.
        #expect(try cli.on("a", ["remote", "show", "--json"]).object()["remote"] is NSNull)
        #expect(try cli.on("a", ["get", "c", "r", "--json"]).object()["id"] as? String == "r")
        #expect((try cli.ok(["stores", "list", cli.remoteURL, "--json"]).object()["stores"] as? [Any])?.isEmpty == true)
    }
}
