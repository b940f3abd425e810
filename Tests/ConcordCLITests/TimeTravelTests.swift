import ConcordCore
import Foundation
import Testing

/// Storage and devices that go back in time, as a person meets them with the CLI.
@Suite struct TimeTravelTests {
    /// Copies every file of store `name` (the database, its journal, its files) to `copy`.
    func copyStore(_ cli: CLI, _ name: String, to copy: String) throws {
        let manager = FileManager.default
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix("\(name).db") {
            let target = item.replacingOccurrences(of: "\(name).db", with: "\(copy).db")
            try? manager.removeItem(atPath: cli.path(target))
            try manager.copyItem(atPath: cli.path(item), toPath: cli.path(target))
        }
    }

    /// Puts the copy back in place of store `name`, as a restore from a backup does.
    func restoreStore(_ cli: CLI, _ name: String, from copy: String) throws {
        let manager = FileManager.default
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix("\(name).db") {
            try manager.removeItem(atPath: cli.path(item))
        }
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix("\(copy).db") {
            try manager.copyItem(atPath: cli.path(item), toPath: cli.path(item.replacingOccurrences(of: "\(copy).db", with: "\(name).db")))
        }
    }

    /// a and b sync; the remote folder is copied aside; both write and sync; the old copy
    /// is put back. Each replica republishes what it holds, and a new replica sees all.
    @Test func aRolledBackRemoteLosesNoPushedWrite() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.syncAll(["a", "b"])
        let aside = cli.path("remote-aside")
        try FileManager.default.copyItem(atPath: cli.path("remote"), toPath: aside)
        try cli.on("a", ["put", "notes", "n2", "title=two"])
        try cli.on("b", ["put", "notes", "m2", "title=from b"])
        try cli.syncAll(["a", "b"])
        try FileManager.default.removeItem(atPath: cli.path("remote"))
        try FileManager.default.moveItem(atPath: aside, toPath: cli.path("remote"))
        // a's next sync says what it published again, in JSON and as a warning.
        let result = try cli.on("a", ["sync", "--json"])
        let republished = try #require(try result.object()["remoteRolledBack"] as? [String])
        #expect(republished.contains { $0.hasPrefix("replicas/") } && republished.contains { $0.hasPrefix("heads/") }, "\(republished)")
        #expect(result.stderr.contains("published again"), "\(result.stderr)")
        try cli.replicas(["c"])
        try cli.syncAll(["a", "b", "c"])
        let dumps = Set(try ["a", "b", "c"].map { try cli.dump($0) })
        #expect(dumps.count == 1)
        for id in ["n1", "n2", "m2"] { #expect(try cli.dump("c").contains(id), "\(id) missing") }
    }

    /// a syncs; its store is backed up; it writes n2 and syncs; b pulls n2; the backup is
    /// restored and a writes n3. a continues under a new id: nothing is overwritten, and
    /// every replica, a new one included, has n1, n2 and n3.
    @Test func aRestoredDeviceContinuesWithoutLoss() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.syncAll(["a", "b"])
        try copyStore(cli, "a", to: "backup")
        try cli.on("a", ["put", "notes", "n2", "title=two"])
        try cli.on("a", ["sync"])
        try cli.on("b", ["sync"])
        let batches = cli.path("remote")
        let before = try Set(FileManager.default.subpathsOfDirectory(atPath: batches).filter { $0.contains("/deltas/") })
        let bytesBefore = try before.map { try Data(contentsOf: URL(fileURLWithPath: batches + "/" + $0)) }
        try restoreStore(cli, "a", from: "backup")
        try cli.on("a", ["put", "notes", "n3", "title=three"])
        let result = try cli.on("a", ["sync", "--json"])
        let restored = try #require(try result.object()["restoredCopy"] as? [String: Any], "\(result.stdout)")
        #expect(restored["oldReplica"] as? String != restored["newReplica"] as? String)
        #expect(result.stderr.contains("older copy"), "\(result.stderr)")
        // No batch that was there got other bytes.
        #expect(try before.map { try Data(contentsOf: URL(fileURLWithPath: batches + "/" + $0)) } == bytesBefore)
        try cli.replicas(["c"])
        try cli.syncAll(["a", "b", "c"])
        let dumps = Set(try ["a", "b", "c"].map { try cli.dump($0) })
        #expect(dumps.count == 1)
        for id in ["n1", "n2", "n3"] { #expect(try cli.dump("c").contains(id), "\(id) missing") }
    }

    /// concord.json restored from a backup taken before a passphrase change: the current
    /// passphrase no longer unlocks it, and the message says why instead of "wrong".
    @Test func anOlderConcordJsonIsNamedNotCalledAWrongPassphrase() throws {
        var cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        try cli.on("a", ["sync"])
        let manifest = cli.path("remote") + "/concord.json"
        let old = try Data(contentsOf: URL(fileURLWithPath: manifest))
        let changed = try cli.run(["remote", "passphrase", "--store", cli.path("a.db")], environment: ["CONCORD_NEW_PASSPHRASE": "a new passphrase"])
        #expect(changed.status == 0, "\(changed.stderr)")
        cli.passphrase = "a new passphrase"
        try cli.on("a", ["sync"])
        try old.write(to: URL(fileURLWithPath: manifest))
        let result = try cli.run(["sync", "--store", cli.path("a.db")])
        expectFailure(result, status: 1, mentioning: ["older backup", "passphrase change"])
        // Its old passphrase still opens it; nothing was lost.
        cli.passphrase = "correct horse battery staple"
        try cli.on("a", ["sync"])
    }

    /// Another store's concord.json in place of this one's — created with another
    /// passphrase, or the same one — is named as a changed store, never as a wrong
    /// passphrase, and nothing is merged into it.
    @Test func anotherStoresConcordJsonIsNamedAsAChangedStore() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.on("a", ["sync"])
        let manifest = cli.path("remote") + "/concord.json"
        let original = try Data(contentsOf: URL(fileURLWithPath: manifest))
        for passphrase in ["another passphrase", "correct horse battery staple"] {
            var other = try CLI()
            defer { other.cleanUp() }
            other.passphrase = passphrase
            try other.replicas(["x"])
            try Data(contentsOf: URL(fileURLWithPath: other.path("remote") + "/concord.json")).write(to: URL(fileURLWithPath: manifest))
            let before = try FileManager.default.subpathsOfDirectory(atPath: cli.path("remote")).sorted()
            try cli.on("a", ["put", "notes", "n2", "title=two"])
            expectFailure(try cli.run(["sync", "--store", cli.path("a.db")]), status: 1, mentioning: ["the store changed"])
            #expect(try FileManager.default.subpathsOfDirectory(atPath: cli.path("remote")).sorted() == before)
        }
        // Once the store's own concord.json is back, the change waiting here is pushed.
        try original.write(to: URL(fileURLWithPath: manifest))
        try cli.on("a", ["sync"])
    }
}
