import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import Foundation
import Testing

/// Replicas sync through each real server, every one behind its own `FaultyRemote`
/// (failing calls, lost replies, torn and lost puts, lost deletes, stale, incomplete,
/// duplicated and reordered listings), while the storage is rolled back and loses objects.
/// After the faults stop they must print identical dumps, hold every write that was never
/// deleted, and the server must hold no plaintext.
///
/// `make test` runs 50 schedules per server (Apache, nginx, rclone, moto and Ceph's
/// gateway, the five at once: under two minutes on a quiet 2-core machine, and the longest
/// suite of `make test` under its load);
/// `CONCORD_HTTP_SCHEDULES` sets the count (`make soak`: 500); `CONCORD_HTTP_SEED`
/// replays one.
@Suite struct HTTPSyncFuzzTests {
    static let environment = ProcessInfo.processInfo.environment
    static let schedules = Int(environment["CONCORD_HTTP_SCHEDULES"] ?? "") ?? 50
    static let firstSeed = UInt64(environment["CONCORD_HTTP_SEED"] ?? "") ?? 1
    static let backends = (environment["CONCORD_HTTP_BACKENDS"]?.split(separator: ",").compactMap { ServerKind(rawValue: String($0)) }) ?? ServerKind.conformance

    @Test(arguments: backends)
    func faultySchedulesConvergeThroughEveryServer(_ kind: ServerKind) async throws {
        let count = Self.environment["CONCORD_HTTP_SEED"] != nil && Self.environment["CONCORD_HTTP_SCHEDULES"] == nil ? 1 : Self.schedules
        var faults = FaultyRemote.Counts()
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(count)) {
            let run = HTTPFuzzRun(kind: kind, seed: seed)
            defer { run.cleanUp() }
            let failures = try await run.run()
            #expect(failures.isEmpty, "\(kind) schedule \(seed) failed — replay with CONCORD_HTTP_SEED=\(seed) CONCORD_HTTP_BACKENDS=\(kind.rawValue): \(failures.joined(separator: "; "))\n  trace: \(run.trace.joined(separator: " | "))")
            faults.add(run.faults)
            if !failures.isEmpty { break }
        }
        if count >= 20 {
            // The faults happened, through this server, in these schedules.
            #expect(faults.failed > 0 && faults.lostAcknowledgements > 0 && faults.tornPuts > 0 && faults.lostPuts > 0)
            #expect(faults.staleListings > 0 && faults.incompleteListings > 0 && faults.duplicatedListings > 0)
        }
        if Self.environment["CONCORD_SYNC_STATS"] != nil { print("\(kind): \(faults)") }
    }
}

extension FaultyRemote.Counts {
    mutating func add(_ other: FaultyRemote.Counts) {
        puts += other.puts
        gets += other.gets
        lists += other.lists
        deletes += other.deletes
        putStreams += other.putStreams
        getStreams += other.getStreams
        failed += other.failed
        lostAcknowledgements += other.lostAcknowledgements
        tornPuts += other.tornPuts
        lostPuts += other.lostPuts
        lostDeletes += other.lostDeletes
        staleListings += other.staleListings
        incompleteListings += other.incompleteListings
        duplicatedListings += other.duplicatedListings
        reorderedListings += other.reorderedListings
    }
}

/// One schedule: 2–3 replicas, 30 random steps, then quiescence.
final class HTTPFuzzRun {
    let kind: ServerKind
    let seed: UInt64
    var random: SeededGenerator
    let scratch: String
    var trace: [String] = []
    var faults = FaultyRemote.Counts()

    init(kind: ServerKind, seed: UInt64) {
        self.kind = kind
        self.seed = seed
        random = SeededGenerator(seed: seed &* 7919 &+ UInt64(kind.rawValue.count))
        scratch = FileManager.default.temporaryDirectory.appendingPathComponent("concord-httpfuzz-\(UUID().uuidString.prefix(8))").path
    }

    func cleanUp() { try? FileManager.default.removeItem(atPath: scratch) }

