import ConcordStore
import ConcordTestServers
import ConcordTesting
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Power-cut enumeration: a kill is not a power cut. After a SIGKILL the page cache keeps
/// every write, synced or not, so the kill tests pass with any fsync removed. The fault
/// library's `powercut` action (`CONCORD_FAULT=CALL:N:powercut`, `CONCORD_POWERCUT_ROOT`)
/// drops, before the Nth call of a kind, what was not durable below the root: the bytes
/// written to each file since its last fsync or fdatasync, and the entries created, renamed
/// or removed in each folder since that folder's last fsync; then it kills the child.
///
/// The crash child's local workload, its four sync workloads through a folder remote and its
/// exports are cut at every `fsync`, `fdatasync`, `rename` and `renameat` — the durability
/// points, and the moments a name changes — and at every eighth `write`, `pwrite64`,
/// `unlink` and `unlinkat` (every one in `make crash-enum`), and must pass the kill tests'
/// checks: the state of before or after the interrupted step, nothing lost or doubled in the
/// outbox, nothing torn under a final name in the blob directory or on the remote, every put
/// the folder acknowledged still there, integrity ok, convergence after. Removing any one
/// fsync of the store, the blob store or the folder remote fails them (`make
/// powercut-mutants`, scripts/powercut-mutants.sh), where the kill enumeration still passes.
extension CrashTests {
    /// The durability points and renames, cut at every one.
    static let powerCutCalls = ["fsync", "fdatasync", "rename"]
    /// The writes and removals, cut at every `CONCORD_POWERCUT_WRITE_STRIDE`th (8; 1 in `make crash-enum`).
    static let powerCutStridedCalls = ["write", "pwrite64", "unlink"]

    static var powerCutWriteStride: Int {
        Int(ProcessInfo.processInfo.environment["CONCORD_POWERCUT_WRITE_STRIDE"] ?? "") ?? 8
    }

    /// The power-cut points of a run with `counts`: every call of `every`, every `stride`th of
    /// `strided`.
    static func powerCutPoints(_ counts: [String: Int], every: [String], strided: [String], stride: Int) -> [(String, Int)] {
        every.flatMap { call in (0..<counts[call, default: 0]).map { (call, $0 + 1) } }
            + strided.flatMap { call in Swift.stride(from: 1, through: counts[call, default: 0], by: stride).map { (call, $0) } }
    }

    /// Runs the crash child with `arguments`, its power cut at `fault` (`CALL:N`) below `root`.
    /// The log the child appends to exists first, so its creation is not undone. Returns
    /// whether the child was killed (it finishes when the call never comes).
    static func runChildCut(_ arguments: [String], at fault: String, root: String, log: String) async throws -> Bool {
        try #require(FileManager.default.fileExists(atPath: faultLibrary), "\(faultLibrary) is missing: `swift build` builds it")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        var environment = ProcessInfo.processInfo.environment
        environment["LD_PRELOAD"] = faultLibrary
        environment["CONCORD_FAULT"] = fault + ":powercut"
        environment["CONCORD_POWERCUT_ROOT"] = root
        let termination = try await Subprocess.start(Child.executable, arguments, environment: environment).finish()
        return termination == .signalled(SIGKILL)
    }

    /// The power-cut mode itself (`ConcordPowerCutCheck`, Tests/PowerCutCheck/main.c): a
    /// write never synced comes back to what it overwrote; fsynced and fdatasynced content
    /// survives; a new file or folder, a rename or a removal is undone unless its folder was
    /// fsynced after it; the cut comes before the call it is set on, sees another thread's
    /// writes whole, and leaves files outside the root alone.
    @Test func powerCutModeKeepsExactlyWhatWasDurable() async throws {
        let check = URL(fileURLWithPath: Child.executable).deletingLastPathComponent().appendingPathComponent("ConcordPowerCutCheck").path
        let directory = TemporaryDirectory("powercut-check")
        let output = directory.file("output")
        let termination = try await Subprocess.start(check, [Self.faultLibrary, directory.path], stdout: .file(output, append: false), stderr: .file(output, append: true)).finish()
        let lines = Child.lines(output)
        #expect(termination == .exited(0), "\(lines.filter { !$0.hasPrefix("ok") }.joined(separator: "\n"))")
        #expect(lines.filter { $0.hasPrefix("ok") }.count >= 20, "\(lines)")
        print("power-cut mode: \(lines.last ?? "no output")")
    }

