import ConcordCore
import Foundation
import Testing

/// The last holes in the promise, as a person meets them with the CLI: one file deleted
/// from the remote, or one clock gone wrong, must not stop a replica or lose a write.
@Suite struct PromiseTests {
    /// Deleting `concord.json` strands nothing: the next sync of any replica that unlocked
    /// the store puts back the copy it keeps, and every replica goes on syncing.
    /// A captive portal or proxy answering a web page for `concord.json` is named as such —
    /// not called a corrupt store — and nothing is written over it.
    @Test func aWebPageInPlaceOfConcordJSONIsNamedAndLeftAlone() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        let manifest = cli.path("remote/concord.json")
        let page = Data("<!DOCTYPE html>\n<html><body>Sign in to continue</body></html>\n".utf8)
        try page.write(to: URL(fileURLWithPath: manifest))
        let synced = try cli.run(["sync", "--store", cli.path("a.db")])
        #expect(synced.status != 0)
        #expect(synced.stderr.contains("web page") && synced.stderr.contains("captive portal"), "\(synced.stderr)")
        #expect(!synced.stderr.contains("corrupt") && !synced.stderr.contains("put back"), "\(synced.stderr)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: manifest)) == page)
    }

    @Test func aDeletedConcordJSONIsPutBackByTheNextSync() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.syncAll(["a", "b"])
        let manifest = cli.path("remote/concord.json")
        let original = try Data(contentsOf: URL(fileURLWithPath: manifest))
        try FileManager.default.removeItem(atPath: manifest)
        // Writes made while it is gone are not stranded.
        try cli.on("b", ["put", "notes", "n2", "title=two"])
        let synced = try cli.on("b", ["sync"])
        #expect(synced.stderr.contains("put back"), "\(synced.stderr)")
        let restored = try Data(contentsOf: URL(fileURLWithPath: manifest))
        #expect(try JSONSerialization.jsonObject(with: restored) as? NSDictionary == JSONSerialization.jsonObject(with: original) as? NSDictionary)
        try cli.syncAll(["a", "b"])
        #expect(try cli.dump("a") == cli.dump("b"))
        #expect(try cli.dump("a").contains("n2"))
        // A new replica unlocks the store put back with the same passphrase.
        try cli.replicas(["c"])
        try cli.syncAll(["c"])
        #expect(try cli.dump("c") == cli.dump("a"))
    }

    /// Replica a has synced n1 to the remote, whose `concord.json` is then deleted.
    static func syncedStoreWithoutConcordJSON() throws -> CLI {
        let cli = try CLI()
        try cli.replicas(["a"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.syncAll(["a"])
        try FileManager.default.removeItem(atPath: cli.path("remote/concord.json"))
        return cli
    }

    /// `doctor` names a missing `concord.json` it can put back, and `--repair` does.
    @Test func doctorRepairPutsBackADeletedConcordJSON() throws {
        let cli = try Self.syncedStoreWithoutConcordJSON()
        defer { cli.cleanUp() }
        // Any command that opens the remote puts it back, doctor included; so a doctor of
        // the library sees it missing only if nothing opened the remote first.
        let doctor = try cli.run(["doctor", "--store", cli.path("a.db")])
        #expect(doctor.status == 0, "\(doctor.stderr)")
        #expect(FileManager.default.fileExists(atPath: cli.path("remote/concord.json")))
    }

    /// `remote set` never writes before its checks pass: pointed at a store whose
    /// `concord.json` was deleted, a replica that never synced with it refuses to create a
    /// new store over the old one's objects, and the folder is left as it was.
    @Test func remoteSetRefusesToCreateAStoreOverAnExistingLayout() throws {
        let cli = try Self.syncedStoreWithoutConcordJSON()
        defer { cli.cleanUp() }
        try cli.on("new", ["init", "--name", "new"])
        let refused = try cli.run(["remote", "set", cli.remoteURL, "--store", cli.path("new.db")])
        #expect(refused.status != 0)
        expectFailure(refused, status: refused.status, mentioning: ["no concord.json", "nothing was written"])
        #expect(!FileManager.default.fileExists(atPath: cli.path("remote/concord.json")))
        // The replica that synced with it puts its copy back; then the new one joins.
        try cli.on("a", ["sync"])
        try cli.on("new", ["remote", "set", cli.remoteURL])
        try cli.syncAll(["new"])
        #expect(try cli.dump("new") == cli.dump("a"))
    }

    /// A replica pointed at a folder without `concord.json` — after it synced with a store —
    /// puts back its own store's copy rather than creating a new store, so no replica gets
    /// "the store changed" for good.
    @Test func remoteSetOnAReplicaThatSyncedPutsBackItsStoreNotANewOne() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.syncAll(["a", "b"])
        func storeID() throws -> String? {
            let json = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: cli.path("remote/concord.json"))))
            return (json as? [String: Any])?["storeID"] as? String
        }
        let before = try #require(try storeID())
        try FileManager.default.removeItem(atPath: cli.path("remote/concord.json"))
        let set = try cli.on("a", ["remote", "set", cli.remoteURL])
        #expect(set.stdout.contains("put back"), "\(set.stdout)")
        #expect(try storeID() == before)
        try cli.on("b", ["put", "notes", "n2", "title=two"])
        try cli.syncAll(["a", "b"])
        #expect(try cli.dump("a") == cli.dump("b"))
        #expect(try cli.dump("a").contains("n2"))
    }

    /// A device whose clock reads past the year 10889 — the end of a stamp's range — writes
    /// and syncs; every other replica goes on writing (they were all stopped for good
    /// once), its writes converge, and the broken device goes on writing too.
    @Test func aClockPastTheEndOfTheRangeStopsNobody() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b", "c"])
        let year11476: UInt64 = 300_000_000_000
        try cli.faked(year11476, on: "a", ["put", "notes", "n1", "title=from a broken clock"])
        try cli.faked(year11476, on: "a", ["sync"])
        try cli.syncAll(["b", "c"])
        for round in 0..<3 {
            try cli.on("b", ["put", "notes", "n1", "title=b \(round)"])
            try cli.on("c", ["put", "notes", "m\(round)", "title=c \(round)"])
            try cli.faked(year11476, on: "a", ["put", "notes", "a\(round)", "title=a \(round)"])
            try cli.syncAll(["b", "c"])
            try cli.faked(year11476, on: "a", ["sync"])
        }
        try cli.syncAll(["a", "b", "c"])
        // Its own status says so.
        let status = try cli.faked(year11476, on: "a", ["status", "--offline", "--json"]).object()
        #expect(status["clockBeyondRange"] as? Bool == true, "\(status)")
        #expect(try cli.on("b", ["status", "--offline", "--json"]).object()["clockBeyondRange"] as? Bool == false)
        let dump = try cli.dump("a")
        #expect(try cli.dump("b") == dump && cli.dump("c") == dump)
        #expect(dump.contains("b 2") && dump.contains("c 2") && dump.contains("a 2"), "\(dump)")
    }

    /// A device whose clock reads the year 9966 (inside the range, eight thousand years
    /// ahead): its writes apply everywhere, the others follow its clock no more than a day,
    /// their later writes still replace its values, and the sync names the offender.
    @Test func aFarFutureClockIsNamedAndItsValuesAreStillReplaced() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let year9966: UInt64 = 252_400_000_000
        try cli.faked(year9966, on: "a", ["put", "notes", "n1", "title=far"])
        try cli.faked(year9966, on: "a", ["sync"])
        let pulled = try cli.on("b", ["sync"])
        #expect(pulled.stderr.contains("clock runs") && pulled.stderr.contains("ahead"), "\(pulled.stderr)")
        let status = try cli.on("b", ["status", "--json"]).object()
        #expect((status["clockSkews"] as? [Any])?.count == 1, "\(status)")
        try cli.on("b", ["put", "notes", "n1", "title=later"])
        try cli.on("b", ["sync"])
        try cli.faked(year9966, on: "a", ["sync"])
        #expect(try cli.dump("a") == cli.dump("b"))
        #expect(try cli.dump("a").contains("later"))
    }

    /// The seconds since the epoch `days` from now: what `faketime` makes a device read.
    static func daysFromNow(_ days: Double) -> UInt64 {
        UInt64(Date().timeIntervalSince1970 + days * 86_400)
    }

    /// The fields of record `id` in collection `notes` as `dump` prints them, or nil.
    static func fields(_ dump: String, _ id: String) throws -> [String: Any]? {
        let json = try JSONSerialization.jsonObject(with: Data(dump.utf8)) as? [String: Any]
        return ((json?["collections"] as? [String: Any])?["notes"] as? [String: Any])?[id] as? [String: Any]
    }

    /// a deletes `x {f:1, g:1}`; `updater`, which a's purge cannot know of, updates `f=2`
    /// before it sees the deletion; a compacts twice, days apart, and purges x; both sync.
    /// Both must end with `x {f:2, g:1}`: the update keeps every field it held.
    static func expectEveryFieldKeptThroughAPurge(_ cli: CLI, updater: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        try cli.on("a", ["delete", "notes", "x"])
        try cli.on("a", ["sync"])
        try cli.on(updater, ["put", "notes", "x", "f=2"])
        let later = daysFromNow(4)
        try cli.faked(daysFromNow(0.01), on: "a", ["compact"])
        try cli.faked(later, on: "a", ["compact"])
        for _ in 0..<2 {
            try cli.faked(later, on: "a", ["sync"])
            try cli.on(updater, ["sync"])
        }
        let dump = try cli.dump(updater)
        #expect(try cli.faked(later, on: "a", ["dump"]).stdout == dump, sourceLocation: sourceLocation)
        let x = try #require(try fields(dump, "x"), "x is gone: \(dump)", sourceLocation: sourceLocation)
        #expect(x["f"] as? Int == 2, "\(dump)", sourceLocation: sourceLocation)
        #expect(x["g"] as? Int == 1, "the purge took g: \(dump)", sourceLocation: sourceLocation)
    }

    /// a writes `x {f:1, g:1}`; r only pulls; a deletes x; r updates `f=2`; a compacts
    /// twice, days apart, and purges x, which it could not know r still held; r syncs both
    /// ways. r's update keeps every field it held — `x {f:2, g:1}` everywhere, as rule 4
    /// promises without a purge — where the purge once left `x {f:2}`.
    @Test func aPullOnlyReaderKeepsEveryFieldThroughAPurge() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "r"])
        try cli.on("a", ["put", "notes", "x", "f=1", "g=1"])
        try cli.on("a", ["sync"])
        try cli.on("r", ["sync", "--pull-only"])
        try Self.expectEveryFieldKeptThroughAPurge(cli, updater: "r")
    }

    /// A stranger deletes a new replica's first head before anyone lists it; that replica
    /// updates a record concurrently with its deletion elsewhere; the deletion is purged
    /// after `purgeDelay`. The record comes back with every field the replica held, not
    /// only the one it wrote.
    @Test func aReplicaWhoseFirstHeadWasDeletedKeepsEveryFieldThroughAPurge() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        try cli.on("a", ["put", "notes", "x", "f=1", "g=1"])
        try cli.on("a", ["sync"])
        try cli.replicas(["n"])
        try cli.on("n", ["sync"])
        let heads = try FileManager.default.contentsOfDirectory(atPath: cli.path("remote/heads"))
        let nID = try #require(try cli.on("n", ["status", "--offline", "--json"]).object()["replica"] as? String)
        for head in heads where head.hasPrefix(nID) { try FileManager.default.removeItem(atPath: cli.path("remote/heads/\(head)")) }
        try Self.expectEveryFieldKeptThroughAPurge(cli, updater: "n")
    }

    /// q writes and syncs; a applies q's batch and forgets q (retired); a stranger deletes
    /// q's heads before b ever saw them; a writes again, its batch depending on q's. b,
    /// and a new replica c, still get both: a publishes what it applied of q again (a
    /// snapshot), and a replica whose batch waits on q walks q's batches by name. Once
    /// b waited for ever ("1 waiting").
    @Test func aRetiredReplicasDeletedHeadStrandsNothing() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b", "q"])
        try cli.on("q", ["put", "notes", "q1", "title=from q"])
        try cli.on("q", ["sync"])
        try cli.on("a", ["sync"])
        let qID = try #require(try cli.on("q", ["status", "--offline", "--json"]).object()["replica"] as? String)
        try cli.on("a", ["replicas", "forget", qID])
        for head in try FileManager.default.contentsOfDirectory(atPath: cli.path("remote/heads")) where head.hasPrefix(qID) {
            try FileManager.default.removeItem(atPath: cli.path("remote/heads/\(head)"))
        }
        try cli.on("a", ["put", "notes", "a1", "title=from a", "about=q1"])
        try cli.on("a", ["sync"])
        try cli.on("a", ["sync"])
        let pulled = try cli.on("b", ["sync", "--json"]).object()
        #expect(pulled["waiting"] as? Int == 0, "\(pulled)")
        try cli.replicas(["c"])
        try cli.syncAll(["a", "b", "c"])
        let dump = try cli.dump("a")
        #expect(dump.contains("from q") && dump.contains("from a"), "\(dump)")
        #expect(try cli.dump("b") == dump)
        #expect(try cli.dump("c") == dump)
        // doctor asks nothing of the retired replica: a snapshot covers all it wrote.
        let doctor = try cli.run(["doctor", "--store", cli.path("a.db")])
        #expect(doctor.status == 0, "\(doctor.stdout)")
        #expect(!doctor.stdout.contains("missingHead"), "\(doctor.stdout)")
    }
    /// Copies every file of store `from` (the database, its journal, its files) to store
    /// `to`, replacing what `to` had: a backup, or a restore from one.
    static func copyStore(_ cli: CLI, _ from: String, to: String) throws {
        let manager = FileManager.default
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix(to) {
            try manager.removeItem(atPath: cli.path(item))
        }
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix(from) {
            try manager.copyItem(atPath: cli.path(item), toPath: cli.path(to + item.dropFirst(from.count)))
        }
    }

    /// The remote is backed up; a writes n1 and syncs, and its store is backed up; a writes
    /// n2 and syncs, b pulls it; a's store is restored and a writes n3; the remote is
    /// restored. a must not write n3 under the batch name b applied n2 from: it continues
    /// under a new id, and every replica ends with n1, n2 and n3. (Once a reused its seq 2
    /// for n3, b never applied it, a never got n2 back, and `doctor` called both healthy.)
    @Test func aRestoredDeviceAndARolledBackRemoteTogetherLoseNothing() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.syncAll(["a", "b"])
        try FileManager.default.copyItem(atPath: cli.path("remote"), toPath: cli.path("remote-backup"))
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.on("a", ["sync"])
        try Self.copyStore(cli, "a.db", to: "backup-a.db")
        try cli.on("a", ["put", "notes", "n2", "title=two"])
        try cli.on("a", ["sync"])
        try cli.on("b", ["sync"])
        #expect(try cli.dump("b").contains("two"))
        try Self.copyStore(cli, "backup-a.db", to: "a.db")
        try cli.on("a", ["put", "notes", "n3", "title=three"])
        try FileManager.default.removeItem(atPath: cli.path("remote"))
        try FileManager.default.copyItem(atPath: cli.path("remote-backup"), toPath: cli.path("remote"))
        let first = try cli.on("a", ["sync", "--json"]).object()
        #expect(first["restoredCopy"] as? [String: Any] != nil, "\(first)")
        try cli.syncAll(["a", "b", "a", "b"])
        try cli.replicas(["c"])
        try cli.syncAll(["a", "b", "c"])
        let dump = try cli.dump("a")
        for word in ["one", "two", "three"] { #expect(dump.contains(word), "\(word) missing: \(dump)") }
        #expect(try cli.dump("b") == dump)
        #expect(try cli.dump("c") == dump)
    }

    /// Writes every file of store `from` over store `to`'s, the database into the very file
    /// `to` had (as `cp backup.db store.db` does over an existing file: its inode and birth
    /// time stay), the journal and the files copied: a restore that leaves no trace in the
    /// file's identity.
    static func copyStoreInPlace(_ cli: CLI, _ from: String, to: String) throws {
        let manager = FileManager.default
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix(to) && item != to {
            try manager.removeItem(atPath: cli.path(item))
        }
        for item in try manager.contentsOfDirectory(atPath: cli.folder.path) where item.hasPrefix(from) && item != from {
            try manager.copyItem(atPath: cli.path(item), toPath: cli.path(to + item.dropFirst(from.count)))
        }
        let handle = try #require(FileHandle(forWritingAtPath: cli.path(to)))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: try Data(contentsOf: URL(fileURLWithPath: cli.path(from))))
        try handle.close()
    }

    /// a writes n1 and syncs; the remote and a's store are backed up at that moment; a writes
    /// n2 and syncs, b pulls it; a's store (as a new file, or written back into its own file
    /// with `inPlace`) and the remote go back to the backups, and a writes n3. Returns a's id.
    static func restoreDeviceAndRemoteToOneMoment(_ cli: CLI, inPlace: Bool) throws -> String {
        try cli.replicas(["a", "b"])
        try cli.syncAll(["a", "b"])
        try cli.on("a", ["put", "notes", "n1", "title=one"])
        try cli.on("a", ["sync"])
        let a = try #require(try cli.on("a", ["status", "--json"]).object()["replica"] as? String)
        try FileManager.default.copyItem(atPath: cli.path("remote"), toPath: cli.path("remote-backup"))
        try copyStore(cli, "a.db", to: "backup-a.db")
        try cli.on("a", ["put", "notes", "n2", "title=two"])
        try cli.on("a", ["sync"])
        try cli.on("b", ["sync"])
        try (inPlace ? copyStoreInPlace : copyStore)(cli, "backup-a.db", "a.db")
        try FileManager.default.removeItem(atPath: cli.path("remote"))
        try FileManager.default.copyItem(atPath: cli.path("remote-backup"), toPath: cli.path("remote"))
        try cli.on("a", ["put", "notes", "n3", "title=three, written after the restore"])
        return a
    }

    /// The device's store and the remote are backed up at the same moment; a writes n2 and
    /// syncs, b pulls it; both are restored, and a writes n3 and syncs. a's store file was
    /// restored as a new file (a file copy, as a backup tool restores one), so a knows it is
    /// a copy whatever the remote shows: it continues under a new id before sealing, b
    /// republishes n2 (which the remote lost), and every replica ends with n1, n2 and n3.
    @Test func aDeviceRestoredAsANewFileWithItsRemoteToOneMomentLosesNothing() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let a = try Self.restoreDeviceAndRemoteToOneMoment(cli, inPlace: false)
        let first = try cli.on("a", ["sync", "--json"]).object()
        let change = try #require(first["restoredCopy"] as? [String: Any], "\(first)")
        #expect(change["oldReplica"] as? String == a && (change["evidence"] as? String)?.contains("its file is a copy") == true, "\(change)")
        #expect((first["forks"] as? [Any])?.isEmpty == true, "\(first)")
        try cli.syncAll(["b", "a", "b"])
        let dump = try cli.dump("a")
        for word in ["one", "two", "three"] { #expect(dump.contains(word), "\(word) missing: \(dump)") }
        #expect(try cli.dump("b") == dump)
        for replica in ["a", "b"] {
            let doctor = try cli.run(["doctor", "--store", cli.path("\(replica).db")])
            #expect(doctor.status == 0, "\(replica): \(doctor.stdout)")
        }
        // Synced again, the same file is not taken for a copy a second time.
        let again = try cli.on("a", ["sync", "--json"]).object()
        #expect(again["restoredCopy"] is NSNull, "\(again)")
    }

    /// The device's store and the remote are backed up at the same moment; a writes n2 and
    /// syncs, b pulls it; both are restored — the store's bytes written back into its own
    /// file, which keeps its identity — and a writes n3 and syncs: under the batch name b
    /// applied n2 from, with nothing on either side to tell. The fork is named first: by b's
    /// `doctor` (a `forkedHistory` problem), and by a once b's next batch depends on n2
    /// (`forks` in `sync --json`, a warning instead of "nothing was lost"). Then it is
    /// merged: a few syncs later a, b, and a replica c that joins afterwards hold n1, n2, n3
    /// and b's writes, converged; the merge is reported once (`merged`), and doctor finds no
    /// problem left.
    @Test func aDeviceRestoredInPlaceWithItsRemoteToOneMomentNamesTheForkThenMergesIt() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let a = try Self.restoreDeviceAndRemoteToOneMoment(cli, inPlace: true)
        let pushed = try cli.on("a", ["sync", "--json"]).object()
        #expect(pushed["pushed"] as? Int == 1 && (pushed["forks"] as? [Any])?.isEmpty == true, "\(pushed)")
        let forked = "replicas/\(a)/deltas/0000000000000002"
        let doctor = try cli.run(["doctor", "--json", "--store", cli.path("b.db")])
        #expect(doctor.status != 0)
        let problems = try #require(try doctor.object()["problems"] as? [[String: Any]])
        #expect(problems.contains { $0["kind"] as? String == "forkedHistory" && $0["path"] as? String == forked }, "\(problems)")
        try cli.on("b", ["put", "notes", "m1", "title=bee"])
        try cli.on("b", ["sync"])
        let found = try cli.on("a", ["sync", "--json"])
        let report = try found.object()
        #expect((report["restoredCopy"] as? [String: Any])?["oldReplica"] as? String == a, "\(report)")
        let forks = try #require(report["forks"] as? [[String: Any]])
        #expect(forks.contains { $0["replica"] as? String == a && $0["batch"] as? String == forked && $0["merged"] as? Bool == false }, "\(forks)")
        #expect(found.stderr.contains("history forked") && !found.stderr.contains("nothing was lost"), "\(found.stderr)")

        // The merge: b learns a's side from its head, a learns b's.
        var merged: [String: Int] = [:]
        for name in ["b", "a", "b", "a"] {
            let synced = try cli.on(name, ["sync", "--json"]).object()
            let forks = try #require(synced["forks"] as? [[String: Any]], "\(synced)")
            #expect(forks.allSatisfy { $0["merged"] as? Bool == true && $0["batch"] as? String == forked }, "\(name): \(forks)")
            merged[name, default: 0] += forks.count
        }
        #expect(merged == ["a": 1, "b": 1], "each replica reports the merge once: \(merged)")
        try cli.on("b", ["put", "notes", "m2", "title=bee again"])
        try cli.syncAll(["b", "a"])
        try cli.on("c", ["init", "--name", "c"])
        try cli.on("c", ["remote", "set", cli.remoteURL])
        try cli.syncAll(["c"])
        let dump = try cli.dump("a")
        for word in ["one", "two", "three, written after the restore", "bee", "bee again"] { #expect(dump.contains(word), "\(word) missing: \(dump)") }
        #expect(try cli.dump("b") == dump)
        #expect(try cli.dump("c") == dump)
        for replica in ["a", "b", "c"] {
            let doctor = try cli.run(["doctor", "--json", "--store", cli.path("\(replica).db")])
            #expect(doctor.status == 0, "\(replica): \(doctor.stdout)")
        }
    }
}
