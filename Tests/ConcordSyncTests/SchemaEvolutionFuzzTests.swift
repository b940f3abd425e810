import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import SchemaEvolutionModels
import Synchronization
import Testing

/// The two-version fuzz (README, "Evolving your model"): replicas running version 1 and 2
/// of a model (a field renamed, one widened, one converted, one added with a default, one
/// retired, a new set) save, delete and sync through one folder remote in random
/// interleavings, some upgraded from 1 to 2 midway. At the end every replica holds the same
/// state, that state is the oracle's (every write, as the stored fields it meant to write,
/// merged by the rules), and each version reads every record as the oracle says it must —
/// so no value written by either version was lost or blanked by the other.
@Suite struct SchemaEvolutionFuzzTests {
    static let schedules = Int(ProcessInfo.processInfo.environment["CONCORD_SCHEMA_SCHEDULES"] ?? "") ?? 200
    static let firstSeed = UInt64(ProcessInfo.processInfo.environment["CONCORD_SCHEMA_SEED"] ?? "") ?? 1
    /// Both halves' operation counts, and how many halves ended without a failure.
    static let coverage = Mutex<(ended: Int, totals: [String: Int])>((0, [:]))

    @Test(arguments: [0, 1])
    func twoVersionsConvergeAndLoseNothing(half: Int) async throws {
        let replay = ProcessInfo.processInfo.environment["CONCORD_SCHEMA_SEED"] != nil && ProcessInfo.processInfo.environment["CONCORD_SCHEMA_SCHEDULES"] == nil
        for offset in stride(from: half, to: replay ? 1 : Self.schedules, by: 2) {
            let seed = Self.firstSeed + UInt64(offset)
            var run = SchemaFuzzRun(seed: seed)
            let failures = try await run.run()
            Self.coverage.withLock { state in for (key, value) in run.counts { state.totals[key, default: 0] += value } }
            if !failures.isEmpty {
                Issue.record("""
                    schema schedule \(seed) failed — replay with CONCORD_SCHEMA_SEED=\(seed) swift test --filter ConcordSyncTests.SchemaEvolutionFuzzTests
                    \(failures.prefix(12).joined(separator: "\n"))
                    trace:
                    \(run.trace.joined(separator: "\n"))
                    """)
                return
            }
        }
        // The half that ends last checks that the schedules did what they are for.
        let both = Self.coverage.withLock { state -> [String: Int]? in
            state.ended += 1
            return state.ended == 2 ? state.totals : nil
        }
        if let totals = both, !replay && Self.schedules >= 50 {
            for kind in ["saveV1", "saveV2", "create", "delete", "sync", "upgrade", "unreadV1", "badDay", "recreate"] {
                #expect(totals[kind, default: 0] > 0, "no schedule exercised \(kind)")
            }
        }
    }
}

/// One schedule of the schema fuzz.
struct SchemaFuzzRun {
    let seed: UInt64
    var random: SeededGenerator
    var trace: [String] = []
    var counts: [String: Int] = [:]
    var failures: [String] = []
    /// Each replica's version.
    var versions: [Int] = []
    var step = 0

    static let records = ["a", "b", "c", "d"]
    static let setFields: Set<String> = ["tags", "genres"]

    init(seed: UInt64) {
        self.seed = seed
        random = SeededGenerator(seed: seed)
    }

