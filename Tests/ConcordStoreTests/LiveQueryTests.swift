import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import Testing

/// An observed query yields the right results after every transaction that changed them —
/// local writes, deletes, remote applies, snapshot joins, purges — and once for a
/// transaction that changed many records.
@Suite struct LiveQueryTests {
    /// Results as text: ids and every field, so that any change of them shows.
    static func text(_ results: [(id: String, fields: [(name: String, value: FieldValue)])]) -> [String] {
        results.map { record in "\(record.id): " + record.fields.map { "\($0.name)=\($0.value)" }.joined(separator: ", ") }
    }

    static let declaration = try! CollectionDeclaration("g", fields: [.init("level", .int, indexed: true), .init("tags", .set(.string))])

    @Test(arguments: 1...4)
    func observedQueriesFollowEveryTransaction(seed: UInt64) async throws {
        var random = SeededGenerator(seed: seed)
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let peer = try Store.temporary(directory, "b", clock: clock)
        try store.declare(Self.declaration)
        let query = Query("g", filter: .field("level", .greaterOrEqual, .int(3)) || .contains("tags", .string("rpg"))).order(by: "level", descending: true)
        var results = store.observe(query).makeAsyncIterator()
        var last = Self.text(try #require(try await results.next()))
        #expect(last.isEmpty)
        var yields = 0
        for step in 0..<80 {
            clock.advance(by: 1)
            let ref = RecordRef(collection: "g", id: "r\(random.int(0...7))")
            switch random.int(0...6) {
            case 0, 1: try store.set(ref, "level", .int(Int64(random.int(0...5))))
            case 2: try store.add(ref, "tags", .string(random.pick(["rpg", "puzzle"])))
            case 3: try store.delete(ref)
            case 4:
                try peer.set(ref, "level", .int(Int64(random.int(0...5))))
                try store.apply(#require(try peer.seal()).delta)
            case 5:
                try store.join(snapshot: peer.exportSnapshot(), appliedSeqs: [:])
            default:
                try store.remove(ref, "tags", .string("rpg"))
            }
            let expected = Self.text(try store.query(query))
            if expected != last {
                let yielded = Self.text(try #require(try await results.next()))
                #expect(yielded == expected, "seed \(seed) step \(step)")
                last = yielded
                yields += 1
            }
        }
        #expect(yields > 10, "the results changed \(yields) times")

        // A transaction that changes 10,000 records yields once: the next yield is the
        // write after it.
        let ids = (0..<10_000).map { "bulk\($0)" }
        try peer.write { tx throws(ConcordError) in
            for id in ids { try tx.set(RecordRef(collection: "g", id: id), "level", .int(9)) }
        }
        try store.apply(#require(try peer.seal()).delta)
        let bulk = try #require(try await results.next())
        #expect(bulk.count == last.count + 10_000 || Set(bulk.map(\.id)).isSuperset(of: ids))
        try store.set(RecordRef(collection: "g", id: "after"), "level", .int(10))
        let after = try #require(try await results.next())
        #expect(after.first?.id == "after" && after.count == bulk.count + 1)
    }

    @Test func droppingTheDeclarationEndsTheObservationWithItsError() async throws {
        let directory = TemporaryDirectory()
        let store = try Store.temporary(directory, "a", clock: ManualClock())
        try store.declare(Self.declaration)
        var results = store.observe(Query("g")).makeAsyncIterator()
        _ = try await results.next()
        try store.dropDeclaration("g")
        await #expect(throws: ConcordError.self) { _ = try await results.next() }
    }

    /// The built `concord` binary, beside the test bundle (or `CONCORD_BINARY`).
    static let concord: String = ProcessInfo.processInfo.environment["CONCORD_BINARY"]
        ?? URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("concord").path

    /// Runs `concord` with `arguments` to its end; its exit status must be 0.
    static func concord(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: concord)
        process.arguments = arguments
        var environment = ProcessInfo.processInfo.environment
        environment["CONCORD_KDF_LIMITS"] = "minimum"
        environment["CONCORD_PASSPHRASE"] = "correct horse battery staple"
        environment["CONCORD_STORE"] = nil
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "concord \(arguments)")
    }

    /// Commits of another process on the same file (`concord put` here) wake the observed
    /// query too: each one is seen, and a burst of them ends at the state after the last.
    @Test(.timeLimit(.minutes(1))) func anotherProcessCommitsAreSeen() async throws {
        let directory = TemporaryDirectory()
        let path = directory.file("shared.db")
        try Self.concord(["init", "--name", "cli", "--store", path])
        let store = try Store(path: path)
        try store.declare(Self.declaration)
        var results = store.observe(Query("g").order(by: "level")).makeAsyncIterator()
        #expect(try #require(try await results.next()).isEmpty)
        for index in 0..<3 {
            try Self.concord(["put", "g", "r\(index)", "level=\(index)", "--store", path])
            let seen = try #require(try await results.next())
            #expect(seen.map(\.id) == (0...index).map { "r\($0)" }, "after put \(index)")
        }
        // Five commits back to back: the observation yields states in their order, at most
        // one per commit, and ends at the state after the last.
        for index in 3..<8 { try Self.concord(["put", "g", "r\(index)", "level=\(index)", "--store", path]) }
        var yields = 0
        var ids: [String] = []
        while ids.count < 8 {
            ids = try #require(try await results.next()).map(\.id)
            yields += 1
            #expect(ids == (0..<ids.count).map { "r\($0)" })
        }
        #expect(yields <= 5)
        #expect(try store.query(Query("g")).count == 8)
    }
}
