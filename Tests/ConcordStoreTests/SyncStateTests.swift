import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// The sync engine's state is kept typed, one table per kind of fact (schema version 6). A
/// store of version 5 kept it as text under string keys in one table, with the command
/// line's settings; migration "v6" moves every row that parses to its typed place.
@Suite struct SyncStateTests {
    let a = ReplicaID(high: 0xA, low: 1)
    let b = ReplicaID(high: 0xB, low: 2)
    let hash = ContentHash(bytes: [UInt8](repeating: 0xC5, count: 32))!
    let digest = [UInt8](repeating: 0xD1, count: 32)
    let storeID = [UInt8](repeating: 0x5E, count: 16)

    /// The rows a version-5 store held, one of every kind, and some a damaged one might.
    var oldRows: [(String, String)] {
        [
            ("remote.storeID", Hex.encode(storeID)),
            ("remote.manifest", #"{"format":1,"store":"x"}"#),
            ("push.seq", "7"),
            ("ownLoss.seq", "5"),
            ("snapshot.seq", "6"),
            ("snapshot.digest", Hex.encode(digest)),
            ("snapshot.attempt", "6"),
            ("snapshot.covered", "4"),
            ("head.advertised", #"{"replica":"a","seq":7}"#),
            ("head.writtenAt", "1000"),
            ("sealed.forget", "2,3"),
            ("republish.pending", "1"),
            ("loss.checkedAt", "2000"),
            ("restored.orphansOf", b.description),
            ("seen.\(a)", "100"),
            ("seen.\(b)", "150"),
            ("retired.\(b)", "200"),
            ("skew.\(a)", "30"),
            ("uploaded.\(hash.hex)", "300"),
            ("reupload.\(hash.hex)", "1"),
            ("references.replicas/x/1", "n1,n2"),
            ("references.snapshots/y", ""),
            ("covers.snapshots/y", #"{"\#(a)":3,"\#(b)":4}"#),
            ("covers.snapshots/z", "{}"),
            ("unopened.heads/z", "12 345"),
            ("unopened.heads/w", "- 9"),
            ("unreferenced.n3", "400"),
            ("stable.5:notesn1", "500"),
            ("stable.5:étéx:y", "600"),
            ("cli.remote", "file:///remote"),
            ("cli.keyFile", "/keys/k"),
            ("cli.manifest", "ab12"),
            ("cli.lastSync", "123"),
            // What only damage writes: dropped.
            ("seen.not-a-replica", "1"),
            ("retired.\(a)", "soon"),
            ("uploaded.zz", "1"),
            ("unreferenced.n4", "-1"),
            ("unopened.heads/v", "- -"),
            ("unopened.heads/u", "12"),
            ("covers.snapshots/bad", "[1,2"),
            ("stable.99:short", "1"),
            ("stable.x:y", "1"),
            ("something.else", "x"),
        ]
    }

    @Test func aVersionFiveStoreMigratesEveryValueTyped() throws {
        let directory = TemporaryDirectory("sync-state-v5")
        let clock = ManualClock()
        let path = directory.file("a.db")
        do { _ = try Store(path: path, configuration: .init(clock: clock)) }
        try DatabaseQueue(path: path).write { db in
            try downgradeSyncStateToVersionFive(db)
            for (key, value) in oldRows {
                try db.execute(sql: "INSERT INTO concord_sync (key, value) VALUES (?, ?)", arguments: [key, value])
            }
        }
        let store = try Store(path: path, configuration: .init(clock: clock))

        #expect(try store.syncState(.remoteStoreID) == storeID)
        #expect(try store.syncState(.manifest) == Array(#"{"format":1,"store":"x"}"#.utf8))
        #expect(try store.syncState(.pushedSeq) == 7)
        #expect(try store.syncState(.ownLoss) == 5)
        #expect(try store.syncState(.snapshotSeq) == 6)
        #expect(try store.syncState(.snapshotDigest) == digest)
        #expect(try store.syncState(.snapshotAttempt) == 6)
        #expect(try store.syncState(.snapshotCovered) == 4)
        #expect(try store.syncState(.headAdvertised) == #"{"replica":"a","seq":7}"#)
        #expect(try store.syncState(.headWrittenAt) == 1000)
        #expect(try store.syncState(.republishPending))
        #expect(try store.syncState(.lossCheckedAt) == 2000)
        #expect(try store.syncState(.orphansOf) == b)
        #expect(try store.sealedLeftToForget() == [2, 3])

        #expect(try store.replicaFacts(.seen) == [a: 100, b: 150])
        #expect(try store.replicaFacts(.retired) == [b: 200])
        #expect(try store.replicaFacts(.clockSkew) == [a: 30])
        #expect(try store.replicaFact(.seen, of: a) == 100)
        #expect(try store.replicaFact(.retired, of: a) == nil)

        #expect(try store.uploadTimes() == [hash: 300])
        #expect(try store.uploadedAt(hash) == 300)
        #expect(try store.pendingReuploads() == [hash])

        #expect(try store.knownReferences() == ["replicas/x/1": ["n1", "n2"], "snapshots/y": []])
        #expect(try Set(store.snapshotsOfKnownCoverage()) == ["snapshots/y", "snapshots/z"])
        #expect(try store.knownCoverage(of: "snapshots/y") == [a: 3, b: 4])
        #expect(try store.knownCoverage(of: "snapshots/z") == [:])
        #expect(try store.knownCoverage(of: "snapshots/bad") == nil)
        #expect(try store.unopenedHeads() == [
            "heads/z": ListingSignature(size: 12, modified: 345), "heads/w": ListingSignature(size: nil, modified: 9),
        ])
        #expect(try store.unreferencedSince() == ["n3": 400])
        #expect(try store.stableSince() == [
            RecordRef(collection: "notes", id: "n1"): 500, RecordRef(collection: "été", id: "x:y"): 600,
        ])

