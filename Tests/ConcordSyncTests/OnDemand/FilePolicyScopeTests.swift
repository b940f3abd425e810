import ConcordCore
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import GRDB
import Testing

/// File policies per declared collection and field (README, "Large files and small
/// devices"): `photos` on demand while `notes` stays eager, and the other way round.
@Suite struct FilePolicyScopeTests {
    @Test func photosOnDemandWhileNotesStayEager() async throws {
        let (fleet, counting) = try await Fleet.wrapped(count: 2) { CountingRemote($0) }
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        var photos: [FileRef] = []
        var notes: [FileRef] = []
        for index in 0..<3 {
            photos.append(try a.attachFile(RecordRef(collection: "photos", id: "p\(index)"), "image", bytes: onDemandContent(index, size: 200_000 + index)))
            notes.append(try a.attachFile(RecordRef(collection: "notes", id: "n\(index)"), "body", bytes: onDemandContent(10 + index, size: 1_000 + index)))
        }
        try await fleet.engines[0].sync()

        try b.declare(CollectionDeclaration("photos", fields: [.init("image", .file)]))
        try b.declare(CollectionDeclaration("notes", fields: [.init("body", .file)]))
        try b.setFilePolicy(FilePolicyScope("photos", mode: .onDemand))
        try b.setFilePolicy(FilePolicy(.eager, budget: 250_000))
        #expect(try b.filePolicyScopes() == [FilePolicyScope("photos", mode: .onDemand)])
        #expect(try b.fileMode(collection: "photos") == .onDemand && b.fileMode(collection: "notes") == .eager)
        try await fleet.engines[1].sync()
        #expect(try b.count(Query("photos")) == 3 && b.count(Query("notes")) == 3, "every record applied")
        #expect(Set(try b.blobs.all()) == Set(notes.map(\.hash)), "the notes' files came with their records, no photo's")
        #expect(counting.fileGets == 3)

        // Photos read are a cache within the budget; the notes' files are never evicted.
        for file in photos { _ = try await fleet.engines[1].bytes(of: file) }
        #expect(try b.blobBytes() <= 250_000 + 200_002)
        #expect(Set(notes.map(\.hash)).isSubset(of: Set(try b.blobs.all())))
        let eviction = try b.evictFiles(toFit: 0)
        #expect(!eviction.evicted.isEmpty && Set(eviction.evicted).isSubset(of: Set(photos.map(\.hash))))
        #expect(Set(try b.blobs.all()) == Set(notes.map(\.hash)))

        // Photos back to the store's eager policy: the next sync fetches them.
        #expect(try b.clearFilePolicy(collection: "photos"))
        try await fleet.engines[1].sync()
        #expect(Set(try b.blobs.all()) == Set((photos + notes).map(\.hash)))
        #expect(try fleet.dumps().count == 1, "replicas with different policies converge")
    }

    @Test func oneFieldEagerInAStoreOnDemand() async throws {
        let fleet = try await Fleet(count: 2)
        let (a, b) = (fleet.stores[0], fleet.stores[1])
        var covers: [FileRef] = []
        var raws: [FileRef] = []
        for index in 0..<2 {
            let ref = RecordRef(collection: "albums", id: "a\(index)")
            covers.append(try a.attachFile(ref, "cover", bytes: onDemandContent(index, size: 5_000 + index)))
            raws.append(try a.attachFile(ref, "raw", bytes: onDemandContent(20 + index, size: 90_000 + index)))
        }
        try await fleet.engines[0].sync()
        try b.declare(CollectionDeclaration("albums", fields: [.init("cover", .file), .init("raw", .file)]))
        try b.setFilePolicy(FilePolicy(.onDemand))
        try b.setFilePolicy(FilePolicyScope("albums", field: "cover", mode: .eager))
        #expect(try b.fileMode(collection: "albums", field: "cover") == .eager && b.fileMode(collection: "albums", field: "raw") == .onDemand)
        try await fleet.engines[1].sync()
        #expect(Set(try b.blobs.all()) == Set(covers.map(\.hash)), "covers with their records, raws on demand")
        let local = try await b.reader.read { db in
            try Row.fetchAll(db, sql: "SELECT concord_local__cover, concord_local__raw FROM concord_c_albums").map { [$0[0] as Int, $0[1] as Int] }
        }
        #expect(local == [[1, 0], [1, 0]])
        try b.evictFiles(toFit: 0)
        #expect(Set(try b.blobs.all()) == Set(covers.map(\.hash)), "an eager field's contents are kept")

        // A new batch: its cover is fetched before it applies, its raw is not.
        let later = try a.attachFile(RecordRef(collection: "albums", id: "a9"), "cover", bytes: onDemandContent(9, size: 4_000))
        try a.attachFile(RecordRef(collection: "albums", id: "a9"), "raw", bytes: onDemandContent(29, size: 70_000))
        try await fleet.engines[0].sync()
        try await fleet.engines[1].sync()
        #expect(Set(try b.blobs.all()) == Set((covers + [later]).map(\.hash)))
        #expect(try fleet.dumps().count == 1)
    }

    @Test func aScopeNeedsADeclaredFileField() throws {
        let scratch = TemporaryDirectory("scopes")
        let store = try Store(path: scratch.file("s.db"))
        try store.declare(CollectionDeclaration("photos", fields: [.init("image", .file), .init("title", .string)]))
        for (collection, field) in [("nothing", nil), ("photos", "title"), ("photos", "missing")] as [(String, String?)] {
            #expect(throws: ConcordError.self) { try store.setFilePolicy(FilePolicyScope(collection, field: field, mode: .onDemand)) }
        }
        #expect(try store.filePolicyScopes().isEmpty)
        #expect(throws: ConcordError.self) { try store.setFilePolicy(FilePolicy(.eager, budget: 1 << 20)) }
        try store.setFilePolicy(FilePolicyScope("photos", field: "image", mode: .onDemand))
        try store.setFilePolicy(FilePolicy(.eager, budget: 1 << 20))
        #expect(try store.filePolicy().budget == 1 << 20, "a budget, once a field is on demand")
    }
}
