import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Something planted at a file's remote name, in place of its encrypted stream.
enum PlantedFile: String, CaseIterable, CustomStringConvertible, Sendable {
    /// Random bytes of the stream's own size.
    case garbage
    /// The stream cut to half its size.
    case truncated
    /// A sparse file of 1 GiB, far past the sealed size of the file referenced.
    case oversized
    /// A folder.
    case folder
    /// A FIFO: opening it for reading would block for ever.
    case fifo
    /// A symbolic link to `/dev/zero`: reading it would never end.
    case linkToDevZero

    var description: String { rawValue }

    /// Replaces the object at `file` (an absolute path in a folder remote).
    func plant(at file: String) throws {
        let original = try Data(contentsOf: URL(fileURLWithPath: file))
        try FileManager.default.removeItem(atPath: file)
        switch self {
        case .garbage:
            try Data((0..<original.count).map { _ in UInt8.random(in: 0...255) }).write(to: URL(fileURLWithPath: file))
        case .truncated:
            try original.prefix(original.count / 2).write(to: URL(fileURLWithPath: file))
        case .oversized:
            #expect(FileManager.default.createFile(atPath: file, contents: nil))
            #expect(truncate(file, off_t(1 << 30)) == 0)
        case .folder:
            try FileManager.default.createDirectory(atPath: file, withIntermediateDirectories: false)
        case .fifo:
            #expect(mkfifo(file, 0o644) == 0)
        case .linkToDevZero:
            try FileManager.default.createSymbolicLink(atPath: file, withDestinationPath: "/dev/zero")
        }
    }
}

/// An unreadable or oversized object at a file's name costs only what needs that file: the
/// rest of the sync, the push of this replica's own writes, a new replica's start and
/// `doctor`'s report go on; the replica holding the file puts it back.
@Suite struct UnreadableFileTests {
    let note = RecordRef(collection: "notes", id: "with-file")
    let other = RecordRef(collection: "notes", id: "from-d")
    let own = RecordRef(collection: "notes", id: "from-b")

    /// d writes a record and syncs; a attaches a file (its batch depends on d's) and syncs;
    /// then `planted` replaces the file's remote object. Returns the fleet (a, b, d), the
    /// file and its remote path. b has fetched nothing.
    func fleetWithPlantedFile(_ planted: PlantedFile, wrap: ((FolderRemote) -> any Remote)? = nil) async throws -> (Fleet, FileRef, String) {
        let fleet = try await Fleet(count: 3, remote: wrap)
        let (a, d) = (fleet.stores[0], fleet.stores[2])
        try d.set(other, "title", .string("d's"))
        try await fleet.engines[2].sync()
        let file = try a.write { tx throws(ConcordError) in try tx.attachFile(note, "doc", bytes: Array(repeating: 7, count: 200_000)) }
        try await fleet.engines[0].sync()
        let blob = try #require(try await fleet.remote.list(prefix: RemoteLayout.blobsPrefix).first).path
        try planted.plant(at: fleet.scratch.file("remote") + "/" + blob)
        return (fleet, file, blob)
    }

