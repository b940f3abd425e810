import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// The store's mutations, sealing and application mean exactly what the core's do: the same
/// operations through a `Store` on disk and through an in-memory `Replica` give byte-equal
/// deltas and dumps.
@Suite struct DifferentialTests {
    static let refs = [RecordRef(collection: "c", id: "x"), RecordRef(collection: "c", id: "y"), RecordRef(collection: "d", id: "x")]

    @Test(arguments: 1...12)
    func storeMatchesCoreReplica(seed: UInt64) throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let peerStore = try Store.temporary(directory, "b", clock: clock)
        var replica = Replica(id: store.replicaID)
        var peer = Replica(id: peerStore.replicaID)
        var random = SeededGenerator(seed: seed)
        let files = try (1...3).map { try store.blobs.add(bytes: Array("file \($0)".utf8)) }
        for file in files { _ = try peerStore.blobs.add(bytes: try store.blobs.bytes(file.hash)) }

        var sealed = 0
        var received = 0
        var sawConcurrentValues = false
        for step in 0..<150 {
            clock.advance(by: Int64(random.int(0...3)))
            let now = clock.millisecondsSinceEpoch()
            let ref = random.pick(Self.refs)
            let field = random.pick(["f", "g", "s"])
            let value = ScalarValue.int(Int64(random.int(0...9)))
            // The peer writes too, so deltas carry foreign entries and concurrent values.
            let actor = random.int(0...3)
            switch random.int(0...11) {
            case 0, 1:
                if actor == 0 { try peer.set(ref, field, value, now: now); try peerStore.set(ref, field, value) }
                else { try replica.set(ref, field, value, now: now); try store.set(ref, field, value) }
            case 2:
                try replica.add(ref, field, value, now: now); try store.add(ref, field, value)
            case 3:
                try replica.remove(ref, field, value, now: now); try store.remove(ref, field, value)
            case 4:
                let file = random.pick(files)
                if actor == 0 { try peer.setFile(ref, "file", file, now: now); try peerStore.write { tx throws(ConcordError) in try tx.setFile(ref, "file", file) } }
                else { try replica.setFile(ref, "file", file, now: now); try store.write { tx throws(ConcordError) in try tx.setFile(ref, "file", file) } }
            case 5:
                if actor == 0 { try peer.delete(ref, now: now); try peerStore.delete(ref) }
                else { try replica.delete(ref, now: now); try store.delete(ref) }
            case 6:
                let fields: [String: FieldWrite] = [field == "s" ? "f" : field: .scalar(value), "s": .set([value, .string("t")])]
                try replica.create(ref, fields, now: now); try store.create(ref, fields)
            case 7:
                try replica.keepRecord(ref, now: now); try store.keepRecord(ref)
            case 8:
                let fields: [String: FieldWrite] = ["f": .scalar(value), "g": .scalar(.string("s\(step)"))]
                try replica.put(ref, fields, now: now); try store.put(ref, fields)
            case 9:
                let core = replica.seal()
                let disk = try store.seal()?.delta
                #expect(core.map { DeltaCodec.encode($0) } == disk.map { DeltaCodec.encode($0) }, "seed \(seed) step \(step): sealed deltas differ")
                if let core {
                    sealed += 1
                    try peer.apply(core)
                    try peerStore.apply(core)
                }
            default:
                if let delta = peer.seal() {
                    #expect(DeltaCodec.encode(delta) == (try peerStore.seal()?.delta).map { DeltaCodec.encode($0) })
                    try replica.apply(delta)
                    try store.apply(delta)
                    received += 1
                }
            }
            #expect(try store.canonicalDump() == CanonicalDump.json(of: replica.state), "seed \(seed) step \(step)")
            #expect(try store.state() == replica.state, "seed \(seed) step \(step): states differ")
            // A point read (the store's own read connection) reads every record as the core does.
            for ref in Self.refs {
                let expected = replica.state.records[ref].flatMap { $0.isVisible ? $0.sortedFields : nil }
                let read = try store.record(ref)
                #expect(read?.map(\.name) == expected?.map(\.name) && read?.map(\.value) == expected?.map(\.value),
                        "seed \(seed) step \(step): \(ref) reads \(String(describing: read)), the core \(String(describing: expected))")
            }
            sawConcurrentValues = sawConcurrentValues || replica.state.records.values.contains { $0.slots.values.contains { $0.entries.count > 1 } }
        }
        // The run exercised what it claims to: deltas both ways and concurrent entries.
        #expect(sealed > 3 && received > 3, "sealed \(sealed), received \(received)")
        #expect(sawConcurrentValues)
        #expect(try store.conflicts() == replica.state.conflicts)
        #expect(try peerStore.canonicalDump() == CanonicalDump.json(of: peer.state))
    }

    /// A new replica's first snapshot is inserted as it stands (`SlotIO.insertAll`) rather
    /// than diffed against an empty state: the store then holds exactly the snapshot — every
    /// slot kind, concurrent values, files, tombstones, set elements — and a store that
    /// already held something joins it as the core does. Joined as it is read (a
    /// `SnapshotReader` over its encoding), it gives the same stores and the same change
    /// events; without its files it is held back naming exactly the missing ones, with
    /// nothing written.
    @Test(arguments: 1...8)
    func joiningASnapshotIntoAnEmptyStoreHoldsExactlyIt(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        var a = Replica(id: ReplicaID(high: 0xa, low: seed))
        var b = Replica(id: ReplicaID(high: 0xb, low: seed))
        let directory = TemporaryDirectory()
        let fresh = try Store.temporary(directory, "fresh", clock: ManualClock())
        let holding = try Store.temporary(directory, "holding", clock: ManualClock())
        let streamed = try Store.temporary(directory, "streamed", clock: ManualClock())
        let holdingStreamed = try Store.temporary(directory, "holding-streamed", clock: ManualClock())
        let withoutFiles = try Store.temporary(directory, "without-files", clock: ManualClock())
        let files = try (1...3).map { index in
            try [fresh, holding, streamed, holdingStreamed].map { try $0.blobs.add(bytes: Array("file \(index)".utf8)) }[0]
        }
        var now: UInt64 = 1_767_225_600_000
        for _ in 0..<120 {
            now += UInt64(random.int(0...2))
            let ref = random.pick(Self.refs)
            let value = ScalarValue.int(Int64(random.int(0...9)))
            let field = random.pick(["f", "g"])
            switch random.int(0...7) {
            case 0, 1: try a.set(ref, field, value, now: now)
            case 2: try b.set(ref, field, .string("b\(value)"), now: now)  // concurrent with a's
            case 3: try a.add(ref, "s", value, now: now)
            case 4: try b.remove(ref, "s", value, now: now)
            case 5: _ = try random.pick([0, 1]) == 0 ? a.setFile(ref, "file", random.pick(files), now: now) : b.setFile(ref, "file", random.pick(files), now: now)
            case 6: try b.delete(ref, now: now)
            default:
                if let delta = a.seal() { try b.apply(delta) }
                if let delta = b.seal() { try a.apply(delta) }
            }
        }
        if let delta = b.seal() { try a.apply(delta) }
        _ = a.seal()
        let snapshot = try #require(a.snapshot)
        let freshEvents = fresh.changes()
        #expect(try fresh.join(snapshot: snapshot) == .applied)
        #expect(try fresh.state() == snapshot)
        #expect(try fresh.canonicalDump() == CanonicalDump.json(of: snapshot))
        #expect(try fresh.join(snapshot: snapshot) == .alreadyApplied)
        // A store that held a record of its own joins it through the diff, as the core does.
        try holding.set(RecordRef(collection: "c", id: "mine"), "f", .int(1))
        _ = try holding.seal()
        let before = try holding.state()
        #expect(try holding.join(snapshot: snapshot) == .applied)
        #expect(try holding.state() == before.joined(snapshot))

        // The same, joined as it is read.
        let reader = try SnapshotReader(try SnapshotCodec.encode(snapshot))
        let streamedEvents = streamed.changes()
        #expect(try streamed.join(snapshot: reader) == .applied)
        #expect(try streamed.state() == snapshot)
        #expect(try streamed.join(snapshot: reader) == .alreadyApplied)
        var expected = freshEvents.makeAsyncIterator()
        var got = streamedEvents.makeAsyncIterator()
        for _ in snapshot.records.keys {
            let (one, other) = (await expected.next(), await got.next())
            #expect(one != nil && one == other)
        }
        try holdingStreamed.set(RecordRef(collection: "c", id: "mine"), "f", .int(1))
        _ = try holdingStreamed.seal()
        #expect(try holdingStreamed.join(snapshot: reader) == .applied)
        #expect(try holdingStreamed.canonicalDump() == (try holding.canonicalDump()))
        // Written back as a snapshot object as the store reads its records: the same bytes
        // as the encoding of its whole state, and the files that state references.
        for store in [fresh, holding] {
            let seqs: [ReplicaID: UInt64] = [a.id: 5, store.replicaID: 2]
            let object = try store.exportSnapshotObject(appliedSeqs: seqs)
            let state = try store.exportSnapshot()
            #expect(object.plaintext == (try SnapshotObjectCodec.encode(SnapshotContents(state: state, appliedSeqs: seqs))))
            #expect(object.files == Set(state.fileReferences.map(\.file.hash)))
        }
        #expect(try SnapshotObjectCodec.decode(try fresh.exportSnapshotObject(appliedSeqs: [:]).plaintext, path: "s").state == snapshot)
        let referenced = Set(snapshot.fileReferences.map(\.file.hash))
        if referenced.isEmpty {
            #expect(try withoutFiles.join(snapshot: reader) == .applied)
        } else {
            #expect(try withoutFiles.join(snapshot: reader) == .heldBack(missingFiles: referenced.sorted()))
            #expect(try withoutFiles.state() == StoreState())
        }
    }

    /// The store writes a snapshot's records in the format's order — collection, then id,
    /// by their UTF-8 bytes — which SQLite's BINARY order gives: case, accents precomposed
    /// and not, ids that are prefixes of others, characters beyond the first plane.
    @Test func snapshotWrittenAsReadOrdersRecordsByTheirBytes() throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "order", clock: ManualClock())
        let collections = ["c", "C", "\u{e7}", "c\u{327}", "cc"]
        let ids = ["b", "a", "ab", "B", "", "\u{e9}", "e\u{301}", "z", "\u{3a9}", "\u{1f600}", "a b"]
        let file = try store.blobs.add(bytes: Array("order".utf8))
        for (index, collection) in collections.enumerated() {
            try store.write { tx throws(ConcordError) in
                for id in ids {
                    let ref = RecordRef(collection: collection, id: id)
                    try tx.set(ref, "n\u{e9}", .int(Int64(index)))
                    try tx.set(ref, "ne\u{301}", .string(id))
                    try tx.add(ref, "tags", .string(collection))
                }
                try tx.setFile(RecordRef(collection: collection, id: "a"), "file", file)
                try tx.delete(RecordRef(collection: collection, id: "z"))
            }
        }
        _ = try store.seal()
        let object = try store.exportSnapshotObject(appliedSeqs: [store.replicaID: 1])
        let state = try store.exportSnapshot()
        #expect(state.records.count == collections.count * ids.count)
        #expect(object.plaintext == (try SnapshotObjectCodec.encode(SnapshotContents(state: state, appliedSeqs: [store.replicaID: 1]))))
        #expect(object.files == [file.hash])
        // With unsealed changes there is no snapshot to write.
        try store.set(RecordRef(collection: "c", id: "a"), "late", .null)
        #expect(throws: ConcordError.self) { try store.exportSnapshotObject(appliedSeqs: [:]) }
    }
}
