import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import Foundation
import Synchronization

// The same workloads on every backend, in one run (see README.md, "Backends"):
//   1. 10 replicas × 10,000 operations converge: time, requests and bytes per sync;
//   2. the same with 50 ms added to every request (the fault proxy in front of each
//      server; an in-process delay for the folder);
//   3. an idle sync after convergence: how many requests;
//   4. a 1 GiB file pushed by one replica and pulled by another: MiB/s each way and the
//      peak resident memory of the process that moved it (a child process per backend).
// Servers keep their data below $TMPDIR; run it with TMPDIR=/dev/shm and on the disk.
//
//   BackendBenchmark [--backends folder,apache,…] [--file-mib N] [--skip-latency]
//   BackendBenchmark file BACKEND MIB     (the child that moves one file)

/// Counts requests and the bytes they carry, in both directions.
final class Meter: Remote {
    struct Counts { var requests = 0, bytesUp = 0, bytesDown = 0 }
    let base: any Remote
    let counts = Mutex(Counts())
    init(_ base: any Remote) { self.base = base }

    func count(up: Int = 0, down: Int = 0) { counts.withLock { $0.requests += 1; $0.bytesUp += up; $0.bytesDown += down } }
    func take() -> Counts { counts.withLock { let c = $0; $0 = Counts(); return c } }

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { count(up: bytes.count); try await base.put(path, bytes) }
    func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        let bytes = try await base.get(path)
        count(down: bytes?.count ?? 0)
        return bytes
    }
    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        let bytes = try await base.get(path, limit: limit)
        count(down: bytes?.count ?? 0)
        return bytes
    }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { count(); return try await base.list(prefix: prefix) }
    func delete(_ path: String) async throws(ConcordError) { count(); try await base.delete(path) }
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        var sent = 0
        try await base.putStream(path) { () throws(ConcordError) -> [UInt8] in
            let chunk = try read()
            sent += chunk.count
            return chunk
        }
        count(up: sent)
    }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        var received = 0
        let found = try await base.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
            received += chunk.count
            try write(chunk)
        }
        count(down: received)
        return found
    }
    func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] { try await base.anomalies(prefix: prefix) }
}

enum Backend: String, CaseIterable {
    case folder, apache, nginx, rclone, moto, rgw

    var server: ServerKind? { ServerKind(rawValue: rawValue) }

    /// A fresh, empty remote; `latency`: 50 ms added to every request.
    func fresh(scratch: String, latency: Bool) async throws -> any Remote {
        guard let kind = server else {
            let folder = try FolderRemote(root: scratch + "/remote-\(UUID().uuidString.prefix(8))", createIfMissing: true)
            return latency ? FaultyRemote(wrapping: folder, seed: 1, plan: .init(slow: 1, slowDelay: .milliseconds(50))) : folder
        }
        guard latency else { return try await Backends.fresh(kind) }
        let proxy = try await FaultProxy.start(in: try await LoopbackServers.shared.server(kind))
        try await proxy.arm(.slow, count: 100_000_000, delay: 0.05)
        return try await Backends.fresh(kind, through: proxy.origin)
    }
}

struct ConvergeResult {
    var seconds: Double
    var syncs: Int
    var counts: Meter.Counts
    var idleRequests: Int
}

/// 10 replicas, 10 rounds: each writes 1,000 operations (100 records × 10 fields) and
/// syncs; then two rounds of syncs without writes, and one idle sync measured alone.
func converge(_ remote: any Remote, scratch: String) async throws -> ConvergeResult {
    let meter = Meter(remote)
    let (key, id) = try await SyncEngine.createRemote(meter, passphrase: "bench", limits: .minimum)
    var stores: [Store] = []
    var engines: [SyncEngine] = []
    let folder = scratch + "/stores-\(UUID().uuidString.prefix(8))"
    try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: folder) }
    for index in 0..<10 {
        let store = try Store(path: "\(folder)/r\(index).db")
        stores.append(store)
        engines.append(SyncEngine(store: store, remote: meter, key: key, storeID: id))
    }
    _ = meter.take()
    let start = ContinuousClock.now
    for round in 0..<10 {
        for (index, store) in stores.enumerated() {
            try store.write { tx throws(ConcordError) in
                for record in 0..<100 {
                    let ref = RecordRef(collection: "items", id: "r\(index)-\(record % 50)-\(round % 3)")
                    for field in 0..<10 { try tx.set(ref, "field\(field)", Workload.value(record: record, field: field, round: round)) }
                }
            }
            try await engines[index].sync()
        }
    }
    for _ in 0..<2 { for engine in engines { try await engine.sync() } }
    let elapsed = ContinuousClock.now - start
    let counts = meter.take()
    let dumps = Set(try stores.map { try $0.canonicalDump() })
    guard dumps.count == 1 else { throw ConcordError(.invalidOperation, "the replicas did not converge") }
    try await engines[0].sync()
    let idle = meter.take()
    return ConvergeResult(seconds: elapsed.seconds, syncs: 120, counts: counts, idleRequests: idle.requests)
}

