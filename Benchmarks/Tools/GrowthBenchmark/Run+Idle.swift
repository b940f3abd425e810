import Concord
import ConcordTesting
import Foundation

/// One idle sync: what it cost.
struct IdleCost: Hashable {
    var requests = 0
    var lists = 0
    var gets = 0
    var puts = 0
    var deletes = 0
    var bytesDown: UInt64 = 0
    var bytesUp: UInt64 = 0
    var listedEntries = 0
    var microseconds = 0
    var applied = 0
    var pushed = 0

    var sameRequests: [Int] { [requests, lists, gets, puts, deletes, listedEntries] }
}

/// Quiescence and the idle syncs measured after it, and their figures as JSON.
extension Run {
    /// Sync passes in the fixed order until one applies and pushes nothing. Returns the passes.
    func quiesce() async throws -> Int {
        for pass in 1...20 {
            var busy = false
            for engine in engines {
                let report = try await engine.sync()
                if report.applied > 0 || report.pushed > 0 || report.waiting > 0 || !report.joinedSnapshots.isEmpty { busy = true }
            }
            if !busy { return pass }
        }
        return 20
    }

    /// Idle syncs per replica, each counted alone: the requests and bytes of the first (every
    /// later one must cost the same, or the largest is kept), the median time of five.
    func idleSyncs() async throws -> [IdleCost] {
        var costs: [IdleCost] = []
        for engine in engines {
            var cost = IdleCost()
            var times: [Int] = []
            for attempt in 0..<5 {
                counter.resetCounts()
                bytes.reset()
                let start = ContinuousClock.now
                let report = try await engine.sync()
                let elapsed = ContinuousClock.now - start
                times.append(Int(elapsed.components.seconds * 1_000_000 + elapsed.components.attoseconds / 1_000_000_000_000))
                let counts = counter.counts
                let moved = bytes.counts
                let this = IdleCost(
                    requests: counts.requests, lists: counts.lists, gets: counts.gets + counts.getStreams,
                    puts: counts.puts + counts.putStreams, deletes: counts.deletes, bytesDown: moved.bytesDown, bytesUp: moved.bytesUp,
                    listedEntries: moved.listedEntries, microseconds: 0, applied: report.applied, pushed: report.pushed)
                if attempt == 0 || this.requests > cost.requests { cost = this }
            }
            cost.microseconds = times.sorted()[times.count / 2]
            costs.append(cost)
        }
        return costs
    }

    func idleJSON(_ cost: IdleCost) -> [String: Any] {
        ["requests": cost.requests, "lists": cost.lists, "gets": cost.gets, "puts": cost.puts, "deletes": cost.deletes,
         "listedEntries": cost.listedEntries, "bytesDown": cost.bytesDown, "bytesUp": cost.bytesUp, "microseconds": cost.microseconds]
    }

    func databaseJSON(_ figures: DatabaseFigures) -> [String: Any] {
        [
            "file": figures.file, "wal": figures.wal, "total": figures.total, "freeBytes": figures.freeBytes,
            "vacuumed": figures.vacuumedFile as Any, "blobBytes": figures.blobs.bytes, "blobFiles": figures.blobs.files,
            "objects": Dictionary(figures.objects.map { ($0.name, $0.bytes) }, uniquingKeysWith: +),
            "rows": Dictionary(figures.rows.map { ($0.name, $0.count) }, uniquingKeysWith: +),
            "sealedBytes": figures.sealedBytes,
        ]
    }
}
