import ConcordCore
import ConcordCrypto
import ConcordStore
import ConcordSync
import Foundation
import Testing

extension FuzzRun {
    /// One on-demand replica's random read or eviction: a read must yield the content that
    /// hashes to its name, or a typed error (the remote lacks it, or failed); never other bytes.
    func onDemandStep(_ r: Int) async throws {
        let store = stores[r]
        if random.chance(0.3) {
            let eviction = try store.evictFiles(toFit: UInt64(random.int(0...40)))
            stats.count("onDemandEvicted", eviction.evicted.count)
            return
        }
        if random.chance(0.15) {
            // A prefetch keeps only contents checked against their hashes, within the budget.
            do throws(ConcordError) {
                let report = try await engines[r].prefetchFiles(below: UInt64(random.int(0...40)))
                stats.count("onDemandPrefetchRuns")
                stats.count("onDemandPrefetched", report.filesFetched)
            } catch {
                stats.count("onDemandPrefetchFailed")
            }
            for hash in try store.blobs.all() {
                var hasher = ContentHasher()
                try store.blobs.read(hash) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in hasher.update(chunk) }
                if hasher.finalize() != hash { onDemandFailures.append("replica \(r) holds other bytes under \(hash.hex) after a prefetch") }
            }
            return
        }
        let ref = random.pick(Self.refs)
        guard let fields = try store.record(ref) else { return }
        for case let (_, .file(file)) in fields.map({ ($0.name, $0.value) }) {
            var hasher = ContentHasher()
            do throws(ConcordError) {
                try await engines[r].readFile(file) { (chunk: UnsafeRawBufferPointer) throws(ConcordError) in hasher.update(chunk) }
                if hasher.finalize() != file.hash { onDemandFailures.append("replica \(r) read other bytes for \(file.hash.hex)") }
                stats.count("onDemandRead")
            } catch where error.code == .hashMismatch {
                onDemandFailures.append("replica \(r): \(error.message)")
            } catch {
                stats.count(error.code == .fileUnavailable ? "onDemandUnavailable" : "onDemandReadFailed")
            }
        }
    }
}

/// The sync fuzz with on-demand replicas under a budget of 40 bytes, reading, prefetching
/// and evicting at random steps (one replica's syncs prefetching too), among every fault the fuzz injects (files lost or torn on the
/// remote included): convergence and "no write lost" as in ``SyncFuzzTests``, and no read
/// ever yields bytes other than its content's.
@Suite struct OnDemandFuzzTests {
    static let schedules = Int(ProcessInfo.processInfo.environment["CONCORD_ONDEMAND_SCHEDULES"] ?? "") ?? 24

    @Test func onDemandReplicasConvergeAndNeverReadWrongBytes() async throws {
        var totals: [String: Int] = [:]
        for seed in 1...UInt64(Self.schedules) {
            let run = FuzzRun(seed: 90_000 + seed)
            run.onDemand = true
            let failures = try await run.run()
            for (key, value) in run.stats.snapshot() { totals[key, default: 0] += value }
            #expect(failures.isEmpty, "on-demand schedule \(90_000 + seed): \(failures.joined(separator: "\n"))")
            #expect(run.onDemandFailures.isEmpty, "on-demand schedule \(90_000 + seed): \(run.onDemandFailures)")
            if !failures.isEmpty || !run.onDemandFailures.isEmpty { return }
        }
        if ProcessInfo.processInfo.environment["CONCORD_SYNC_STATS"] != nil {
            print("on-demand fuzz totals: \(totals.filter { $0.key.hasPrefix("onDemand") || $0.key == "sync" }.sorted { $0.key < $1.key })")
        }
        #expect(totals["onDemandRead", default: 0] > 0, "no schedule read a content on demand")
        #expect(totals["onDemandEvicted", default: 0] > 0, "no schedule evicted a content")
        #expect(totals["onDemandPrefetchRuns", default: 0] > 0, "no schedule ran a prefetch")
    }
}
