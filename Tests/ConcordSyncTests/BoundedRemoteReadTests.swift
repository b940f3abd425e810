import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Every whole-object read of the sync engine passes its kind's size limit, so a huge file
/// planted in the store folder (a sparse file costs nothing) costs no memory.
@Suite struct BoundedRemoteReadTests {
    let note = RecordRef(collection: "notes", id: "n1")

    /// Replaces the object at `path` below the fleet's remote folder with a 2 GiB sparse file.
    func plantSparse(_ fleet: Fleet, _ path: String) throws {
        let descriptor = open(fleet.scratch.file("remote") + "/" + path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        try #require(descriptor >= 0)
        defer { close(descriptor) }
        try #require(ftruncate(descriptor, off_t(2) << 30) == 0)
    }

    /// The process's peak resident memory so far, in MiB. Other tests run in the same process
    /// at the same time (one of them once added 535 MiB during the sync below), so the checks
    /// below allow 1 GiB of growth: half of what reading the 2 GiB file would take.
    static func peakMiB() -> Int {
        var usage = rusage()
        #if canImport(Glibc)
        _ = getrusage(RUSAGE_SELF.rawValue, &usage)
        return usage.ru_maxrss / 1024
        #else
        _ = getrusage(RUSAGE_SELF, &usage)
        return usage.ru_maxrss >> 20
        #endif
    }

    @Test func aSparseTwoGiBConcordJSONIsRefusedWithoutBeingRead() async throws {
        let fleet = try await Fleet(count: 1)
        try plantSparse(fleet, RemoteLayout.manifestPath)
        let before = Self.peakMiB()
        let unlock = try await #require(throws: ConcordError.self) { try await SyncEngine.unlock(fleet.remote, passphrase: Fleet.passphrase) }
        #expect(unlock.code == .limitExceeded)
        #expect(unlock.message.contains("concord.json") && unlock.message.contains("2147483648 bytes"), "\(unlock.message)")
        let sync = try await #require(throws: ConcordError.self) { try await fleet.engines[0].sync() }
        #expect(sync.code == .limitExceeded)
        #expect(Self.peakMiB() - before < 1024, "the 2 GiB file was read")
    }

    @Test func aSparseTwoGiBBatchIsRejectedAndEverythingElseSyncs() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.set(note, "title", .string("from a"))
        _ = try await fleet.engines[0].sync()
        let batch = RemoteLayout.batch(a.replicaID, seq: 1)
        try plantSparse(fleet, batch)
        let before = Self.peakMiB()
        try b.set(RecordRef(collection: "notes", id: "n2"), "title", .string("from b"))
        let report = try await fleet.engines[1].sync()
        #expect(report.rejected.contains { $0.contains(batch) && $0.contains("over the limit") }, "\(report.rejected)")
        #expect(Self.peakMiB() - before < 1024, "the 2 GiB batch was read")
        // b's own change still went out, and a receives it.
        _ = try await fleet.engines[0].sync()
        #expect(try a.record(RecordRef(collection: "notes", id: "n2")) != nil)
    }
}