        #expect(try store.setting("remote") == "file:///remote")
        #expect(try store.setting("keyFile") == "/keys/k")
        #expect(try store.setting("manifest") == "ab12")
        #expect(try store.setting("lastSync") == "123")

        // The old table is gone.
        let old = try store.reader.read { db in try db.tableExists("concord_sync") }
        #expect(!old)
    }

    /// Every value reads as its default in a new store, and is set and cleared one at a time.
    @Test func valuesAreSetAndClearedOneAtATime() throws {
        let directory = TemporaryDirectory("sync-state")
        let store = try Store.temporary(directory, "a", clock: ManualClock())
        #expect(try store.syncState(.pushedSeq) == 0)
        #expect(try store.syncState(.snapshotSeq) == nil)
        #expect(try !store.syncState(.republishPending))
        try store.setSyncState(.pushedSeq, 3)
        try store.setSyncState(.snapshotSeq, 0)
        try store.setSyncState(.republishPending, true)
        #expect(try store.syncState(.pushedSeq) == 3)
        #expect(try store.syncState(.snapshotSeq) == 0)
        #expect(try store.syncState(.republishPending))
        try store.setSyncState(.snapshotSeq, nil)
        #expect(try store.syncState(.snapshotSeq) == nil)
        #expect(try store.syncState(.pushedSeq) == 3)

        try store.setReplicaFact(.seen, of: a, 10)
        try store.setReplicaFact(.retired, of: a, 20)
        try store.setReplicaFact(.seen, of: a, nil)
        #expect(try store.replicaFacts(.seen).isEmpty)
        #expect(try store.replicaFacts(.retired) == [a: 20])

        try store.setUnopenedHeads([("heads/a", ListingSignature(size: 1, modified: nil)), ("heads/b", ListingSignature(size: nil, modified: 2))])
        try store.setUnopenedHeads([("heads/a", nil)])
        #expect(try store.unopenedHeads() == ["heads/b": ListingSignature(size: nil, modified: 2)])

        try store.setKnownReferences(["n1"], of: "p")
        try store.setKnownReferences(["n2", "n3"], of: "p")
        #expect(try store.knownReferences() == ["p": ["n2", "n3"]])
        try store.setKnownReferences(nil, of: "p")
        #expect(try store.knownReferences().isEmpty)
    }
}
