#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import ConcordCore
import ConcordTesting
import Testing

/// DESIGN.md §7 "Converged": 2–6 in-memory replicas run random mixes of every operation,
/// exchange deltas in random causal orders with duplicates and snapshot joins, and end with
/// identical canonical dumps equal to the reference merge of every delta.
@Suite struct ConvergenceTests {
    /// Schedules per `make test` run; `CONCORD_SCHEDULES` raises it (`make soak`).
    static let schedules = Int(Environment.value("CONCORD_SCHEDULES") ?? "") ?? 2_000
    /// `CONCORD_SEED` replays one schedule.
    static let firstSeed = UInt64(Environment.value("CONCORD_SEED") ?? "") ?? 1

    @Test func randomSchedulesConverge() {
        var totals: [String: Int] = [:]
        let count = Environment.value("CONCORD_SEED") == nil ? Self.schedules : 1
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(count)) {
            let outcome = Simulator(.init(seed: seed)).run()
            totals.merge(outcome.counts, uniquingKeysWith: +)
            guard outcome.converged else {
                Issue.record("""
                    schedule diverged — replay with CONCORD_SEED=\(seed) swift test --filter ConvergenceTests
                    reference: \(outcome.referenceDump)
                    dumps:
                    \(outcome.dumps.joined(separator: "\n"))
                    trace:
                    \(outcome.trace.joined(separator: "\n"))
                    """)
                return
            }
        }
        if count >= 100 {
            // The schedules must exercise every operation and both kinds of conflict.
            for kind in ["set", "add", "remove", "setFile", "delete", "create", "resolveFork", "ackDeleteUpdate",
                         "seal", "apply", "duplicate", "notReady", "snapshotJoin", "forksAtEnd", "deleteUpdatesAtEnd"] {
                #expect(totals[kind, default: 0] > 0, "no schedule exercised \(kind)")
            }
        }
    }
}

enum Environment {
    static func value(_ name: String) -> String? {
        guard let pointer = getenv(name) else { return nil }
        return String(cString: pointer)
    }
}
