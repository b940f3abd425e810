import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// What someone who can write the remote, but has no key, can plant there: names claim
/// nothing until their objects authenticate, and no planted object stops a replica.
@Suite struct HostileRemoteTests {
    let note = RecordRef(collection: "notes", id: "n1")

    /// Writes `bytes` at `path` below the fleet's remote folder, as a stranger would.
    func plant(_ fleet: Fleet, _ path: String, _ bytes: [UInt8] = Array("hello".utf8)) throws {
        let file = fleet.scratch.file("remote") + "/" + path
        try FileManager.default.createDirectory(atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        #expect(FileManager.default.createFile(atPath: file, contents: Data(bytes)))
    }

    @Test func plantedHeadNamesWithAbsurdSeqsClaimNothingAndEverythingElseSyncs() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(note, "title", .string("from a"))
        try await fleet.syncAll(rounds: 1)
        let stranger = ReplicaID(hex: "0123456789abcdef0123456789abcdef")!
        let planted = [
            RemoteLayout.head(stranger, seq: .max),  // traps a range today
            RemoteLayout.head(stranger, seq: 1 << 32),  // a 103 GB allocation today
            RemoteLayout.head(a.replicaID, seq: .max),  // under a real replica's name
            RemoteLayout.head(b.replicaID, seq: 1 << 24),
        ]
        for path in planted { try plant(fleet, path) }
        try a.set(note, "body", .string("a again"))
        try b.set(RecordRef(collection: "notes", id: "n2"), "title", .string("from b"))
        // Every replica still pulls and pushes; the planted heads are reported, never believed.
        var rejected: Set<String> = []
        for _ in 0..<2 {
            for engine in fleet.engines {
                let report = try await engine.sync()
                for line in report.rejected { rejected.insert(String(line.prefix { $0 != ":" })) }
            }
        }
        #expect(try fleet.dumps().count == 1)
        #expect(try b.record(note)?.first { $0.name == "body" }?.value == .scalar(.string("a again")))
        #expect(try a.record(RecordRef(collection: "notes", id: "n2")) != nil)
        // b's own planted name and a's are among those reported by the other replica.
        #expect(rejected.isSuperset(of: [planted[0], planted[1]]), "\(rejected)")
        // A new replica joins through the same remote.
        var grown = fleet
        try await grown.add(name: "newcomer")
        try await grown.engines[2].sync()
        #expect(try grown.stores[2].canonicalDump() == a.canonicalDump())
        // `replicas` lists the real three, not the stranger.
        let replicas = try await fleet.engines[0].replicas()
        #expect(Set(replicas.map(\.id)) == [a.replicaID, b.replicaID, grown.stores[2].replicaID])
    }

    /// Plants 1,000 head names at `seq` of replicas nobody saw, and checks that b's first
    /// sync reads each once and its next two (each applying a batch of a) read none of them
    /// again — a's new head and batch only — and report them in one line. Returns b's first
    /// sync's report too.
    func plantedHeadNamesAreReadOnce(seq: UInt64) async throws -> (Fleet, CountingGets, [String], SyncReport) {
        let (fleet, counter) = try await Fleet.wrapped(count: 2, CountingGets.init)
        let a = fleet.stores[0]
        try a.set(note, "title", .string("from a"))
        try await fleet.syncAll(rounds: 1)
        let planted = (0..<1_000).map { RemoteLayout.head(ReplicaID(high: 0x5eed, low: UInt64($0)), seq: seq) }
        for path in planted { try plant(fleet, path) }
        counter.reset()
        let first = try await fleet.engines[1].sync()
        #expect(counter.gets(under: "heads/") >= planted.count)
        for round in 0..<2 {
            try a.set(note, "body", .string("round \(round)"))
            try await fleet.engines[0].sync()
            counter.reset()
            let later = try await fleet.engines[1].sync()
            #expect(later.applied == 1)
            #expect(counter.gets(under: "heads/") == 1 && counter.gets(under: "replicas/") == 1, "\(counter.gets(under: "heads/")) head gets, \(counter.gets(under: "replicas/")) batch gets")
            #expect(later.rejected.count == 1 && later.rejected[0].contains("1000 head names"), "\(later.rejected.prefix(3))")
        }
        return (fleet, counter, planted, first)
    }

