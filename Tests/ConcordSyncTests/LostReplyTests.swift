import ConcordCore
import ConcordRemote
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// A put whose reply is lost has landed all the same: what the replica does next must not
/// give that name other bytes.
@Suite struct LostReplyTests {
    /// Stores every put, but answers the next snapshot put (once armed) with an error.
    final class LosesSnapshotReply: ForwardingRemote {
        let base: any Remote
        let armed = Mutex(false)
        init(_ base: any Remote) { self.base = base }

        func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
            try await base.put(path, bytes)
            let lose = path.hasPrefix(RemoteLayout.snapshotsPrefix) && armed.withLock { armed in
                defer { armed = false }
                return armed
            }
            if lose { throw ConcordError(.remote, "the reply to the put of \(path) was lost") }
        }
    }

    @Test func aSnapshotWhosePutReplyWasLostIsNeverWrittenAgainWithOtherBytes() async throws {
        var (fleet, remote) = try await Fleet.wrapped(count: 2, LosesSnapshotReply.init)
        let note = RecordRef(collection: "notes", id: "n1")
        try fleet.stores[0].set(note, "title", .string("one"))
        try await fleet.syncAll()
        remote.armed.withLock { $0 = true }
        await #expect(throws: ConcordError.self) { try await fleet.engines[0].writeSnapshot() }
        let path = RemoteLayout.snapshot(fleet.stores[0].replicaID, seq: try SyncEngine.pushedSeq(in: fleet.stores[0]))
        let landed = try #require(try await remote.get(path))

        // The other replica writes; this one pulls it (its state changes, its pushed seq
        // does not) and writes a snapshot again under the same name.
        try fleet.stores[1].set(RecordRef(collection: "notes", id: "m1"), "title", .string("from b"))
        try await fleet.engines[1].sync()
        try await fleet.engines[0].sync()
        #expect(try fleet.stores[0].record(RecordRef(collection: "notes", id: "m1")) != nil)
        #expect(try await fleet.engines[0].writeSnapshot() == path)
        #expect(try await remote.get(path) == landed)

        // The snapshot that stands still serves: a newcomer converges.
        try await fleet.add(name: "newcomer")
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
    }
}