    /// ``fleetWithPlantedFile(_:wrap:)`` through a remote that counts the bytes streams read.
    func fleetWithPlantedFileCountingReads(_ planted: PlantedFile) async throws -> (Fleet, FileRef, String, CountingStreams) {
        var made: CountingStreams?
        let (fleet, file, blob) = try await fleetWithPlantedFile(planted) { folder in
            let counting = CountingStreams(folder)
            made = counting
            return counting
        }
        return (fleet, file, blob, try #require(made))
    }

    @Test(arguments: PlantedFile.allCases)
    func anUnreadableFileCostsOnlyTheBatchThatNeedsIt(_ planted: PlantedFile) async throws {
        var (fleet, file, blob) = try await fleetWithPlantedFile(planted)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try b.set(own, "title", .string("b's"))
        let report = try await fleet.engines[1].sync()
        // One line names the object; b's own write went up, d's batch applied, a's waits.
        #expect(report.rejected.contains { $0.hasPrefix(blob) }, "\(report.rejected)")
        #expect(report.pushed == 1)
        #expect(try b.record(other) != nil)
        #expect(try b.record(note) == nil, "the batch that needs the file waits")
        #expect(report.waiting == 1)
        #expect(!b.blobs.contains(file.hash))
        #expect(try HostileBoundsTests.temporaryFiles(b).isEmpty, "no download is left on disk")
        try await fleet.engines[0].sync()
        #expect(try a.record(own) != nil)
        // A new replica starts, with everything but the batch that needs the file.
        try await fleet.add(name: "device3")
        let c = fleet.stores[3]
        let started = try await fleet.engines[3].sync()
        #expect(started.rejected.contains { $0.hasPrefix(blob) }, "\(started.rejected)")
        #expect(try c.record(own) != nil)
        #expect(try c.record(other) != nil)
        #expect(try c.record(note) == nil)
    }

    /// A new replica that finds the only snapshot needs the file passes it over and starts
    /// from the batches.
    @Test(arguments: [PlantedFile.garbage, .oversized, .fifo])
    func aSnapshotThatNeedsAnUnreadableFileIsPassedOverAtTheStart(_ planted: PlantedFile) async throws {
        var (fleet, _, blob) = try await fleetWithPlantedFile(planted)
        // a holds the file: writing its snapshot puts the file back first. Planted again.
        let snapshot = try await fleet.engines[0].writeSnapshot()
        try planted.plant(at: fleet.scratch.file("remote") + "/" + blob)
        try await fleet.add(name: "device3")
        let report = try await fleet.engines[3].sync()
        #expect(report.bootstrapped == nil, "\(snapshot) needs the file")
        #expect(report.rejected.contains { $0.hasPrefix(blob) }, "\(report.rejected)")
        #expect(try fleet.stores[3].record(other) != nil)
        #expect(report.pushed == 0 && report.waiting == 1)
    }

    /// Sync after sync, the file costs no more than the encrypted size its reference gives
    /// it, and no download is left behind.
    @Test(arguments: [PlantedFile.garbage, .truncated, .oversized, .linkToDevZero])
    func anUnreadableFileCostsAtMostItsSealedSizeEachSync(_ planted: PlantedFile) async throws {
        let (fleet, file, _, counter) = try await fleetWithPlantedFileCountingReads(planted)
        let b = fleet.stores[1]
        let sealed = BlobStream.sealedByteCount(plaintextByteCount: file.size)
        for round in 0..<3 {
            counter.bytes.withLock { $0 = 0 }
            try b.set(own, "title", .string("round \(round)"))
            let report = try await fleet.engines[1].sync()
            #expect(report.pushed == 1)
            #expect(counter.bytes.withLock { $0 } <= sealed, "round \(round)")
            #expect(try HostileBoundsTests.temporaryFiles(b).isEmpty)
        }
    }

    /// `doctor` stops reading a file at its first frame that fails to authenticate: a
    /// planted 1 GiB file at a file's name costs one read chunk, not the gigabyte (it was
    /// read to its listed size: 9.8 s for a 4 GiB one).
    @Test(arguments: [PlantedFile.garbage, .oversized])
    func doctorStopsReadingAFileAtItsFirstFrameThatFailsToAuthenticate(_ planted: PlantedFile) async throws {
        let (fleet, _, blob, counter) = try await fleetWithPlantedFileCountingReads(planted)
        counter.bytes.withLock { $0 = 0 }
        let report = try await fleet.engines[1].doctor()
        #expect(report.problems.map(\.path) == [blob], "\(report.problems)")
        #expect(counter.bytes.withLock { $0 } <= 2 << 20, "\(counter.bytes.withLock { $0 }) bytes read")
    }

    @Test(arguments: PlantedFile.allCases)
    func doctorNamesAnUnreadableFileAndFinishesItsReport(_ planted: PlantedFile) async throws {
        let (fleet, _, blob) = try await fleetWithPlantedFile(planted)
        let report = try await fleet.engines[1].doctor()
        let finding = try #require(report.problems.first { $0.path == blob }, "\(report.findings)")
        #expect(report.problems.count == 1, "\(report.problems)")
        #expect([.damaged, .unreadable].contains(finding.kind), "\(finding)")
        #expect(report.objects.batches == 2)
        // b does not hold the file: its repair says so.
        let repair = try await fleet.engines[1].doctor(repair: true)
        let unrepaired = try #require(repair.problems.first { $0.path == blob })
        #expect(unrepaired.repair?.hasPrefix("cannot repair here: this replica does not hold the file") == true, "\(unrepaired)")
        // a holds it: its repair puts it back, except over a folder, which a person removes.
        let holder = try await fleet.engines[0].doctor(repair: true)
        if planted == .folder {
            let blocked = try #require(holder.problems.first { $0.path == blob })
            #expect(blocked.repair?.contains("a folder stands at its name") == true, "\(blocked)")
            try FileManager.default.removeItem(atPath: fleet.scratch.file("remote") + "/" + blob)
            #expect(try await fleet.engines[0].doctor(repair: true).isHealthy)
        } else {
            #expect(holder.isHealthy, "\(holder.findings)")
        }
        try await fleet.engines[1].sync()
        #expect(try fleet.stores[1].record(note) != nil)
    }

    /// The holder's hourly loss check puts a whole copy back over one of the wrong size or
    /// not a file; a folder it cannot replace is one line, and the sync goes on.
    @Test(arguments: [PlantedFile.truncated, .oversized, .folder, .fifo, .linkToDevZero])
    func theHoldersHourlyCheckPutsAWholeCopyBack(_ planted: PlantedFile) async throws {
        let (fleet, _, blob) = try await fleetWithPlantedFile(planted)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        fleet.clock.advance(by: Int64(fleet.engines[0].lossCheckInterval))
        try a.set(RecordRef(collection: "notes", id: "later"), "title", .string("a's"))
        let report = try await fleet.engines[0].sync()
        #expect(report.lossChecked)
        #expect(report.pushed == 1, "a's own write went up")
        if planted == .folder {
            #expect(report.rejected.contains { $0.hasPrefix(blob) && $0.contains("a folder stands at its name") }, "\(report.rejected)")
            try FileManager.default.removeItem(atPath: fleet.scratch.file("remote") + "/" + blob)
            try a.set(RecordRef(collection: "notes", id: "later"), "title", .string("a's again"))
            try await fleet.engines[0].sync()  // the push tries the upload again
        } else {
            #expect(report.remoteRolledBack.contains(blob), "\(report.remoteRolledBack)")
        }
        try await fleet.engines[1].sync()
        #expect(try b.record(note) != nil, "b fetched the whole copy")
        #expect(try await fleet.engines[1].doctor().isHealthy)
    }
}

/// Counts the bytes every streamed get delivers.
final class CountingStreams: ForwardingRemote {
    let base: any Remote
    let bytes = Mutex<UInt64>(0)

    init(_ base: FolderRemote) { self.base = base }

    func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in
            bytes.withLock { $0 += UInt64(chunk.count) }
            try write(chunk)
        }
    }
}
