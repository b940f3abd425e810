#if canImport(Glibc)
import Glibc
#else
import Darwin
#endif
import ConcordCore
import ConcordTesting
import Testing

/// docs/ARCHITECTURE.md §7 "Converged": 2–6 in-memory replicas run random mixes of every operation,
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

    /// A causally stable purge changes nothing anyone can observe (docs/ARCHITECTURE.md §4, metadata
    /// collection): two runs of the same schedule, one purging every dead record at a
    /// checkpoint where every replica has seen everything, the other only a scratch record
    /// (so both take the same stamps), print the same dumps to the end — through later
    /// re-creations, deletions, concurrent updates and snapshot joins — and both converge.
    @Test func stablePurgeIsInvisible() {
        let count = Environment.value("CONCORD_SEED") == nil ? Self.schedules / 8 : 1
        var purgedRecords = 0
        for seed in Self.firstSeed..<(Self.firstSeed + UInt64(count)) {
            let purged = Simulator(.init(seed: seed, steps: 120, purgeAtCheckpoint: true)).run()
            let kept = Simulator(.init(seed: seed, steps: 120, purgeAtCheckpoint: false)).run()
            purgedRecords += purged.trace.compactMap { line in
                line.hasPrefix("r0 purge ") ? Int(line.split(separator: " ")[2]).map { $0 - 1 } : nil
            }.reduce(0, +)
            guard purged.converged, kept.converged, purged.dumps == kept.dumps else {
                Issue.record("""
                    a stable purge was visible — replay with CONCORD_SEED=\(seed) swift test --filter stablePurgeIsInvisible
                    converged: \(purged.converged) with the purge, \(kept.converged) without
                    with the purge:    \(purged.dumps[0])
                    without the purge: \(kept.dumps[0])
                    trace:
                    \(purged.trace.joined(separator: "\n"))
                    """)
                return
            }
            #expect(purged.finalState.recordCount <= kept.finalState.recordCount)
        }
        if count >= 100 { #expect(purgedRecords > count, "the schedules purged only \(purgedRecords) dead records") }
    }
}

enum Environment {
    static func value(_ name: String) -> String? {
        guard let pointer = getenv(name) else { return nil }
        return String(cString: pointer)
    }
}
