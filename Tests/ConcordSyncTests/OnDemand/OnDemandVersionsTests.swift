import ConcordCore
import ConcordStore
import ConcordSync
import Foundation
import Testing

/// Keeping a forked version or restoring a superseded one whose content is not on this
/// on-demand replica fetches it first (README, "Large files and small devices").
@Suite struct OnDemandVersionsTests {
    private let ref = RecordRef(collection: "photos", id: "p0")

    @Test func keepingAForkedVersionFetchesItsContent() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try b.setFilePolicy(FilePolicy(.onDemand))
        let theirs = try a.attachFile(ref, "image", bytes: onDemandContent(1, size: 70_000))
        let ours = try b.attachFile(ref, "image", bytes: onDemandContent(2, size: 60_000))
        try await fleet.syncAll()
        #expect(try b.conflicts().first?.versions.map(\.file.hash).sorted() == [theirs.hash, ours.hash].sorted())
        #expect(!b.blobs.contains(theirs.hash))
        #expect(throws: ConcordError.self, "the store alone writes only contents it holds") { try b.keepVersion(ref, "image", hash: theirs.hash) }

        try await fleet.engines[1].keepVersion(ref, "image", hash: theirs.hash)
        #expect(try b.currentFile(ref, "image") == theirs)
        #expect(try b.conflicts().isEmpty)
        #expect(try await fleet.engines[1].bytes(of: theirs) == onDemandContent(1, size: 70_000))
        try await fleet.syncAll()
        #expect(try a.currentFile(ref, "image") == theirs)
        #expect(try fleet.dumps().count == 1)
    }

    @Test func restoringASupersededVersionFetchesItsContent() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try b.setFilePolicy(FilePolicy(.onDemand))
        let first = try a.attachFile(ref, "image", bytes: onDemandContent(3, size: 50_000))
        try await fleet.syncAll()
        try a.attachFile(ref, "image", bytes: onDemandContent(4, size: 40_000))
        try await fleet.syncAll()
        let kept = try b.versions(ref, "image").map(\.file)
        #expect(kept == [first], "b keeps the superseded version's reference, not its content")
        #expect(!b.blobs.contains(first.hash))

        try await fleet.engines[1].restore(ref, "image", hash: first.hash)
        #expect(try b.currentFile(ref, "image") == first)
        #expect(b.blobs.contains(first.hash))
        try await fleet.syncAll()
        #expect(try a.currentFile(ref, "image") == first)
        #expect(try fleet.dumps().count == 1)
        await #expect(throws: ConcordError.self) { try await fleet.engines[1].restore(ref, "image", hash: ContentHash(bytes: [UInt8](repeating: 7, count: 32))!) }
    }
}
