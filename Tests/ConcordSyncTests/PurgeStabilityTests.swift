import ConcordCore
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Synchronization
import Testing

/// A remote whose listings of `heads/` can be told to miss one replica's heads, as an
/// incomplete listing does.
final class HeadHidingRemote: Remote {
    let base: any Remote
    let hidden = Mutex<String?>(nil)
    init(_ base: any Remote) { self.base = base }

    /// When set, the process "dies" once it has fetched a batch or snapshot: every later
    /// write fails.
    let stopAfterPull = Mutex(false)
    let pulled = Mutex(false)

    func noteRead(_ path: String) {
        if path.hasPrefix(RemoteLayout.replicasPrefix) || path.hasPrefix(RemoteLayout.snapshotsPrefix) { pulled.withLock { $0 = true } }
    }
    func checkAlive() throws(ConcordError) {
        if stopAfterPull.withLock({ $0 }) && pulled.withLock({ $0 }) { throw ConcordError(.remote, "the process was killed") }
    }

    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) {
        try checkAlive()
        try await base.put(path, bytes)
    }
    func get(_ path: String) async throws(ConcordError) -> [UInt8]? {
        noteRead(path)
        return try await base.get(path)
    }
    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        noteRead(path)
        return try await base.get(path, limit: limit)
    }
    func delete(_ path: String) async throws(ConcordError) {
        try checkAlive()
        try await base.delete(path)
    }
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) {
        try checkAlive()
        try await base.putStream(path, read: read)
    }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, write: write)
    }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] {
        let objects = try await base.list(prefix: prefix)
        guard let hidden = hidden.withLock({ $0 }) else { return objects }
        return objects.filter { !($0.path.hasPrefix(RemoteLayout.headsPrefix) && $0.path.contains(hidden)) }
    }
}

@Suite struct PurgeStabilityTests {
    let r = RecordRef(collection: "notes", id: "r")

    /// A fleet whose listings of `heads/` can be told to miss one replica's heads.
    static func fleetWithHiddenHeads(count: Int) async throws -> (Fleet, HeadHidingRemote) {
        try await Fleet.wrapped(count: count, HeadHidingRemote.init)
    }

