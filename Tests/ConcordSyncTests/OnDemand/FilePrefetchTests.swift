import ConcordCore
import ConcordStore
import ConcordSync
import Foundation
import Synchronization
import Testing

private func photo(_ index: Int) -> RecordRef { RecordRef(collection: "photos", id: "p\(index)") }

/// Prefetch (README, "Large files and small devices"): pinned contents and those below a
/// threshold fetched ahead of reading, with progress, a bounded number at a time, within
/// the budget, and resumable.
@Suite struct FilePrefetchTests {
    /// Replica 0 writes a photo of each size; replica 1 is on demand (with `budget`) and
    /// synced through its own engine, which keeps `inFlight` requests in flight.
    private func fleet(sizes: [Int], budget: UInt64? = nil, inFlight: Int = 3) async throws -> (Fleet, CountingRemote, SyncEngine, [FileRef]) {
        let (fleet, counting) = try await Fleet.wrapped(count: 2) { CountingRemote($0) }
        var files: [FileRef] = []
        for (index, size) in sizes.enumerated() {
            files.append(try fleet.stores[0].attachFile(photo(index), "image", bytes: onDemandContent(index, size: size)))
        }
        try await fleet.engines[0].sync()
        try fleet.stores[1].setFilePolicy(FilePolicy(.onDemand, budget: budget))
        let engine = SyncEngine(store: fleet.stores[1], remote: counting, key: fleet.key, storeID: fleet.storeID, clock: fleet.clock, requestsInFlight: inFlight)
        return (fleet, counting, engine, files)
    }

    @Test func smallFilesAndPinsComeAheadWithProgressAFewAtATime() async throws {
        let small = (0..<12).map { 8_000 + $0 * 1_000 }
        let (fleet, counting, engine, files) = try await fleet(sizes: small + [300_000, 300_001])
        let b = fleet.stores[1]
        try b.pin(FilePin("photos", id: "p12"))
        let synced = try await engine.sync()
        #expect(synced.prefetch?.filesFetched == 1, "the sync after the pull fetched the pinned photo")
        #expect(try b.blobs.all() == [files[12].hash])

        counting.fileDelay = .milliseconds(15)
        counting.resetMostRunning()
        let steps = Mutex<[FilePrefetchProgress]>([])
        let gets = counting.fileGets
        let report = try await engine.prefetchFiles(below: 50_000) { step in steps.withLock { $0.append(step) } }
        let total = UInt64(small.reduce(0, +))
        #expect(report.filesWanted == 12 && report.bytesWanted == total)
        #expect(report.filesFetched == 12 && report.bytesFetched == total)
        #expect(!report.stoppedAtBudget && report.filesLeft == 0)
        #expect(counting.fileGets - gets == 12, "one download per small photo")
        #expect(counting.mostFileGetsAtOnce <= 3, "never more than requestsInFlight downloads at once")
        #expect(counting.mostFileGetsAtOnce >= 2, "downloads overlap")
        let seen = steps.withLock { $0 }
        #expect(seen.map(\.filesDone) == Array(0...12), "progress reports each content done")
        #expect(seen.allSatisfy { $0.filesTotal == 12 && $0.bytesTotal == total })
        #expect(seen.last?.bytesDone == total)
        #expect(zip(seen, seen.dropFirst()).allSatisfy { $0.bytesDone < $1.bytesDone })
        #expect(Set(try b.blobs.all()) == Set(files[0..<13].map(\.hash)), "the unpinned large photo stays on the remote")
        for index in 0..<12 { #expect(try await engine.fileState(files[index].hash) == .local) }

        // Nothing left to fetch: a second run asks for nothing.
        let again = try await engine.prefetchFiles(below: 50_000)
        #expect(again.filesWanted == 0 && counting.fileGets - gets == 12)

        // The stored threshold: each sync after its pull prefetches a new small photo.
        counting.fileDelay = .zero
        try b.setFilePrefetch(FilePrefetch(below: 50_000))
        #expect(try b.filePrefetch() == FilePrefetch(below: 50_000))
        let added = try fleet.stores[0].attachFile(photo(20), "image", bytes: onDemandContent(20, size: 9_999))
        try await fleet.engines[0].sync()
        let next = try await engine.sync()
        #expect(next.prefetch?.filesFetched == 1)
        #expect(b.blobs.contains(added.hash))
        #expect(try fleet.dumps().count == 1)
    }

    @Test func prefetchStopsAtTheBudgetAndEvictsNothing() async throws {
        let sizes = (0..<10).map { 100_000 + $0 }
        let (fleet, counting, engine, files) = try await fleet(sizes: sizes, budget: 350_000)
        let b = fleet.stores[1]
        try b.pin(FilePin("photos", id: "p9"))
        try await engine.sync()
        #expect(try b.blobs.all() == [files[9].hash], "a pinned content is fetched whatever the threshold")
        _ = try await engine.bytes(of: files[8])
        let gets = counting.fileGets
        // 200 017 bytes cached: room for one more photo of about 100 000 bytes, not two.
        let report = try await engine.prefetchFiles(below: 200_000)
        #expect(report.filesWanted == 8)
        #expect(report.filesFetched == 1 && report.bytesFetched == 100_000, "the smallest first, while it fits")
        #expect(report.stoppedAtBudget)
        #expect(report.filesLeft == 7 && report.bytesLeft == UInt64(sizes[1...7].reduce(0, +)))
        #expect(counting.fileGets - gets == 1, "nothing fetched past the budget")
        #expect(Set(try b.blobs.all()) == [files[0].hash, files[8].hash, files[9].hash], "the read and the pinned photos were not evicted")
        #expect(try b.blobBytes() <= 350_000)
    }

    @Test func aCancelledPrefetchResumesWithoutFetchingAgain() async throws {
        let (fleet, counting, engine, files) = try await fleet(sizes: (0..<16).map { 20_000 + $0 }, inFlight: 2)
        try await engine.sync()
        counting.fileDelay = .milliseconds(25)
        let done = Mutex(0)
        let run = Task { try await engine.prefetchFiles(below: 1 << 20) { step in done.withLock { $0 = step.filesDone } } }
        while done.withLock({ $0 }) < 4 { try await Task.sleep(for: .milliseconds(2)) }
        run.cancel()
        let first = try await run.value
        #expect(first.cancelled)
        let local = try fleet.stores[1].blobs.all().count
        #expect(first.filesFetched == local, "every download that began finished and was kept")
        try #require(local >= 4 && local < 16, "the run stopped part way (\(local) of 16)")
        #expect(counting.fileGets == local)

        let second = try await engine.prefetchFiles(below: 1 << 20)
        #expect(!second.cancelled)
        #expect(second.filesWanted == 16 - local && second.filesFetched == 16 - local)
        #expect(counting.fileGets == 16, "no content was downloaded twice")
        #expect(Set(try fleet.stores[1].blobs.all()) == Set(files.map(\.hash)))
    }
}
