import Benchmark
import CSodiumBench
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation

/// Sync benchmarks (issue: "Sync through dumb storage"). Scratch space is on /dev/shm
/// (tmpfs) so the figures measure Concord rather than this machine's disk.
let benchmarks: @Sendable () -> Void = {
    let once = Benchmark.Configuration(
        metrics: [.wallClock, .peakMemoryResident],
        timeUnits: .milliseconds, warmupIterations: 0, scalingFactor: .one,
        maxDuration: .seconds(600), maxIterations: 1)

    Benchmark("10 replicas × 10,000 operations converge through a folder",
              configuration: once.with(metrics: [.wallClock, .custom("remote bytes ÷ payload ×100"), .custom("objects written per sync ×100"), .custom("syncs")])) { benchmark in
        let remote = try await CountedRemote()
        let (scratch, folder, counter) = (remote.scratch, remote.folder, remote.counter)
        var stores: [Store] = []
        var engines: [SyncEngine] = []
        for index in 0..<10 {
            let store = try Store(path: scratch.file("r\(index).db"))
            stores.append(store)
            engines.append(remote.engine(for: store))
        }
        var payload = 0
        benchmark.startMeasurement()
        for round in 0..<10 {
            for (index, store) in stores.enumerated() {
                // 1,000 operations per replica per round: 100 records × 10 fields.
                try store.write { tx throws(ConcordError) in
                    for record in 0..<100 {
                        let ref = RecordRef(collection: "items", id: "r\(index)-\(record % 50)-\(round % 3)")
                        for field in 0..<10 {
                            let value = Workload.value(record: record, field: field, round: round)
                            let valueBytes: Int = if case let .string(text) = value { text.utf8.count } else { 8 }
                            payload += ref.id.utf8.count + 6 + valueBytes
                            try tx.set(ref, "field\(field)", value)
                        }
                    }
                }
                try await engines[index].sync()
            }
        }
        for _ in 0..<2 { for engine in engines { try await engine.sync() } }
        benchmark.stopMeasurement()
        let dumps = Set(try stores.map { try $0.canonicalDump() })
        precondition(dumps.count == 1, "replicas did not converge")
        let stored = try await folder.list(prefix: "").reduce(0) { $0 + ($1.size ?? 0) }
        let syncs = 10 * 10 + 2 * 10
        benchmark.measurement(.custom("remote bytes ÷ payload ×100"), Int(stored) * 100 / max(payload, 1))
        benchmark.measurement(.custom("objects written per sync ×100"), counter.counts.mutations * 100 / syncs)
        benchmark.measurement(.custom("syncs"), syncs)
    }

    Benchmark("idle sync", configuration: once.with(metrics: [.wallClock, .custom("requests")])) { benchmark in
        let remote = try await CountedRemote()
        let (scratch, counter) = (remote.scratch, remote.counter)
        var engines: [SyncEngine] = []
        for index in 0..<5 {
            let store = try Store(path: scratch.file("r\(index).db"))
            for batch in 0..<20 {  // some history: 20 batches per replica
                try store.set(RecordRef(collection: "c", id: "\(index)-\(batch)"), "v", .int(Int64(batch)))
                _ = try store.seal()
            }
            engines.append(remote.engine(for: store))
        }
        for _ in 0..<2 { for engine in engines { try await engine.sync() } }
        counter.resetCounts()
        benchmark.startMeasurement()
        try await engines[0].sync()
        benchmark.stopMeasurement()
        benchmark.measurement(.custom("requests"), counter.counts.requests)
    }

    // A hundred writers on one remote, each with one batch pushed, and an observer that has
    // applied them all: its idle sync, then its pull of one new batch among the hundred
    // replicas' heads (requests are exact; `IdleSyncTests` keeps them as a test).
    Benchmark("100 replicas: idle sync, then a pull of one new batch",
              configuration: once.with(metrics: [.wallClock, .custom("idle sync µs"), .custom("idle sync requests"), .custom("pull requests")])) { benchmark in
        let remote = try await CountedRemote()
        let (scratch, counter) = (remote.scratch, remote.counter)
        var stores: [Store] = []
        var engines: [SyncEngine] = []
        for index in 0...100 {
            let store = try Store(path: scratch.file("r\(index).db"))
            stores.append(store)
            engines.append(remote.engine(for: store))
        }
        for index in 0..<100 {
            for record in 0..<100 {
                try stores[index].set(RecordRef(collection: "c", id: "\(index)-\(record)"), "v", .int(Int64(record)))
            }
            try await engines[index].sync(mode: .pushOnly)
        }
        let observer = engines[100]
        for _ in 0..<2 { try await observer.sync() }
        counter.resetCounts()
        let idle = try await timeAsync { try await observer.sync() }
        let idleRequests = counter.counts.requests
        try stores[42].set(RecordRef(collection: "c", id: "42-new"), "v", .int(1))
        try await engines[42].sync(mode: .pushOnly)
        counter.resetCounts()
        benchmark.startMeasurement()
        let report = try await observer.sync()
        benchmark.stopMeasurement()
        precondition(report.applied == 1, "the new batch was not applied")
        benchmark.measurement(.custom("idle sync µs"), Int(idle * 1e6))
        benchmark.measurement(.custom("idle sync requests"), idleRequests)
        benchmark.measurement(.custom("pull requests"), counter.counts.requests)
    }

    Benchmark("file pipeline vs raw libsodium (256 MiB)",
              configuration: once.with(metrics: [.custom("raw ms"), .custom("concord ms"), .custom("ratio ×100", polarity: .prefersLarger)])) { benchmark in
        let scratch = Scratch()
        let size = 256 << 20
        let source = scratch.file("source.bin")
        try writeRandomFile(source, bytes: size)
        let key = StoreKey.random()
        // Raw libsodium: BLAKE2b + secretstream over the same bytes, written to a file.
        let raw = try time { try rawPipeline(source: source, destination: scratch.file("raw.enc")) }
        // Concord's real path: attach (hash + copy into the blob directory), then a push
        // (encrypt + write to the folder remote). It writes the bytes twice where the
        // baseline writes them once: the local copy is what lets the file survive a crash.
        let store = try Store(path: scratch.file("s.db"))
        let folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
        let (storeKey, id) = try await SyncEngine.createRemote(folder, passphrase: "bench", limits: .minimum)
        let engine = SyncEngine(store: store, remote: folder, key: storeKey, storeID: id)
        _ = key
        let concord = try await timeAsync {
            try store.attachFile(RecordRef(collection: "files", id: "f"), "data", path: source)
            try await engine.sync(mode: .pushOnly)
        }
        benchmark.measurement(.custom("raw ms"), Int(raw * 1_000))
        benchmark.measurement(.custom("concord ms"), Int(concord * 1_000))
        benchmark.measurement(.custom("ratio ×100", polarity: .prefersLarger), Int(raw / concord * 100))
    }

    Benchmark("peak memory syncing a 2 GiB file", configuration: once) { benchmark in
        let scratch = Scratch()
        let source = scratch.file("big.bin")
        try writeRandomFile(source, bytes: 2 << 30)
        let folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
        let (key, id) = try await SyncEngine.createRemote(folder, passphrase: "bench", limits: .minimum)
        let a = try Store(path: scratch.file("a.db"))
        let b = try Store(path: scratch.file("b.db"))
        let ref = RecordRef(collection: "files", id: "big")
        benchmark.startMeasurement()
        let file = try a.attachFile(ref, "data", path: source)
        try FileManager.default.removeItem(atPath: source)
        try await SyncEngine(store: a, remote: folder, key: key, storeID: id).sync()
        try await SyncEngine(store: b, remote: folder, key: key, storeID: id).sync()
        benchmark.stopMeasurement()
        precondition(b.blobs.contains(file.hash), "the file did not arrive")
    }

    Benchmark("peak memory syncing a 1,000,000-operation backlog", configuration: once) { benchmark in
        let scratch = Scratch()
        let folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
        let (key, id) = try await SyncEngine.createRemote(folder, passphrase: "bench", limits: .minimum)
        let a = try Store(path: scratch.file("a.db"))
        let b = try Store(path: scratch.file("b.db"))
        benchmark.startMeasurement()
        for batch in 0..<100 {
            try a.write { tx throws(ConcordError) in
                for record in 0..<1_000 {
                    let ref = RecordRef(collection: "items", id: "item\(batch * 1_000 + record)")
                    for field in 0..<10 { try tx.set(ref, "field\(field)", Workload.value(record: record, field: field, round: batch)) }
                }
            }
        }
        try await SyncEngine(store: a, remote: folder, key: key, storeID: id).sync()
        try await SyncEngine(store: b, remote: folder, key: key, storeID: id).sync()
        benchmark.stopMeasurement()
        let arrived = try b.records(in: "items").count
        precondition(arrived == 100_000, "the backlog did not arrive")
    }
}