    /// 1,000 planted head names of replicas nobody saw: the first sync reads each once; the
    /// next syncs read none of them again (0 gets under `heads/` and `replicas/`), and
    /// report them in one line; a name whose object changes is read again (1 get). Each
    /// was once read again, one after another, on every sync (100,000 names: 20 s a sync).
    @Test func headNamesThatDidNotOpenAreReadOnceUntilTheyChange() async throws {
        let (fleet, counter, planted, first) = try await plantedHeadNamesAreReadOnce(seq: 1)
        let b = fleet.stores[1]
        #expect(first.rejected.count >= planted.count)
        // Remembered in the store's sync state, one entry per name.
        #expect(try b.unopenedHeads().count == planted.count)
        // A name that changes is read again.
        try plant(fleet, planted[0], Array("changed, and longer".utf8))
        counter.reset()
        let changed = try await fleet.engines[1].sync()
        #expect(counter.gets(under: "heads/") == 1)
        #expect(changed.rejected.contains { $0.hasPrefix(planted[0]) })
        #expect(try fleet.dumps().count == 1)
    }

    /// The same for first head names (`heads/<id>-0000000000000000`), which the listing
    /// believes without opening since they claim nothing: once read and not opened, they
    /// are not read again by later syncs, by compaction's standings or by `replicas` (each
    /// was read again by every sync, and once more by every compaction).
    @Test func firstHeadNamesThatDidNotOpenAreReadOnceBySyncsAndCompaction() async throws {
        let (fleet, counter, _, _) = try await plantedHeadNamesAreReadOnce(seq: 0)
        let a = fleet.stores[0]
        counter.reset()
        _ = try await fleet.engines[1].compact()
        let replicas = try await fleet.engines[1].replicas()
        #expect(Set(replicas.map(\.id)) == [a.replicaID, fleet.stores[1].replicaID])
        // a's head, once for each of the two listings' standings, and nothing planted.
        #expect(counter.gets(under: "heads/") <= 4, "\(counter.gets(under: "heads/")) head gets")
        #expect(try fleet.dumps().count == 1)
    }

    @Test func doctorReportsACopiedHeadWithoutFalseFindings() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(note, "title", .string("from a"))
        try b.set(note, "body", .string("from b"))
        try await fleet.syncAll()
        #expect(try await fleet.engines[0].doctor().isHealthy)
        // b's real head copied under a's name with a million batches, and a 5-byte name of
        // seq ffffffffffffffff: both fail to authenticate.
        let bHead = try #require(try await fleet.remote.list(prefix: "heads/").first { $0.path.contains(b.replicaID.description) })
        let copied = RemoteLayout.head(a.replicaID, seq: 1_000_000)
        try plant(fleet, copied, try #require(try await fleet.remote.get(bHead.path)))
        let absurd = RemoteLayout.head(b.replicaID, seq: .max)
        try plant(fleet, absurd)
        let absurdBatch = RemoteLayout.batch(b.replicaID, seq: .max)
        try plant(fleet, absurdBatch)
        let report = try await fleet.engines[0].doctor()
        let byPath = Dictionary(grouping: report.problems, by: \.path)
        #expect(Set(byPath.keys) == [copied, absurd, absurdBatch], "\(report.problems)")
        // Named beyond anything a or b announced: planted, with the file to remove.
        #expect(report.problems.allSatisfy { $0.kind == .planted && $0.action.contains($0.path) }, "\(report.problems)")
        #expect(!report.findings.contains { $0.kind == .missingBatch || $0.kind == .staleHead })
        // Every real replica is still listed.
        #expect(Set(try await fleet.engines[1].replicas().map(\.id)) == [a.replicaID, b.replicaID])
    }