/// The child: one replica attaches and pushes a file of `mib` MiB, another pulls it.
func moveFile(_ backend: Backend, mib: Int, scratch: String) async throws {
    let remote = try await backend.fresh(scratch: scratch, latency: false)
    let (key, id) = try await SyncEngine.createRemote(remote, passphrase: "bench", limits: .minimum)
    let source = scratch + "/source.bin"
    try writeRandomFile(source, mib: mib)
    let a = try Store(path: scratch + "/a.db")
    let b = try Store(path: scratch + "/b.db")
    let file = try a.attachFile(RecordRef(collection: "files", id: "big"), "data", path: source)
    try FileManager.default.removeItem(atPath: source)
    let pushStart = ContinuousClock.now
    _ = try await SyncEngine(store: a, remote: remote, key: key, storeID: id).sync(mode: .pushOnly)
    let push = (ContinuousClock.now - pushStart).seconds
    let pullStart = ContinuousClock.now
    _ = try await SyncEngine(store: b, remote: remote, key: key, storeID: id).sync(mode: .pullOnly)
    let pull = (ContinuousClock.now - pullStart).seconds
    guard b.blobs.contains(file.hash) else { throw ConcordError(.invalidOperation, "the file did not arrive") }
    print("push_s=\(push) pull_s=\(pull) peak_kib=\(peakResidentKiB())")
}

func writeRandomFile(_ path: String, mib: Int) throws {
    guard FileManager.default.createFile(atPath: path, contents: nil), let handle = FileHandle(forWritingAtPath: path) else {
        throw ConcordError(.invalidOperation, "cannot create \(path)")
    }
    defer { try? handle.close() }
    var generator = SeededGenerator(seed: 42)
    var chunk = [UInt8](repeating: 0, count: 1 << 20)
    for _ in 0..<mib {
        chunk.withUnsafeMutableBytes { raw in
            for index in 0..<(raw.count / 8) { raw.storeBytes(of: generator.next(), toByteOffset: index * 8, as: UInt64.self) }
        }
        try handle.write(contentsOf: chunk)
    }
}

func peakResidentKiB() -> Int {
    let status = (try? String(contentsOfFile: "/proc/self/status", encoding: .utf8)) ?? ""
    let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
    return Int(line.split(separator: " ").dropFirst().first ?? "") ?? 0
}

extension Duration {
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}

func run(_ command: String, _ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: command)
    process.arguments = arguments
    let pipe = Pipe()
    process.standardOutput = pipe
    try process.run()
    let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw ConcordError(.invalidOperation, "\(arguments.joined(separator: " ")) exited \(process.terminationStatus)") }
    return output
}

func value(_ key: String, in text: String) -> Double {
    for field in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) where field.hasPrefix(key + "=") {
        return Double(field.dropFirst(key.count + 1)) ?? 0
    }
    return 0
}

// MARK: - Main

/// Prints a line at once (stdout to a file is otherwise buffered until the end).
func emit(_ line: String) { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }

let arguments = Array(CommandLine.arguments.dropFirst())
let scratchRoot = FileManager.default.temporaryDirectory.appendingPathComponent("concord-backend-bench-\(UUID().uuidString.prefix(8))").path
try FileManager.default.createDirectory(atPath: scratchRoot, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(atPath: scratchRoot) }

if arguments.first == "file", arguments.count == 3, let backend = Backend(rawValue: arguments[1]), let mib = Int(arguments[2]) {
    try await moveFile(backend, mib: mib, scratch: scratchRoot)
    try? FileManager.default.removeItem(atPath: scratchRoot)  // exit skips the defer
    exit(0)
}

func option(_ name: String) -> String? {
    guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}
let backends = option("--backends").map { $0.split(separator: ",").compactMap { Backend(rawValue: String($0)) } } ?? Backend.allCases
let fileMiB = Int(option("--file-mib") ?? "") ?? 1024
let withLatency = !arguments.contains("--skip-latency")

emit("scratch and servers below \(FileManager.default.temporaryDirectory.path)")
emit("| backend | converge | requests/sync | KiB up/sync | KiB down/sync | with 50 ms | idle sync | file push | file pull | peak RSS |")
emit("|---|---|---|---|---|---|---|---|---|---|")
for backend in backends {
    let plain = try await converge(try await backend.fresh(scratch: scratchRoot, latency: false), scratch: scratchRoot)
    let slow = withLatency ? try await converge(try await backend.fresh(scratch: scratchRoot, latency: true), scratch: scratchRoot) : nil
    var fileColumns = "— | — | —"
    if fileMiB > 0, backend != .moto {
        let output = try run(CommandLine.arguments[0], ["file", backend.rawValue, String(fileMiB)])
        let push = value("push_s", in: output), pull = value("pull_s", in: output), peak = value("peak_kib", in: output)
        fileColumns = String(format: "%.0f MiB/s | %.0f MiB/s | %.0f MiB", Double(fileMiB) / push, Double(fileMiB) / pull, peak / 1024)
    }
    let perSync = Double(plain.syncs)
    emit(String(
        format: "| %@ | %.2f s | %.1f | %.1f | %.1f | %@ | %d request%@ | %@ |",
        backend.rawValue, plain.seconds, Double(plain.counts.requests) / perSync,
        Double(plain.counts.bytesUp) / perSync / 1024, Double(plain.counts.bytesDown) / perSync / 1024,
        slow.map { String(format: "%.1f s", $0.seconds) } ?? "—", plain.idleRequests, plain.idleRequests == 1 ? "" : "s", fileColumns))
}