extension Benchmark.Configuration {
    func with(metrics: [BenchmarkMetric]) -> Benchmark.Configuration {
        var copy = self
        copy.metrics = metrics + [.peakMemoryResident]
        return copy
    }
}

final class Scratch {
    let path = "/dev/shm/concord-bench-\(UInt64.random(in: 0...UInt64.max))"
    init() { try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true) }
    deinit { try? FileManager.default.removeItem(atPath: path) }
    func file(_ name: String) -> String { path + "/" + name }
}

func time(_ body: () throws -> Void) throws -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func timeAsync(_ body: () async throws -> Void) async throws -> Double {
    let start = ContinuousClock.now
    try await body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func writeRandomFile(_ path: String, bytes: Int) throws {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
    var generator = SeededGenerator(seed: 42)
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    for _ in 0..<(bytes >> 20) {
        for index in stride(from: 0, to: chunk.count, by: 8) {
            withUnsafeBytes(of: generator.next()) { chunk.replaceSubrange(index..<index + 8, with: $0) }
        }
        try handle.write(contentsOf: chunk)
    }
    try handle.close()
}

/// The baseline: BLAKE2b-256 of the content and crypto_secretstream in 64 KiB chunks,
/// reading the source once and writing the ciphertext to a file, through libsodium directly.
func rawPipeline(source: String, destination: String) throws {
    _ = sodium_init()
    let input = FileHandle(forReadingAtPath: source)!
    _ = FileManager.default.createFile(atPath: destination, contents: nil)
    let output = FileHandle(forWritingAtPath: destination)!
    let hashState = UnsafeMutableRawPointer.allocate(byteCount: crypto_generichash_statebytes(), alignment: 64)
    defer { hashState.deallocate() }
    crypto_generichash_init(OpaquePointer(hashState), nil, 0, 32)
    var key = [UInt8](repeating: 1, count: 32)
    var header = [UInt8](repeating: 0, count: 24)
    var stream = crypto_secretstream_xchacha20poly1305_state()
    crypto_secretstream_xchacha20poly1305_init_push(&stream, &header, &key)
    try output.write(contentsOf: header)
    var frame = [UInt8](repeating: 0, count: 65_536 + 17)
    while let data = try input.read(upToCount: 65_536), !data.isEmpty {
        let chunk = [UInt8](data)
        crypto_generichash_update(OpaquePointer(hashState), chunk, UInt64(chunk.count))
        var written: UInt64 = 0
        let tag = chunk.count < 65_536 ? UInt8(crypto_secretstream_xchacha20poly1305_TAG_FINAL) : 0
        crypto_secretstream_xchacha20poly1305_push(&stream, &frame, &written, chunk, UInt64(chunk.count), nil, 0, tag)
        try output.write(contentsOf: frame[0..<Int(written)])
    }
    var digest = [UInt8](repeating: 0, count: 32)
    crypto_generichash_final(OpaquePointer(hashState), &digest, 32)
    try output.synchronize()
    try output.close()
}

/// A folder remote in a fresh scratch folder, every request to it counted, and the key and
/// store id a replica syncs through it with.
struct CountedRemote {
    let scratch: Scratch
    let folder: FolderRemote
    let counter: FaultyRemote
    let key: StoreKey
    let id: StoreID

    init() async throws {
        scratch = Scratch()
        folder = try FolderRemote(root: scratch.file("remote"), createIfMissing: true)
        (key, id) = try await SyncEngine.createRemote(folder, passphrase: "bench", limits: .minimum)
        counter = FaultyRemote(wrapping: folder, seed: 1)
    }

    func engine(for store: Store) -> SyncEngine {
        SyncEngine(store: store, remote: counter, key: key, storeID: id)
    }
}