    /// Every replica holds the same dump, with `r` whole: its body, and the given title.
    func expectWhole(_ fleet: Fleet, title: String, sourceLocation: SourceLocation = #_sourceLocation) throws {
        #expect(try fleet.dumps().count == 1, sourceLocation: sourceLocation)
        for store in fleet.stores {
            let fields = Dictionary(uniqueKeysWithValues: try #require(try store.record(r), sourceLocation: sourceLocation).map { ($0.name, $0.value) })
            #expect(fields["body"] == .scalar(.string("all of it")), "\(fields)", sourceLocation: sourceLocation)
            #expect(fields["title"] == .scalar(.string(title)), sourceLocation: sourceLocation)
        }
    }

    /// A reader that has written nothing is still a replica whose head a purge must see:
    /// if one listing misses it, nothing is purged, and its update concurrent with the
    /// delete brings the record back whole (rule 4).
    @Test func aReaderMissingFromOneListingStillHoldsBackThePurge() async throws {
        let (fleet, hiding) = try await Self.fleetWithHiddenHeads(count: 3)
        let (a, c) = (fleet.stores[0], fleet.stores[2])
        try a.put(r, ["title": .scalar(.string("kept")), "body": .scalar(.string("all of it"))])
        try await fleet.syncAll()
        // c has read r and written nothing. a deletes r; a and b see the delete, c not yet.
        try a.delete(r)
        for _ in 0..<2 {
            try await fleet.engines[0].sync()
            try await fleet.engines[1].sync()
        }
        // a compacts while its listing misses c's heads.
        hiding.hidden.withLock { $0 = c.replicaID.description }
        let report = try await fleet.engines[0].compact()
        hiding.hidden.withLock { $0 = nil }
        #expect(report.metadata.purged.isEmpty, "purged \(report.metadata.purged) though c's head was only missing from a listing")
        #expect(report.metadata.skipped?.contains(c.replicaID.description) == true, "\(String(describing: report.metadata.skipped))")
        // c updates r concurrently with the delete; every replica ends with r whole.
        try c.set(r, "title", .string("updated by c"))
        try await fleet.syncAll(rounds: 3)
        try expectWhole(fleet, title: "updated by c")
    }

    /// A replica whose first sync pulled r and was killed before it pushed anything holds
    /// r without having seen the later delete. It wrote its head before
    /// it pulled, but a stale listing may not show that head yet: a purge found stable then
    /// waits twice the listing staleness, by when the head is listed and holds it back.
    /// Before, nothing announced c and a purged at once: c's update brought r back without
    /// its body.
    @Test func aReplicaStoppedInItsFirstSyncStillHoldsBackThePurge() async throws {
        let (wrapped, hiding) = try await Self.fleetWithHiddenHeads(count: 2)
        var fleet = wrapped
        let a = fleet.stores[0]
        try a.put(r, ["title": .scalar(.string("kept")), "body": .scalar(.string("all of it"))])
        try await fleet.syncAll()
        try await fleet.add(name: "c")
        let c = fleet.stores[2]
        hiding.pulled.withLock { $0 = false }
        hiding.stopAfterPull.withLock { $0 = true }
        await #expect(throws: ConcordError.self) { try await fleet.engines[2].sync() }
        hiding.stopAfterPull.withLock { $0 = false }
        #expect(try c.record(r) != nil)
        #expect(try await fleet.remote.list(prefix: RemoteLayout.headsPrefix + c.replicaID.description).count == 1, "c's first sync announced it")
        // a deletes r; a and b see it. a's listings do not show c's head yet.
        hiding.hidden.withLock { $0 = c.replicaID.description }
        try a.delete(r)
        for _ in 0..<2 {
            try await fleet.engines[0].sync()
            try await fleet.engines[1].sync()
        }
        let first = try await fleet.engines[0].compact()
        #expect(first.metadata.purged.isEmpty, "purged \(first.metadata.purged) at once, though a listing may not show every head yet")
        // Listings catch up within the staleness bound; the wait is over.
        hiding.hidden.withLock { $0 = nil }
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        try await fleet.engines[0].sync()
        let later = try await fleet.engines[0].compact()
        #expect(later.metadata.purged.isEmpty, "purged \(later.metadata.purged) though c had not seen the delete")
        // c updates r concurrently with the delete; every replica ends with r whole.
        try c.set(r, "title", .string("updated by c"))
        try await fleet.syncAll(rounds: 3)
        try expectWhole(fleet, title: "updated by c")
    }

    /// A junk first head of a replica nobody saw (`heads/<id>-0000000000000000`, which the
    /// listing believes without opening: it claims nothing) holds neither the purge nor the
    /// deletion of batches back: a purges r after `purgeDelay`, and deletes the batches b
    /// applied. It once held both back for good on every replica.
    @Test func aJunkFirstHeadHoldsBackNeitherThePurgeNorBatchDeletion() async throws {
        let fleet = try await Fleet(count: 2)
        let a = fleet.stores[0]
        try a.put(r, ["title": .scalar(.string("kept")), "body": .scalar(.string("all of it"))])
        try await fleet.syncAll()
        let stranger = try #require(ReplicaID(hex: "0123456789abcdef0123456789abcdef"))
        try await fleet.remote.put(RemoteLayout.head(stranger, seq: 0), Array("junk".utf8))
        try a.delete(r)
        try await fleet.syncAll()
        let first = try await fleet.engines[0].compact()
        #expect(first.metadata.skipped == nil, "\(String(describing: first.metadata.skipped))")
        #expect(first.appliedEverywhere > 0 && !first.deletedBatches.isEmpty, "\(first)")
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        try await fleet.syncAll()
        let later = try await fleet.engines[0].compact()
        #expect(later.metadata.purged == [r], "\(later.metadata)")
        #expect(!later.retiredReplicas.contains(stranger))
        try await fleet.syncAll()
        #expect(try fleet.dumps().count == 1)
        // doctor names it, with the file to remove.
        let doctor = try await fleet.engines[0].doctor()
        #expect(doctor.problems.map(\.kind) == [.planted] && doctor.problems.first?.path == RemoteLayout.head(stranger, seq: 0), "\(doctor.problems)")
    }

    /// A replica seen before whose head no longer opens may be real and merely damaged: the
    /// purge keeps waiting for it, naming it, until a person forgets it — which
    /// `forget` accepts, for it and for an id whose only head name claims a seq and does not
    /// open. Then the purge goes on.
    @Test func aSeenReplicaWhoseHeadDoesNotOpenHoldsThePurgeBackUntilItIsForgotten() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.put(r, ["title": .scalar(.string("kept")), "body": .scalar(.string("all of it"))])
        try await fleet.syncAll()
        for head in try await fleet.remote.list(prefix: RemoteLayout.headsPrefix + b.replicaID.description) {
            try await fleet.remote.put(head.path, Array("torn".utf8))
        }
        try a.delete(r)
        try await fleet.engines[0].sync()
        _ = try await fleet.engines[0].compact()
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        try await fleet.engines[0].sync()
        let waiting = try await fleet.engines[0].compact()
        #expect(waiting.metadata.purged.isEmpty)
        #expect(waiting.metadata.skipped?.contains("\(b.replicaID)") == true && waiting.metadata.skipped?.contains("forget") == true, "\(String(describing: waiting.metadata.skipped))")
        let info = try await fleet.engines[0].forget(b.replicaID)
        #expect(info.status == .forgotten)
        let stranger = try #require(ReplicaID(hex: "0123456789abcdef0123456789abcdef"))
        try await fleet.remote.put(RemoteLayout.head(stranger, seq: 5), Array("junk".utf8))
        #expect(try await fleet.engines[0].forget(stranger).id == stranger)
        _ = try await fleet.engines[0].compact()
        fleet.clock.advance(by: Int64(fleet.engines[0].purgeDelay))
        try await fleet.engines[0].sync()
        let purged = try await fleet.engines[0].compact()
        #expect(purged.metadata.purged == [r], "\(purged.metadata)")
    }

