import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import Testing

/// Crash enumeration: the crash child runs a canned workload — local writes, puts, set
/// changes, deletes, file attaches, seals and remote deltas applied (`CrashScript`) — and is
/// killed at each of its I/O calls in turn (`write`, `pwrite64`, `fsync`, `fdatasync`,
/// `rename`, `unlink`), by strace. After every kill the store passes the crash test's
/// check (`CrashTests.checkAfterKill`): integrity, and exactly the state, outbox, seals,
/// clock and file history of the step before or after the interrupted one, with every file
/// whole. `make test` runs 20 steps; `make crash-enum` 60 (`CONCORD_CRASH_ENUM_STEPS`).
@Suite(.serialized) struct CrashEnumerationTests {
    static let calls = ["write", "pwrite64", "fsync", "fdatasync", "rename", "unlink"]
    static let strace = "/usr/bin/strace"

    @Test func aKillAtEveryIOCallLosesNothing() throws {
        let steps = Int(ProcessInfo.processInfo.environment["CONCORD_CRASH_ENUM_STEPS"] ?? "") ?? 20
        let seed: UInt64 = 5
        try #require(FileManager.default.isExecutableFile(atPath: Self.strace), "strace is missing: `make test` installs it")
        // 1. Count every I/O call of one whole run.
        let counting = TemporaryDirectory("enum-count")
        let summary = counting.file("summary")
        let status = try Self.run(["-f", "-qq", "-c", "-o", summary, "-e", "trace=\(Self.calls.joined(separator: ","))",
                                   Child.executable, "crash", counting.file("store.db"), counting.file("log"), String(seed), String(steps)])
        #expect(status == 0)
        #expect(Child.lines(counting.file("log")).last == "finished")
        let counts = try Self.callCounts(summary)
        // The workload reaches every kind of call: a file attach renames and fsyncs.
        #expect(Self.calls.allSatisfy { counts[$0, default: 0] > 0 }, "\(counts)")
        // 2. Kill the workload at each of them in turn.
        var visited = 0
        var recovered = 0
        var interrupted = 0
        for call in Self.calls {
            for point in stride(from: 1, through: counts[call, default: 0], by: 1) {
                let directory = TemporaryDirectory("enum")
                let path = directory.file("store.db")
                let log = directory.file("log")
                _ = try Self.run(["-f", "-qq", "-o", "/dev/null", "-e", "trace=\(call)", "-e", "inject=\(call):signal=KILL:when=\(point)",
                                  Child.executable, "crash", path, log, String(seed), String(steps)])
                visited += 1
                let label = "\(call) #\(point)"
                if let outcome = try CrashTests.checkAfterKill(path: path, log: log, seed: seed, count: steps, label: label) {
                    if outcome.matched { recovered += 1 }
                    if outcome.interrupted { interrupted += 1 }
                } else {
                    // Killed while the store was being created: whatever is there opens.
                    _ = try Store(path: path)
                    recovered += 1
                }
            }
        }
        let total = counts.values.reduce(0, +)
        #expect(visited == total && recovered == visited, "\(recovered) of \(visited) kills recovered (\(total) I/O calls)")
        #expect(interrupted > 0, "no kill landed inside a step")
        print("crash enumeration: \(steps) steps, \(visited) I/O calls (\(counts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))), \(recovered) recovered, \(interrupted) inside a step")
    }

    /// Runs strace with `arguments`; returns its exit status.
    static func run(_ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: strace)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }

    /// The calls per system call in strace's `-c` summary.
    static func callCounts(_ summary: String) throws -> [String: Int] {
        var counts: [String: Int] = [:]
        for line in try String(contentsOfFile: summary, encoding: .utf8).split(separator: "\n") {
            let columns = line.split(separator: " ", omittingEmptySubsequences: true)
            guard let name = columns.last.map(String.init), calls.contains(name), columns.count >= 5, let number = Int(columns[3]) else { continue }
            counts[name] = number
        }
        return counts
    }
}
