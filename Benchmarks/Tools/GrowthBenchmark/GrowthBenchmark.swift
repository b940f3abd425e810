import Concord
import ConcordTesting
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The growth measurement (issue: "Growth: 3 replicas performing 1,000,000 operations over
/// 200 sync rounds on a working set of 10,000 records — remote bytes and local database size
/// stay within 3× of a fresh snapshot of the final state; idle sync cost does not grow with
/// history length"). One long run, so a plain executable rather than an ordo-one benchmark;
/// see Benchmarks/README.md, "Growth".
@main
struct GrowthBenchmark {
    static func main() async {
        let options: Options
        do {
            options = try Options.parse(Array(CommandLine.arguments.dropFirst()))
        } catch {
            FileHandle.standardError.write(Data("growth: \(error)\n\n\(Options.usage)\n".utf8))
            exit(64)
        }
        do {
            exit(try await Run(options).run())
        } catch {
            FileHandle.standardError.write(Data("growth: failed: \(error)\n".utf8))
            exit(2)
        }
    }
}

struct Sample {
    var round: Int
    var seconds: Double
    var remote: RemoteSizes
    var database: UInt64
    var blobs: UInt64
    var rss: UInt64
}

final class Run {
    let options: Options
    let root: String
    let remoteFolder: String
    let clock = ManualClock()
    let workload: GrowthWorkload
    var stores: [Store] = []
    var engines: [SyncEngine] = []
    var counter: FaultyRemote!
    var bytes: ByteCountingRemote!
    var key: StoreKey!
    var storeID: StoreID!
    var json: [String: Any] = [:]

    init(_ options: Options) {
        self.options = options
        let base = FileManager.default.fileExists(atPath: "/dev/shm") ? "/dev/shm" : NSTemporaryDirectory()
        root = "\(base)/concord-growth-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        remoteFolder = root + "/remote"
        workload = GrowthWorkload(records: options.records, fileEvery: options.fileEvery, fileSlots: options.fileSlots)
    }

    var configuration: Store.Configuration {
        var configuration = Store.Configuration(clock: clock)
        if let days = options.historyDays { configuration.historyRetention = UInt64(days * 86_400_000) }
        return configuration
    }

    func engine(_ store: Store, remote: any Remote) -> SyncEngine {
        SyncEngine(
            store: store, remote: remote, key: key, storeID: storeID, clock: clock, snapshotEvery: options.snapshotEvery,
            blobGracePeriod: options.blobGraceDays.map { UInt64($0 * 86_400_000) } ?? 7 * SyncEngine.day)
    }

    func log(_ line: String) {
        print(line)
        fflush(nil)
    }

    func run() async throws -> Int32 {
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { if !options.keep { try? FileManager.default.removeItem(atPath: root) } }
        let started = ContinuousClock.now
        log("growth: \(options.replicas) replicas, \(grouped(options.operations)) operations, \(options.rounds) rounds, \(grouped(options.records)) records, seed \(options.seed), compaction every \(options.compactEvery) rounds, \(options.roundMinutes) virtual minutes per round, \(options.opsPerWrite) operation(s) per write; scratch \(root)")

        // the folder stamps objects with the virtual clock: the file sweep measures object age.
        let folder = try FolderRemote(root: remoteFolder, createIfMissing: true, clock: clock)
        (key, storeID) = try await SyncEngine.createRemote(folder, passphrase: "growth", limits: .minimum)
        bytes = ByteCountingRemote(wrapping: folder)
        counter = FaultyRemote(wrapping: bytes, seed: options.seed)
        for index in 0..<options.replicas {
            let store = try Store(path: "\(root)/replica\(index).db", configuration: configuration)
            try store.setName("replica \(index)")
            stores.append(store)
            engines.append(engine(store, remote: counter))
        }

        // The working set: replica 0 creates every record (not counted as operations).
        var generator = SeededGenerator(seed: options.seed)
        let setupStart = ContinuousClock.now
        for start in stride(from: 0, to: options.records, by: 500) {
            try stores[0].write { tx throws(ConcordError) in
                for index in start..<min(options.records, start + 500) {
                    let ref = workload.ref(index)
                    try tx.create(ref, workload.fullRecord(ref, &generator))
                }
            }
        }
        for engine in engines { try await engine.sync() }
        let setupSeconds = seconds(since: setupStart)
        log(String(format: "setup: %@ records created and synced in %.1f s", grouped(options.records), setupSeconds))

        // MARK: Rounds
        let roundMillis = UInt64(options.roundMinutes * 60_000)
        let startMillis = clock.millisecondsSinceEpoch()
        var generators = (0..<options.replicas).map { SeededGenerator(seed: options.seed &* 0x9E37_79B9_7F4A_7C15 &+ UInt64($0) &+ 1) }
        var tally: [GrowthWorkload.Kind: Int] = [:]
        var writeSeconds = 0.0, syncSeconds = 0.0, compactSeconds = 0.0
        var deletedBatches = 0, purgedRecords = 0, compactionSnapshots = 0, syncSnapshots = 0, localFilesSwept = 0
        var idleFirst: [IdleCost] = []
        var samples: [Sample] = []
        let slots = options.rounds * options.replicas
        let loopStart = ContinuousClock.now
        for round in 1...options.rounds {
            let roundStart = startMillis + UInt64(round - 1) * roundMillis
            // Writes: every replica's share of this round, the clock moving through 90 % of it.
            let writeStart = ContinuousClock.now
            for replica in 0..<options.replicas {
                let slot = (round - 1) * options.replicas + replica
                let count = options.operations / slots + (slot < options.operations % slots ? 1 : 0)
                let writes = (count + options.opsPerWrite - 1) / options.opsPerWrite
                let step = writes > 0 ? max(1, roundMillis * 9 / 10 / UInt64(writes * options.replicas)) : 0
                clock.set(roundStart + UInt64(replica) * roundMillis * 3 / 10)
                var done = 0
                while done < count {
                    let n = min(options.opsPerWrite, count - done)
                    try stores[replica].write { tx throws(ConcordError) in
                        for _ in 0..<n { tally[try workload.operation(tx, &generators[replica]), default: 0] += 1 }
                    }
                    done += n
                    clock.advance(by: Int64(step))
                }
            }
            writeSeconds += seconds(since: writeStart)
            // Sync in a fixed order, then compaction.
            clock.set(roundStart + roundMillis * 95 / 100)
            let syncStart = ContinuousClock.now
            for engine in engines {
                let report = try await engine.sync()
                if report.snapshot != nil { syncSnapshots += 1 }
                if !report.rejected.isEmpty { log("round \(round): rejected \(report.rejected)") }
            }
            syncSeconds += seconds(since: syncStart)
            if options.compactEvery > 0, round % options.compactEvery == 0 {
                let compactStart = ContinuousClock.now
                for (index, engine) in engines.enumerated() {
                    localFilesSwept += try stores[index].sweepFiles().count
                    let report = try await engine.compact(batchGracePeriod: options.batchGraceDays.map { UInt64($0 * 86_400_000) })
                    deletedBatches += report.deletedBatches.count
                    purgedRecords += report.metadata.purged.count
                    if report.snapshot != nil { compactionSnapshots += 1 }
                }
                compactSeconds += seconds(since: compactStart)
            }
            if round == 1 {
                _ = try await quiesce()
                idleFirst = try await idleSyncs()
                log("round 1: idle sync of each replica: \(idleFirst.map { "\($0.requests) request(s), \($0.bytesDown) B down, \($0.bytesUp) B up" }.joined(separator: "; "))")
            }
            if (options.sampleEvery > 0 && round % options.sampleEvery == 0) || round == options.rounds {
                let database = try measureDatabase(stores[0], details: false)
                let sample = Sample(
                    round: round, seconds: seconds(since: loopStart), remote: RemoteSizes(folder: remoteFolder),
                    database: database.total, blobs: database.blobs.bytes, rss: peakResidentBytes())
                samples.append(sample)
                let opsSoFar = options.operations * round / options.rounds
                log(String(format: "round %d/%d: %.1f s, %.0f ops/s, remote %@ (%d objects), replica 0 db %@ + blobs %@, peak RSS %@",
                           round, options.rounds, sample.seconds, Double(opsSoFar) / sample.seconds, mib(sample.remote.total),
                           sample.remote.objects, mib(sample.database), mib(sample.blobs), mib(sample.rss)))
            }
        }
        let loopSeconds = seconds(since: loopStart)
        let endMillis = clock.millisecondsSinceEpoch()

        // MARK: Quiescence and the final figures
        clock.set(startMillis + UInt64(options.rounds) * roundMillis)
        let passes = try await quiesce()
        let dumps = try stores.map { try $0.canonicalDump() }
        guard Set(dumps).count == 1 else {
            log("FAILED: the replicas did not converge after \(passes) quiet sync passes")
            return 1
        }
        log("converged: \(options.replicas) equal dumps after \(passes) sync pass(es)")
        let idleLast = try await idleSyncs()

        // (a) The remote.
        let remote = RemoteSizes(folder: remoteFolder)
        let finalState = try stores[0].state()
        let referenced = referencedFiles(finalState)
        let blobNames = key.subkey(for: .blobNames)
        var referencedRemote: UInt64 = 0
        var referencedLocal: UInt64 = 0
        for hash in referenced {
            referencedRemote += fileSize(remoteFolder + "/" + BlobName.remotePath(for: hash, key: blobNames))
            referencedLocal += fileSize(stores[0].blobs.path(for: hash))
        }
        // Files only a retained version (some replica's history within its window) holds.
        let retention = options.historyDays.map { UInt64($0 * 86_400_000) } ?? 30 * SyncEngine.day
        let now = clock.millisecondsSinceEpoch()
        let cutoff = now > retention ? now - retention : 0
        var historyOnly: Set<ContentHash> = []
        for store in stores { historyOnly.formUnion(try retainedVersions(store, since: cutoff)) }
        historyOnly.subtract(referenced)
        var historyRemote: UInt64 = 0
        var historyRemoteObjects = 0
        for hash in historyOnly {
            let size = fileSize(remoteFolder + "/" + BlobName.remotePath(for: hash, key: blobNames))
            historyRemote += size
            if size > 0 { historyRemoteObjects += 1 }
        }
        let snapshotObjects = (try? FileManager.default.contentsOfDirectory(atPath: remoteFolder + "/snapshots"))?.sorted().map {
            (name: $0, bytes: fileSize(remoteFolder + "/snapshots/" + $0))
        } ?? []

        // (b) Each replica's database and files.
        var replicaFigures: [DatabaseFigures] = []
        var localBlobKinds: [(state: UInt64, versions: UInt64, unreferenced: UInt64)] = []
        for store in stores {
            replicaFigures.append(try measureDatabase(store, details: true, vacuum: true))
            let versions = try retainedVersions(store, since: cutoff)
            var kinds: (state: UInt64, versions: UInt64, unreferenced: UInt64) = (0, 0, 0)
            for hash in try store.blobs.all() {
                let size = fileSize(store.blobs.path(for: hash))
                if referenced.contains(hash) { kinds.state += size } else if versions.contains(hash) { kinds.versions += size } else { kinds.unreferenced += size }
            }
            localBlobKinds.append(kinds)
        }

        // (c) A fresh snapshot of the final state, and a fresh replica bootstrapped from it.
        let encodedSnapshot = UInt64(try SnapshotCodec.encode(try stores[0].exportSnapshot()).count)
        let freshSnapshotPath = try await engines[0].writeSnapshot()
        let freshSnapshot = fileSize(remoteFolder + "/" + freshSnapshotPath)
        let freshStore = try Store(path: "\(root)/fresh.db", configuration: configuration)
        let freshCounter = FaultyRemote(wrapping: bytes, seed: options.seed)
        bytes.reset()
        let bootstrapStart = ContinuousClock.now
        let bootstrap = try await engine(freshStore, remote: freshCounter).sync(mode: .pullOnly)
        let bootstrapSeconds = seconds(since: bootstrapStart)
        let bootstrapBytes = bytes.counts.bytesDown
        guard try freshStore.canonicalDump() == dumps[0] else {
            log("FAILED: the fresh replica's dump differs from the others'")
            return 1
        }
        let fresh = try measureDatabase(freshStore, details: true, vacuum: true)
        let freshRemote = freshSnapshot + referencedRemote

        // MARK: Report
        let totalSeconds = seconds(since: started)
        let rss = peakResidentBytes()
        var out: [String] = []
        out.append("")
        out.append("== Growth: \(options.replicas) replicas, \(grouped(options.operations)) operations, \(options.rounds) rounds, \(grouped(options.records)) records (seed \(options.seed)) ==")
        out.append(String(format: "virtual time %.1f days (%.0f min/round); compaction every %d rounds; history retention %@; remote file grace %@; batch grace %@",
                          Double(endMillis - startMillis) / 86_400_000, options.roundMinutes, options.compactEvery,
                          options.historyDays.map { "\($0) days" } ?? "default (30 days)",
                          options.blobGraceDays.map { "\($0) days" } ?? "default (7 days)",
                          options.batchGraceDays.map { "\($0) days" } ?? "none (applied everywhere)"))
        out.append("operation mix: " + GrowthWorkload.Kind.allCases.map { "\($0.rawValue) \(grouped(tally[$0] ?? 0))" }.joined(separator: ", "))
        out.append(String(format: "time: %.1f s total; rounds %.1f s (writes %.1f s, syncs %.1f s, compaction %.1f s); %.0f ops/s over the rounds; peak RSS %@",
                          totalSeconds, loopSeconds, writeSeconds, syncSeconds, compactSeconds, Double(options.operations) / loopSeconds, mib(rss)))
        out.append("snapshots written: \(syncSnapshots) by sync (every \(options.snapshotEvery.map(String.init) ?? "—") batches), \(compactionSnapshots) by compaction; own batches deleted by compaction: \(grouped(deletedBatches)); deleted records purged: \(grouped(purgedRecords)); local files swept: \(grouped(localFilesSwept))")
        out.append("")
        out.append("Remote (bytes on the folder remote at the end)")
        var remoteRows: [[String]] = []
        for kind in RemoteSizes.order where remote.kinds[kind] != nil {
            let entry = remote.kinds[kind]!
            remoteRows.append([kind, grouped(entry.objects), grouped(entry.bytes), mib(entry.bytes), ratio(entry.bytes, freshRemote)])
        }
        remoteRows.append(["total", grouped(remote.objects), grouped(remote.total), mib(remote.total), ratio(remote.total, freshRemote)])
        remoteRows.append(["  of which blobs the final state references", grouped(referenced.count), grouped(referencedRemote), mib(referencedRemote), ratio(referencedRemote, freshRemote)])
        remoteRows.append(["  of which only retained versions reference", grouped(historyRemoteObjects), grouped(historyRemote), mib(historyRemote), ratio(historyRemote, freshRemote)])
        let garbage = remote["blobs"] - referencedRemote - historyRemote
        remoteRows.append(["  of which nothing references", grouped((remote.kinds["blobs"]?.objects ?? 0) - referenced.count - historyRemoteObjects), grouped(garbage), mib(garbage), ratio(garbage, freshRemote)])
        remoteRows.append(["fresh: one sealed snapshot of the final state", "1", grouped(freshSnapshot), mib(freshSnapshot), ratio(freshSnapshot, freshRemote)])
        remoteRows.append(["fresh: snapshot + referenced blobs", "", grouped(freshRemote), mib(freshRemote), "1.00×"])
        out.append(table(["kind", "objects", "bytes", "MiB", "÷ fresh"], remoteRows))
        out.append("snapshot objects: " + snapshotObjects.map { "\($0.name.prefix(8))…-\($0.name.suffix(4)) \(grouped($0.bytes)) B" }.joined(separator: ", ") + String(format: " (encoded final state before sealing: %@ B)", grouped(encodedSnapshot)))
        out.append("")
        out.append("Local (SQLite file after wal_checkpoint(TRUNCATE); blob directory)")
        var localRows: [[String]] = []
        for (index, figures) in replicaFigures.enumerated() {
            localRows.append(["replica \(index)", mib(figures.total), ratio(figures.total, fresh.total), mib(figures.freeBytes), mib(figures.vacuumedFile ?? 0), ratio(figures.vacuumedFile ?? 0, fresh.vacuumedFile ?? 0), mib(figures.blobs.bytes), grouped(figures.blobs.files), ratio(figures.blobs.bytes, fresh.blobs.bytes), ratio(figures.total + figures.blobs.bytes, fresh.total + fresh.blobs.bytes)])
        }
        localRows.append(["fresh replica (bootstrapped)", mib(fresh.total), "1.00×", mib(fresh.freeBytes), mib(fresh.vacuumedFile ?? 0), "1.00×", mib(fresh.blobs.bytes), grouped(fresh.blobs.files), "1.00×", "1.00×"])
        out.append(table(["store", "db", "÷ fresh", "free pages", "db vacuumed", "÷ fresh", "blobs", "files", "÷ fresh", "db+blobs ÷ fresh"], localRows))
        out.append("blob directories by what references the files (state / retained versions only / nothing): " + localBlobKinds.enumerated().map { index, kinds in
            "replica \(index) \(mib(kinds.state)) / \(mib(kinds.versions)) / \(mib(kinds.unreferenced))"
        }.joined(separator: "; "))
        out.append("")
        out.append("Local database by table/index (dbstat, before VACUUM): replica 0 vs the fresh replica")
        var names: [String] = []
        for item in replicaFigures[0].objects + fresh.objects where !names.contains(item.name) { names.append(item.name) }
        let replicaBytes = Dictionary(replicaFigures[0].objects.map { ($0.name, $0.bytes) }, uniquingKeysWith: +)
        let freshBytes = Dictionary(fresh.objects.map { ($0.name, $0.bytes) }, uniquingKeysWith: +)
        let objectRows = names.map { name in
            [name, grouped(replicaBytes[name] ?? 0), grouped(freshBytes[name] ?? 0), grouped(Int64(replicaBytes[name] ?? 0) - Int64(freshBytes[name] ?? 0))]
        }
        out.append(table(["table/index", "replica 0 bytes", "fresh bytes", "difference"], objectRows))
        var rowRows: [[String]] = []
        for (index, row) in replicaFigures[0].rows.enumerated() {
            rowRows.append([row.name, grouped(row.count), grouped(fresh.rows.indices.contains(index) ? fresh.rows[index].count : 0)])
        }
        rowRows.append(["sealed delta bytes (concord_sealed)", grouped(replicaFigures[0].sealedBytes), grouped(fresh.sealedBytes)])
        out.append(table(["rows", "replica 0", "fresh"], rowRows))
        out.append("")
        out.append("Idle sync (right after a quiet sync pass; ms: median of 5): round 1 vs the end")
        var idleRows: [[String]] = []
        for index in 0..<options.replicas {
            for (label, cost) in [("round 1", idleFirst[index]), ("end", idleLast[index])] {
                idleRows.append(["replica \(index), \(label)", "\(cost.requests)", "\(cost.lists)", "\(cost.gets)", "\(cost.puts)", "\(cost.listedEntries)", grouped(cost.bytesDown), grouped(cost.bytesUp), String(format: "%.2f", Double(cost.microseconds) / 1000)])
            }
        }
        out.append(table(["replica", "requests", "lists", "gets", "puts", "listed", "bytes down", "bytes up", "ms"], idleRows))
        out.append(String(format: "fresh replica bootstrap: joined %@, %d batch(es) applied after it, %d file(s) fetched, %@ downloaded, %d requests, %.2f s",
                          bootstrap.bootstrapped ?? "no snapshot", bootstrap.applied, bootstrap.filesFetched, mib(bootstrapBytes), freshCounter.counts.requests, bootstrapSeconds))
        out.append("")
        out.append("Growth over the run (remote by kind; replica 0's database and blob directory)")
        let sampleRows = samples.map { sample in
            ["\(sample.round)", String(format: "%.0f", sample.seconds), mib(sample.remote["heads"]), mib(sample.remote["deltas"]), mib(sample.remote["snapshots"]), mib(sample.remote["blobs"]), mib(sample.remote.total), mib(sample.database), mib(sample.blobs)]
        }
        out.append(table(["round", "s", "heads", "deltas", "snapshots", "blobs", "remote", "replica 0 db", "replica 0 blobs"], sampleRows))

        // Targets.
        let remoteRatio = ratioValue(remote.total, freshRemote)
        let dbRatio = replicaFigures.map { ratioValue($0.total, fresh.total) }.max() ?? 0
        let idleConstant = (0..<options.replicas).allSatisfy { idleFirst[$0].sameRequests == idleLast[$0].sameRequests }
        out.append("")
        out.append("Targets")
        out.append(table(["target", "figure", "bound", "met"], [
            ["remote bytes ÷ fresh (snapshot + referenced blobs)", String(format: "%.2f×", remoteRatio), "≤ 3×", remoteRatio <= 3 ? "yes" : "NO"],
            ["local database ÷ fresh database (worst replica)", String(format: "%.2f×", dbRatio), "≤ 3×", dbRatio <= 3 ? "yes" : "NO"],
            ["idle sync requests, round 1 → end", "\(idleFirst.map(\.requests)) → \(idleLast.map(\.requests))", "equal", idleConstant ? "yes" : "NO"],
        ]))
        log(out.joined(separator: "\n"))

        if let path = options.json {
            json = [
                "options": [
                    "replicas": options.replicas, "operations": options.operations, "rounds": options.rounds, "records": options.records,
                    "seed": options.seed, "compactEvery": options.compactEvery, "roundMinutes": options.roundMinutes,
                    "opsPerWrite": options.opsPerWrite, "fileEvery": options.fileEvery, "fileSlots": options.fileSlots,
                    "historyDays": options.historyDays as Any, "blobGraceDays": options.blobGraceDays as Any,
                    "batchGraceDays": options.batchGraceDays as Any, "snapshotEvery": options.snapshotEvery as Any,
                ],
                "operationMix": Dictionary(uniqueKeysWithValues: GrowthWorkload.Kind.allCases.map { ($0.rawValue, tally[$0] ?? 0) }),
                "seconds": ["total": totalSeconds, "setup": setupSeconds, "rounds": loopSeconds, "writes": writeSeconds, "syncs": syncSeconds, "compaction": compactSeconds, "bootstrap": bootstrapSeconds],
                "opsPerSecond": Double(options.operations) / loopSeconds,
                "peakRSSBytes": rss,
                "snapshotsWritten": ["bySync": syncSnapshots, "byCompaction": compactionSnapshots],
                "batchesDeleted": deletedBatches, "recordsPurged": purgedRecords, "localFilesSwept": localFilesSwept,
                "remote": [
                    "total": remote.total, "objects": remote.objects,
                    "kinds": Dictionary(uniqueKeysWithValues: remote.kinds.map { ($0.key, ["bytes": $0.value.bytes, "objects": $0.value.objects]) }),
                    "referencedBlobs": ["bytes": referencedRemote, "objects": referenced.count],
                    "historyOnlyBlobs": ["bytes": historyRemote, "objects": historyRemoteObjects],
                    "snapshotObjects": snapshotObjects.map { ["name": $0.name, "bytes": $0.bytes] },
                ],
                "fresh": [
                    "sealedSnapshot": freshSnapshot, "encodedSnapshot": encodedSnapshot, "referencedBlobsRemote": referencedRemote,
                    "referencedBlobsLocal": referencedLocal, "remote": freshRemote, "database": databaseJSON(fresh),
                    "bootstrap": ["requests": freshCounter.counts.requests, "bytesDown": bootstrapBytes, "applied": bootstrap.applied, "filesFetched": bootstrap.filesFetched],
                ],
                "replicas": replicaFigures.map(databaseJSON),
                "replicaBlobKinds": localBlobKinds.map { ["state": $0.state, "retainedVersions": $0.versions, "unreferenced": $0.unreferenced] },
                "idleSync": ["round1": idleFirst.map(idleJSON), "end": idleLast.map(idleJSON)],
                "samples": samples.map { sample in
                    ["round": sample.round, "seconds": sample.seconds, "remote": sample.remote.total,
                     "remoteKinds": Dictionary(uniqueKeysWithValues: sample.remote.kinds.map { ($0.key, $0.value.bytes) }),
                     "replica0Database": sample.database, "replica0Blobs": sample.blobs, "peakRSSBytes": sample.rss] as [String: Any]
                },
                "ratios": ["remoteToFresh": remoteRatio, "worstDatabaseToFresh": dbRatio, "idleConstant": idleConstant],
            ]
            let data = try JSONSerialization.data(withJSONObject: json, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: URL(fileURLWithPath: path))
            log("wrote \(path)")
        }
        let met = remoteRatio <= 3 && dbRatio <= 3 && idleConstant
        return options.strict && !met ? 3 : 0
    }
}