    /// The sync time a replica last read from a head is not proof of silence: a listing
    /// that misses a replica's newer head must not let an old remembered time retire it.
    /// (Found by the sync fuzz's rule-4 oracle, seed 56: a purge ran with every head
    /// missing from one listing, and dropped the fields of a record being updated.)
    @Test func anOldRememberedSyncTimeDoesNotRetireAReplicaWhoseHeadIsMissingFromAListing() async throws {
        let (fleet, hiding) = try await Self.fleetWithHiddenHeads(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        try a.put(r, ["title": .scalar(.string("kept")), "body": .scalar(.string("all of it"))])
        try await fleet.syncAll()
        // Past the retention, b updates r and syncs; a's listings miss b's heads from now
        // on, so the newest sync time a read from b is three months old.
        fleet.clock.advance(by: Int64(fleet.engines[0].retention) + 86_400_000)
        hiding.hidden.withLock { $0 = b.replicaID.description }
        try b.set(r, "title", .string("updated by b"))
        try a.delete(r)
        try await fleet.engines[1].sync()
        try await fleet.engines[0].sync()
        let report = try await fleet.engines[0].compact()
        #expect(report.metadata.purged.isEmpty, "purged \(report.metadata.purged) though b's head was only missing from a listing")
        #expect(report.metadata.skipped?.contains(b.replicaID.description) == true, "\(String(describing: report.metadata.skipped))")
        hiding.hidden.withLock { $0 = nil }
        try await fleet.syncAll(rounds: 3)
        try expectWhole(fleet, title: "updated by b")
    }
}