    @Test func aPowerCutAtEveryDurabilityPointLosesNothing() async throws {
        let environment = ProcessInfo.processInfo.environment
        let steps = Int(environment["CONCORD_CRASH_ENUM_STEPS"] ?? "") ?? 20
        let seed: UInt64 = 5
        let counts = try await Self.countCalls(seed: seed, steps: steps)
        let stride = Self.powerCutWriteStride
        let points = Self.powerCutPoints(counts, every: Self.powerCutCalls, strided: Self.powerCutStridedCalls, stride: stride)
        var cut = 0
        var recovered = 0
        var interrupted = 0
        for (call, point) in points {
            let directory = TemporaryDirectory("powercut")
            let path = directory.file("store.db")
            let log = directory.file("log")
            let label = "power cut at \(call) #\(point)"
            if try await Self.runChildCut(["crash", path, log, String(seed), String(steps)], at: "\(call):\(point)", root: directory.path, log: log) {
                cut += 1
            } else {
                Issue.record("\(label): the child was not cut: \(Child.lines(log).suffix(2))")
            }
            let outcome = try CrashTests.recovery(path: path, log: log, seed: seed, count: steps, label: label)
            if outcome.matched { recovered += 1 }
            if outcome.interrupted { interrupted += 1 }
        }
        #expect(cut == points.count && recovered == points.count, "\(recovered) of \(points.count) power cuts recovered, \(cut) cut")
        #expect(interrupted > 0, "no power cut landed inside a step")
        print("power-cut enumeration: \(steps) steps, \(points.count) cuts (every fsync, fdatasync and rename, every \(stride) of the writes and unlinks), \(recovered) recovered, \(interrupted) inside a step")
    }

    /// An export (the blob store's copy out, `concord file export`) cut at every sync, rename
    /// and write: the destination holds its old content or one exported file, whole — never
    /// an empty or partial one — and, once an export returned, that file or a later one.
    @Test func aPowerCutDuringAnExportLeavesTheOldFileOrTheNew() async throws {
        let counting = TemporaryDirectory("powercut-export-count")
        let (status, counts) = try await Self.countingChild(["export", counting.file("store.db"), counting.file("log"), counting.file("exported")])
        #expect(status == 0 && Child.lines(counting.file("log")).last == "finished")
        let points = Self.powerCutPoints(counts, every: Self.powerCutCalls + ["write"], strided: ["pwrite64", "unlink"], stride: Self.powerCutWriteStride)
        let contents = [Array("old".utf8)] + (1...3).map(CrashScript.exportedFile)
        var cut = 0
        var held = 0
        for (call, point) in points {
            let directory = TemporaryDirectory("powercut-export")
            let destination = directory.file("exported")
            _ = FileManager.default.createFile(atPath: destination, contents: Data("old".utf8))
            let log = directory.file("log")
            if try await Self.runChildCut(["export", directory.file("store.db"), log, destination], at: "\(call):\(point)", root: directory.path, log: log) {
                cut += 1
            }
            let acknowledged = Child.lines(log).compactMap { $0.hasPrefix("exported ") ? Int($0.dropFirst(9)) : nil }.max() ?? 0
            let found = Array(FileManager.default.contents(atPath: destination) ?? Data())
            let index = contents.firstIndex(of: found)
            #expect(index != nil, "power cut at \(call) #\(point): the destination holds \(found.count) bytes of no exported file")
            #expect((index ?? 0) >= acknowledged, "power cut at \(call) #\(point): export \(acknowledged) returned, the destination holds \(index.map { "export \($0)" } ?? "other bytes")")
            if let index, index >= acknowledged { held += 1 }
        }
        #expect(cut == points.count && held == points.count, "\(held) of \(points.count) power cuts held, \(cut) cut")
        print("export power-cut enumeration: \(points.count) cuts, \(held) held")
    }

    @Test func aPowerCutAtEveryDurabilityPointOfASyncLosesNothingAndConverges() async throws {
        let fixture = try await SyncFixture.make()
        let stride = Self.powerCutWriteStride
        var lines: [String] = []
        for workload in SyncWorkload.allCases {
            let (counts, after) = try await fixture.countCalls(workload)
            let points = Self.powerCutPoints(counts, every: Self.powerCutCalls + ["renameat"], strided: Self.powerCutStridedCalls + ["unlinkat"], stride: stride)
            var cut = 0
            var recovered = 0
            for (call, point) in points {
                let copy = try fixture.copy()
                let log = copy.file("log")
                let label = "\(workload) cut at \(call) #\(point)"
                if try await Self.runChildCut(["workload", copy.file("a.db"), log, copy.file("remote"), workload.rawValue], at: "\(call):\(point)", root: copy.path, log: log) {
                    cut += 1
                }
                if try await fixture.check(copy, workload: workload, after: after, label: label) { recovered += 1 }
            }
            // A sync's calls vary a little from run to run (its transfers run at once): a
            // point past the end of a run finishes it instead.
            #expect(points.count > 0 && recovered == points.count && cut * 10 >= points.count * 9, "\(workload): \(recovered) of \(points.count) power cuts recovered, \(cut) cut")
            lines.append("\(workload): \(points.count) points, \(cut) cut, \(recovered) recovered")
        }
        print("sync power-cut enumeration (every fsync, fdatasync, rename and renameat, every \(stride) of the writes and unlinks): " + lines.joined(separator: "; "))
    }
}