    @Test func aSwappedStoreManifestStopsEverySyncWithOneLine() async throws {
        let fleet = try await Fleet(count: 1)
        try fleet.stores[0].set(note, "title", .string("mine"))
        try await fleet.syncAll(rounds: 1)
        // Another store created with the same passphrase; its concord.json replaces ours,
        // while every other object stays.
        let other = TemporaryDirectory("other")
        let otherFolder = try FolderRemote(root: other.file("remote"), createIfMissing: true)
        let created = try await SyncEngine.createRemote(otherFolder, passphrase: Fleet.passphrase, limits: .minimum)
        try plant(fleet, RemoteLayout.manifestPath, try #require(try await otherFolder.get(RemoteLayout.manifestPath)))
        // An engine opened now (as every CLI command does) gets the other store's key and id.
        let (key, storeID) = try await SyncEngine.unlock(fleet.remote, passphrase: Fleet.passphrase)
        #expect(storeID == created.storeID)
        let engine = SyncEngine(store: fleet.stores[0], remote: fleet.remote, key: key, storeID: storeID, clock: fleet.clock)
        try fleet.stores[0].set(note, "title", .string("not pushed under the other key"))
        let before = try await fleet.remote.list(prefix: "").map(\.path).sorted()
        do {
            try await engine.sync()
            Issue.record("a sync went on against another store's concord.json")
        } catch {
            #expect(error.code == .storeMismatch, "\(error)")
            #expect(error.message.contains("the store changed"), "\(error)")
        }
        #expect(try await fleet.remote.list(prefix: "").map(\.path).sorted() == before)
    }

    @Test func aFIFOInPlaceOfABatchIsSkippedWhileEverythingElseSyncs() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(note, "title", .string("one"))
        try await fleet.syncAll()
        try a.set(note, "title", .string("two"))
        try await fleet.engines[0].sync()
        // a's batch 2, which b still needs, becomes a FIFO: reading it would block forever.
        let batch = RemoteLayout.batch(a.replicaID, seq: 2)
        let file = fleet.scratch.file("remote") + "/" + batch
        try FileManager.default.removeItem(atPath: file)
        #expect(mkfifo(file, 0o644) == 0)
        try b.set(RecordRef(collection: "notes", id: "from-b"), "title", .string("b's"))
        // b's sync returns (a hang would never get here), skips the FIFO, and pushes its own.
        let report = try await fleet.engines[1].sync()
        #expect(report.rejected.contains { $0.hasPrefix(batch) }, "\(report.rejected)")
        #expect(report.pushed == 1)
        try await fleet.engines[0].sync()
        #expect(try a.record(RecordRef(collection: "notes", id: "from-b")) != nil)
        // doctor names it, and nothing else.
        let doctor = try await fleet.engines[1].doctor()
        #expect(doctor.problems.map(\.path) == [batch], "\(doctor.problems)")
        #expect(doctor.problems.first?.kind == .unreadable)
        // Once a person removes it, a's repair writes the batch again and b catches up.
        try FileManager.default.removeItem(atPath: file)
        _ = try await fleet.engines[0].doctor(repair: true)
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
    }

    @Test func aLinkInPlaceOfAReplicasBatchesIsNamedAndNothingOutsideIsTouched() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(note, "title", .string("one"))
        try b.set(RecordRef(collection: "notes", id: "from-b"), "title", .string("b's"))
        try await fleet.syncAll()
        // b's batches folder becomes a link to a folder outside the remote, holding a file
        // named like a batch.
        let outside = fleet.scratch.file("outside")
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: true)
        try Data("not yours".utf8).write(to: URL(fileURLWithPath: outside + "/0000000000000002"))
        let deltas = fleet.scratch.file("remote") + "/" + RemoteLayout.batchesPrefix(b.replicaID)
        let folder = deltas.hasSuffix("/") ? String(deltas.dropLast()) : deltas
        try FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createSymbolicLink(atPath: folder, withDestinationPath: outside)
        let before = try FileManager.default.contentsOfDirectory(atPath: outside)
        // a's change still reaches b; b's own push fails with a one-line error naming it.
        try a.set(note, "title", .string("two"))
        try await fleet.engines[0].sync()
        _ = try? await fleet.engines[1].sync()
        #expect(try b.record(note)?.first { $0.name == "title" }?.value == .scalar(.string("two")))
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside) == before)
        #expect(try Data(contentsOf: URL(fileURLWithPath: outside + "/0000000000000002")) == Data("not yours".utf8))
        // doctor names the link, and calls nothing behind it missing.
        let report = try await fleet.engines[0].doctor()
        #expect(report.problems.contains { $0.kind == .unreadable && $0.message.contains("symbolic link") }, "\(report.problems)")
        #expect(!report.findings.contains { $0.kind == .missingBatch || $0.kind == .remoteRolledBack }, "\(report.findings)")
    }
}

/// Counts `get`s by path (a planted name read again shows up here).
final class CountingGets: ForwardingRemote {
    let base: any Remote
    private let paths = Mutex<[String]>([])

    init(_ base: FolderRemote) { self.base = base }

    func reset() { paths.withLock { $0 = [] } }
    func gets(under prefix: String) -> Int { paths.withLock { $0.filter { $0.hasPrefix(prefix) }.count } }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        paths.withLock { $0.append(path) }
        return try await base.get(path)
    }

    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        paths.withLock { $0.append(path) }
        return try await base.get(path, limit: limit)
    }
}
