import ConcordCore
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

private func photo(_ index: Int) -> RecordRef { RecordRef(collection: "photos", id: "p\(index)") }

/// Pins and the cache budget: what eviction takes, and what it never takes.
@Suite struct FileCacheTests {
    private func fleet(count: Int, size: Int = 40_000) async throws -> (Fleet, [FileRef]) {
        let fleet = try await Fleet(count: 2)
        var files: [FileRef] = []
        for index in 0..<count {
            files.append(try fleet.stores[0].attachFile(photo(index), "image", bytes: onDemandContent(index, size: size)))
        }
        try await fleet.engines[0].sync()
        try fleet.stores[1].setFilePolicy(FilePolicy(.onDemand))
        try await fleet.engines[1].sync()
        return (fleet, files)
    }

    @Test func evictionTakesOnlyWhatTheRemoteHoldsAndNobodyPinned() async throws {
        let (fleet, files) = try await fleet(count: 4)
        let b = fleet.stores[1]
        try b.pin(FilePin("photos", id: "p0"))
        // The pin is fetched by the next sync.
        #expect(try await fleet.engines[1].sync().filesFetched == 1)
        for file in files { _ = try await fleet.engines[1].localFile(file) }
        // b's own file, not pushed yet: never evicted.
        let own = try b.attachFile(RecordRef(collection: "photos", id: "mine"), "image", bytes: onDemandContent(99, size: 10_000))
        let eviction = try b.evictFiles(toFit: 0)
        #expect(Set(eviction.evicted) == Set(files[1...].map(\.hash)))
        #expect(Set(try b.blobs.all()) == [files[0].hash, own.hash])
        #expect(eviction.bytesLeft == 40_000 + 10_000)
        // Pushed: now the remote holds it, and it may go.
        try await fleet.engines[1].sync()
        #expect(try b.evictFiles(toFit: 0).evicted == [own.hash])
        #expect(try b.blobs.all() == [files[0].hash], "the pinned content survives every eviction")
        // Unpinned, it goes too; read again, it comes back whole.
        try b.unpin(FilePin("photos", id: "p0"))
        #expect(try b.evictFiles(toFit: 0).evicted == [files[0].hash])
        #expect(try await fleet.engines[1].bytes(of: files[0]) == onDemandContent(0, size: 40_000))
    }

    @Test func aVersionInHistoryOrAForkIsNeverEvicted() async throws {
        let (fleet, files) = try await fleet(count: 1)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        _ = try await fleet.engines[1].localFile(files[0])
        // a replaces it: b's local copy is now a history version's.
        _ = try a.attachFile(photo(0), "image", bytes: Array("second".utf8))
        try await fleet.syncAll()
        #expect(try b.versions(photo(0), "image").map(\.file.hash) == [files[0].hash])
        #expect(try b.evictFiles(toFit: 0).evicted.isEmpty)
        #expect(b.blobs.contains(files[0].hash))
    }

    @Test func theLeastRecentlyReadGoFirst() async throws {
        let (fleet, files) = try await fleet(count: 4, size: 10_000)
        let b = fleet.stores[1]
        for file in files {
            _ = try await fleet.engines[1].localFile(file)
            fleet.clock.advance(by: 1_000)
        }
        _ = try await fleet.engines[1].localFile(files[0])  // read again: now the newest
        let eviction = try b.evictFiles(toFit: 20_000)
        #expect(eviction.evicted == [files[1].hash, files[2].hash])
        #expect(Set(try b.blobs.all()) == [files[0].hash, files[3].hash])
    }

    @Test func aBudgetEvictsAsContentsArrive() async throws {
        let (fleet, files) = try await fleet(count: 6, size: 30_000)
        let b = fleet.stores[1]
        try b.setFilePolicy(FilePolicy(.onDemand, budget: 70_000))
        for file in files {
            #expect(try await fleet.engines[1].bytes(of: file) == onDemandContent(files.firstIndex(of: file)!, size: 30_000))
            #expect(try b.blobBytes() <= 70_000, "within the budget after each read")
        }
        let status = try b.fileCacheStatus()
        #expect(status.bytesCached == 60_000)
        #expect(status.filesNotLocal == 4)
        #expect(status.policy.budget == 70_000)
    }

    @Test func aBudgetIsRefusedInEagerMode() throws {
        let scratch = TemporaryDirectory("cache")
        let store = try Store(path: scratch.file("s.db"))
        #expect { try store.setFilePolicy(FilePolicy(.eager, budget: 10)) } throws: { ($0 as? ConcordError)?.code == .invalidOperation }
        #expect(try store.filePolicy() == .eager)
        #expect { try FilePin("c", field: "f") } throws: { ($0 as? ConcordError)?.code == .invalidOperation }
    }
}
