import Foundation
import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// Bad input yields a typed error and leaves the store as it was (docs/ARCHITECTURE.md §6).
@Suite struct BadInputTests {
    let directory = TemporaryDirectory("bad")
    let ref = RecordRef(collection: "c", id: "x")

    func twoStores() throws -> (Store, Store) {
        let clock = ManualClock()
        return (try Store.temporary(directory, "a", clock: clock), try Store.temporary(directory, "b", clock: clock))
    }

    @Test func corruptedTruncatedAndNewerDeltasChangeNothing() throws {
        let (a, b) = try twoStores()
        try b.set(ref, "kept", .int(1))
        _ = try b.seal()
        let before = try b.canonicalDump()
        try a.put(ref, ["title": .scalar(.string("Zelda")), "level": .scalar(.int(3))])
        let bytes = DeltaCodec.encode(try #require(try a.seal()?.delta))
        var checked = 0
        for length in stride(from: 0, to: bytes.count, by: 3) {
            #expect(throws: ConcordError.self) { try b.apply(encoded: Array(bytes[..<length])) }
            checked += 1
        }
        var newer = bytes
        newer[4] = 9
        do {
            try b.apply(encoded: newer)
            Issue.record("a newer format version was applied")
        } catch {
            #expect(error.code == .unsupportedVersion)
            #expect(error.message.contains("upgrade"))
        }
        // Refused input changed nothing: same dump, no outbox, no clock movement past it.
        #expect(checked > 10)
        #expect(try b.canonicalDump() == before)
        #expect(try b.pendingChangeCount() == 0)
        #expect(try b.apply(encoded: bytes) == .applied)
        #expect(try b.record(ref)?.map(\.name) == ["kept", "level", "title"])
    }

    @Test func refusedDeltasLeaveTheStoreUnchanged() throws {
        let (a, b) = try twoStores()
        try b.set(ref, "kept", .int(1))
        _ = try b.seal()
        let before = try b.canonicalDump()
        let vectorBefore = try b.versionVector()
        try a.set(ref, "title", .string("t"))
        let bytes = DeltaCodec.encode(try #require(try a.seal()?.delta))
        for length in [0, 5, 20, bytes.count / 2, bytes.count - 1] {
            #expect(throws: ConcordError.self) { try b.apply(encoded: Array(bytes[..<length])) }
        }
        #expect(try b.canonicalDump() == before)
        #expect(try b.versionVector() == vectorBefore)
        #expect(try b.pendingChangeCount() == 0)
        #expect(try b.apply(encoded: bytes) == .applied)
        #expect(try b.canonicalDump() != before)
    }

    @Test func fileWhoseContentDoesNotMatchItsHashIsRefused() throws {
        let (a, _) = try twoStores()
        let good = try a.blobs.add(bytes: Array("the real content".utf8))
        var served = Array("something else".utf8)[...]
        do {
            _ = try a.blobs.add(expected: ContentHash(bytes: [UInt8](repeating: 1, count: 32))!) { (buffer: UnsafeMutableRawBufferPointer) throws(ConcordError) -> Int in
                let count = min(buffer.count, served.count)
                buffer.copyBytes(from: served.prefix(count))
                served = served.dropFirst(count)
                return count
            }
            Issue.record("content with the wrong hash was stored")
        } catch {
            #expect(error.code == .hashMismatch)
        }
        #expect(try a.blobs.all() == [good.hash])
    }

    @Test func deltaWithMissingFileIsHeldBackWhole() throws {
        let (a, b) = try twoStores()
        let file = try a.attachFile(ref, "doc", bytes: Array("a document".utf8))
        try a.set(ref, "title", .string("with a file"))
        let delta = try #require(try a.seal()?.delta)
        let before = try b.canonicalDump()
        #expect(try b.apply(delta) == .heldBack(missingFiles: [file.hash]))
        #expect(try b.canonicalDump() == before)  // neither the record nor its file
        _ = try b.blobs.add(bytes: try a.blobs.bytes(file.hash))
        #expect(try b.apply(delta) == .applied)
        #expect(try b.record(ref)?.first { $0.name == "doc" }?.value == .file(file))
        #expect(try b.blobs.bytes(file.hash) == Array("a document".utf8))
    }

    @Test func notAConcordStoreIsACorruptError() throws {
        let path = directory.file("garbage.db")
        #expect(FileManager.default.createFile(atPath: path, contents: Data(repeating: 0x42, count: 8_192)))
        do {
            _ = try Store(path: path)
            Issue.record("a garbage file opened as a store")
        } catch {
            #expect(error.code == .corrupt, "\(error)")
        }
    }
}