    mutating func run() async throws -> [String] {
        let count = random.chance(0.2) ? 4 : random.int(2...3)
        let fleet = try await SchemaFleet(count: count)
        // Replica 0 stays on version 1 and replica 1 on version 2; the others start on
        // either, and a version 1 replica may be upgraded midway.
        for index in 0..<count {
            let version = index == 0 ? 1 : index == 1 ? 2 : random.int(1...2)
            versions.append(version)
            try fleet.stores[index].declare(FuzzSchema.declaration(version))
        }
        let oracle = SchemaOracle(replicas: count)
        for _ in 0..<random.int(10...26) {
            step += 1
            fleet.clock.advance(by: 1)
            let replica = random.int(0...(count - 1))
            let store = fleet.stores[replica]
            let id = random.pick(Self.records)
            switch random.int(0...9) {
            case 0...4:
                try save(store, replica, id, oracle)
            case 5:
                if try store.record(RecordRef(collection: "games", id: id)) != nil {
                    try store.delete(RecordRef(collection: "games", id: id))
                    oracle.write(replica, id, .delete, [:])
                    note("delete", "r\(replica) deletes \(id)")
                }
            case 6...8:
                try await fleet.engines[replica].sync()
                oracle.synced(replica)
                note("sync", "r\(replica) syncs")
            default:
                if replica > 1, versions[replica] == 1 {
                    try store.declare(FuzzSchema.declaration(2))
                    versions[replica] = 2
                    note("upgrade", "r\(replica) upgrades to version 2")
                }
            }
        }
        // Every replica syncs until each has everything: pull after the last push.
        for _ in 0..<2 {
            for replica in 0..<count {
                fleet.clock.advance(by: 1)
                try await fleet.engines[replica].sync()
                oracle.synced(replica)
            }
        }
        try check(fleet, oracle)
        for replica in 0..<count where versions[replica] == 1 {
            _ = try await fleet.engines[replica].replicas()
            if try fleet.stores[replica].newerSchemaVersion() == nil {
                failures.append("r\(replica) on version 1 was not told that a device uses version 2")
            }
        }
        return failures
    }

    mutating func note(_ kind: String, _ line: String) {
        counts[kind, default: 0] += 1
        trace.append("\(step): \(line)")
    }

    /// A save by the replica's version: a new record with every property, or a change of
    /// some properties of the one it loads, each to a value never written before.
    mutating func save(_ store: Store, _ replica: Int, _ id: String, _ oracle: SchemaOracle) throws {
        let n = step
        var intended: [String: FieldValue] = [:]
        let written: [String]
        let created: Bool
        if versions[replica] == 1 {
            let loaded = try store.loadReporting(GameV1.self, id: id)
            let day = random.chance(0.15) ? "bad\(n)" : FuzzSchema.day(n)
            if day.hasPrefix("bad") { counts["badDay", default: 0] += 1 }
            if !(loaded?.isComplete ?? true) { counts["unreadV1", default: 0] += 1 }
            var game = loaded?.value ?? GameV1(id: id, title: "t\(n)", level: n, rating: n, released: day, tags: ["t\(n)"])
            if loaded == nil {
                intended = ["title": .scalar(.string(game.title)), "level": .scalar(.int(Int64(n))), "rating": .scalar(.int(Int64(n))),
                            "released": .scalar(.string(day)), "tags": .set([.string("t\(n)")])]
            } else {
                for property in pickSome(["title", "level", "rating", "released", "tags"]) {
                    switch property {
                    case "title": game.title = "t\(n)"; intended["title"] = .scalar(.string(game.title))
                    case "level": game.level = n; intended["level"] = .scalar(.int(Int64(n)))
                    case "rating": game.rating = n; intended["rating"] = .scalar(.int(Int64(n)))
                    case "released": game.released = day; intended["released"] = .scalar(.string(day))
                    default:
                        if let gone = game.tags.sorted().first, random.chance(0.5) { game.tags.remove(gone) }
                        game.tags.insert("t\(n)")
                        intended["tags"] = .set(game.tags.sorted().map(ScalarValue.string))
                    }
                }
            }
            created = loaded == nil
            written = try store.save(game)
            note(loaded == nil ? "create" : "saveV1", "r\(replica) v1 saves \(id): \(intended.keys.sorted())")
        } else {
            let loaded = try store.loadReporting(GameV2.self, id: id)
            let date = Date(timeIntervalSinceReferenceDate: 700_000_000 + Double(n) * 86_400)
            var game = loaded?.value ?? GameV2(id: id, title: "t\(n)", tier: n, rating: Double(n) + 0.5, released: date, notes: "n\(n)", genres: ["g\(n)"])
            if loaded == nil {
                intended = ["title": .scalar(.string(game.title)), "level": .scalar(.int(Int64(n))), "rating": .scalar(.double(Double(n) + 0.5)),
                            "released": .scalar(.double(date.timeIntervalSinceReferenceDate)), "notes": .scalar(.string("n\(n)")), "genres": .set([.string("g\(n)")])]
            } else {
                for property in pickSome(["title", "tier", "rating", "released", "notes", "genres"]) {
                    switch property {
                    case "title": game.title = "t\(n)"; intended["title"] = .scalar(.string(game.title))
                    case "tier": game.tier = n; intended["level"] = .scalar(.int(Int64(n)))
                    case "rating": game.rating = Double(n) + 0.5; intended["rating"] = .scalar(.double(game.rating))
                    case "released": game.released = date; intended["released"] = .scalar(.double(date.timeIntervalSinceReferenceDate))
                    case "notes": game.notes = "n\(n)"; intended["notes"] = .scalar(.string(game.notes))
                    default:
                        if let gone = game.genres.sorted().first, random.chance(0.5) { game.genres.remove(gone) }
                        game.genres.insert("g\(n)")
                        intended["genres"] = .set(game.genres.sorted().map(ScalarValue.string))
                    }
                }
            }
            created = loaded == nil
            written = try store.save(game)
            note(loaded == nil ? "create" : "saveV2", "r\(replica) v2 saves \(id): \(intended.keys.sorted())")
        }
        if Set(written) != Set(intended.keys) {
            failures.append("step \(step): r\(replica) meant to write \(intended.keys.sorted()) and wrote \(written.sorted())")
        }
        if created && oracle.writes.contains(where: { $0.record == id }) { counts["recreate", default: 0] += 1 }
        oracle.write(replica, id, created ? .create : .update, intended)
    }