    func run() async throws -> [String] {
        try FileManager.default.createDirectory(atPath: scratch, withIntermediateDirectories: true)
        let server = try await Backends.fresh(kind)
        let (key, storeID) = try await SyncEngine.createRemote(server, passphrase: "fuzz", limits: .minimum)
        var stores: [Store] = []
        var engines: [SyncEngine] = []
        var remotes: [FaultyRemote] = []
        for index in 0..<random.int(2...3) {
            let store = try Store(path: "\(scratch)/r\(index).db")
            let faulty = FaultyRemote(wrapping: server, seed: seed &* 31 &+ UInt64(index), plan: FaultyRemote.Plan(
                failure: 0.05, lostPut: 0.03, tornPut: 0.05, tornPutReportsSuccess: index % 2 == 1, lostAcknowledgement: 0.05,
                lostDelete: 0.05, staleListing: 0.15, incompleteListing: 0.1, duplicatedListing: 0.1, reorderedListing: 0.2))
            stores.append(store)
            remotes.append(faulty)
            engines.append(SyncEngine(store: store, remote: faulty, key: key, storeID: storeID, snapshotEvery: 4, lossCheckInterval: 0, requestsInFlight: 4))
        }
        // What must survive: records written and never deleted, with every element added.
        var kept: [RecordRef: Set<String>] = [:]
        var copy: FaultyRemote.Copy?
        let files = (1...2).map { Array("http fuzz file \($0) of \(seed)".utf8) }
        for step in 0..<30 {
            let r = random.int(0...(stores.count - 1))
            switch random.int(0...11) {
            case 0, 1, 2:
                let ref = RecordRef(collection: "kept", id: "k\(random.int(0...3))")
                let element = "elt-\(seed)-\(step)"
                try stores[r].add(ref, "tags", .string(element))
                kept[ref, default: []].insert(element)
                trace.append("r\(r) add \(ref.id) \(element)")
            case 3:
                let ref = RecordRef(collection: "kept", id: "k\(random.int(0...3))")
                try stores[r].set(ref, "title", .string("title-\(seed)-\(step)"))
                kept[ref, default: []] = kept[ref, default: []]
                trace.append("r\(r) set \(ref.id)")
            case 4:
                let ref = RecordRef(collection: "churn", id: "c\(random.int(0...2))")
                if random.chance(0.5) {
                    try stores[r].set(ref, "body", .string("churn-\(seed)-\(step)"))
                } else {
                    try stores[r].delete(ref)
                }
                trace.append("r\(r) churn \(ref.id)")
            case 5:
                _ = try stores[r].attachFile(RecordRef(collection: "files", id: "f\(random.int(0...1))"), "data", bytes: random.pick(files))
                trace.append("r\(r) file")
            case 6, 7, 8, 9:
                do {
                    let report = try await engines[r].sync()
                    trace.append("r\(r) sync: pushed \(report.pushed), applied \(report.applied)")
                } catch {
                    trace.append("r\(r) sync failed: \(error)")
                }
            case 10:
                if let taken = copy, random.chance(0.5) {
                    try await remotes[0].rollback(to: taken)
                    copy = nil
                    trace.append("the server is rolled back")
                } else {
                    copy = try await remotes[0].copy()
                    trace.append("a copy of the server is taken")
                }
            default:
                if random.chance(0.5) {
                    let gone = try await remotes[0].vanish(prefix: random.pick([RemoteLayout.replicasPrefix, RemoteLayout.headsPrefix, RemoteLayout.snapshotsPrefix]), probability: 0.3)
                    trace.append("vanished \(gone.count)")
                } else {
                    do {
                        _ = try await engines[r].compact()
                        trace.append("r\(r) compact")
                    } catch {
                        trace.append("r\(r) compact failed: \(error)")
                    }
                }
            }
        }
        for remote in remotes {
            faults.add(remote.counts)
            remote.faultsOff()
        }
        // Quiescence: every replica syncs until the dumps agree.
        var failures: [String] = []
        var dumps: Set<String> = []
        for _ in 0..<6 {
            for engine in engines {
                do { _ = try await engine.sync() } catch { failures.append("quiescent sync failed: \(error)") }
            }
            dumps = Set(try stores.map { try $0.canonicalDump() })
            if dumps.count == 1 { break }
        }
        if dumps.count != 1 { failures.append("dumps differ:\n" + dumps.sorted().joined(separator: "\n")) }
        for store in stores {
            for (ref, elements) in kept {
                guard let fields = try store.record(ref) else {
                    failures.append("\(ref.id) is gone at \(store.replicaID)")
                    continue
                }
                var have: Set<String> = []
                if case let .set(values)? = fields.first(where: { $0.name == "tags" })?.value {
                    for case let .string(text) in values { have.insert(text) }
                }
                for lost in elements.subtracting(have) { failures.append("\(ref.id) lost \(lost) at \(store.replicaID)") }
            }
        }
        // The server holds ciphertext only.
        for object in try await server.list(prefix: "") where object.path != RemoteLayout.manifestPath {
            let text = String(decoding: try await server.get(object.path) ?? [], as: UTF8.self)
            for needle in ["elt-\(seed)", "title-\(seed)", "churn-\(seed)", "http fuzz file", "kept", "tags"] where text.contains(needle) {
                failures.append("\(object.path) holds plaintext '\(needle)'")
            }
        }
        return failures
    }
}