    mutating func pickSome(_ names: [String]) -> [String] {
        let chosen = names.filter { _ in random.chance(0.35) }
        return chosen.isEmpty ? [random.pick(names)] : chosen
    }

    /// Every replica the same; the state the oracle's; each version's reading its own.
    mutating func check(_ fleet: SchemaFleet, _ oracle: SchemaOracle) throws {
        let dumps = try fleet.stores.map { try $0.canonicalDump() }
        if Set(dumps).count != 1 { failures.append("the replicas did not converge") }
        for id in Self.records {
            let ref = RecordRef(collection: "games", id: id)
            let expected = oracle.expected(id, setFields: Self.setFields)
            for (replica, store) in fleet.stores.enumerated() {
                let actual = try store.record(ref).map { Dictionary($0.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a }) }
                if actual != expected {
                    failures.append("r\(replica) holds \(id) as \(actual.map { "\($0.sorted { $0.key < $1.key })" } ?? "gone"), the oracle says \(expected.map { "\($0.sorted { $0.key < $1.key })" } ?? "gone")")
                }
                guard let expected else { continue }
                if versions[replica] == 1 {
                    let (value, unread) = FuzzSchema.readingV1(id, expected)
                    let loaded = try store.loadReporting(GameV1.self, id: id)
                    if loaded?.value != value || Set(loaded?.unread.map(\.field) ?? []) != unread {
                        failures.append("r\(replica) on version 1 reads \(id) as \(String(describing: loaded?.value)), unread \(loaded?.unread.map(\.field) ?? []); expected \(value), unread \(unread.sorted())")
                    }
                } else {
                    let (value, unread) = FuzzSchema.readingV2(id, expected)
                    let loaded = try store.loadReporting(GameV2.self, id: id)
                    if loaded?.value != value || Set(loaded?.unread.map(\.field) ?? []) != unread {
                        failures.append("r\(replica) on version 2 reads \(id) as \(String(describing: loaded?.value)), unread \(loaded?.unread.map(\.field) ?? []); expected \(value), unread \(unread.sorted())")
                    }
                }
            }
        }
    }
}

/// Replicas of one schedule, syncing through one folder remote in memory-backed storage
/// (`/dev/shm` where there is one: the fuzz fsyncs at every write and sync).
struct SchemaFleet {
    let scratch: TemporaryDirectory
    let clock = ManualClock()
    var stores: [Store] = []
    var engines: [SyncEngine] = []

    init(count: Int) async throws {
        let shm = "/dev/shm"
        scratch = FileManager.default.isWritableFile(atPath: shm) ? TemporaryDirectory("schema", base: shm) : TemporaryDirectory("schema")
        let remote = try FolderRemote(root: scratch.file("remote"), createIfMissing: true, clock: clock)
        let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: Fleet.passphrase, limits: .minimum)
        for index in 0..<count {
            let store = try Store(path: scratch.file("r\(index).db"), configuration: .init(clock: clock))
            stores.append(store)
            engines.append(SyncEngine(store: store, remote: remote, key: key, storeID: storeID, clock: clock))
        }
    }
}
