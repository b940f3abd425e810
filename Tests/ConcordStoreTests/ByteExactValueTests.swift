import ConcordCodec
import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB
import Testing

/// Values are stored and synced byte for byte: a NUL inside a string, bytes of every value,
/// and names that cannot be kept are refused rather than changed.
@Suite struct ByteExactValueTests {
    let directory = TemporaryDirectory("exact")
    let ref = RecordRef(collection: "c", id: "x")

    @Test func aStringWithANulByteSurvivesTheStoreTheCodecAndAnotherStore() throws {
        let clock = ManualClock()
        let a = try Store.temporary(directory, "a", clock: clock)
        let b = try Store.temporary(directory, "b", clock: clock)
        let values: [String: ScalarValue] = [
            "nul": .string("a\u{0}b"), "leading": .string("\u{0}start"), "only": .string("\u{0}"),
            "bytes": .bytes([0, 255, 0, 1]), "plain": .string("plain"),
        ]
        try a.put(ref, values.mapValues { .scalar($0) })
        try a.add(ref, "set", .string("x\u{0}y"))
        let read = Dictionary(uniqueKeysWithValues: try #require(try a.record(ref)).map { ($0.name, $0.value) })
        for (name, value) in values { #expect(read[name] == .scalar(value), "\(name): \(String(describing: read[name]))") }
        #expect(read["set"] == .set([.string("x\u{0}y")]))
        // Sealed, encoded, applied on another store: the same bytes.
        let delta = try #require(try a.seal()?.delta)
        try b.apply(encoded: DeltaCodec.encode(delta))
        #expect(try b.canonicalDump() == a.canonicalDump())
        let other = Dictionary(uniqueKeysWithValues: try #require(try b.record(ref)).map { ($0.name, $0.value) })
        #expect(other["nul"] == .scalar(.string("a\u{0}b")))
        // A plain string stays text, for apps that read it with SQL.
        let kind = try a.reader.read { db in try String.fetchOne(db, sql: "SELECT typeof(value) FROM concord_fields WHERE field = 'plain'") }
        #expect(kind == "text")
    }

    /// SQLite stores a NaN as NULL, which could not be read back (a trap on every read of
    /// the record): every double, NaN and infinities included, round-trips.
    @Test func everyDoubleRoundTripsNaNIncluded() throws {
        let clock = ManualClock()
        let a = try Store.temporary(directory, "da", clock: clock)
        let b = try Store.temporary(directory, "db", clock: clock)
        let doubles: [String: Double] = ["nan": .nan, "inf": .infinity, "ninf": -.infinity, "nzero": -0.0, "tiny": .leastNonzeroMagnitude, "max": .greatestFiniteMagnitude]
        try a.put(ref, doubles.mapValues { .scalar(.double($0)) })
        try b.apply(encoded: DeltaCodec.encode(try #require(try a.seal()?.delta)))
        for store in [a, b] {
            let read = Dictionary(uniqueKeysWithValues: try #require(try store.record(ref)).map { ($0.name, $0.value) })
            for (name, value) in doubles {
                guard case let .scalar(.double(stored))? = read[name] else {
                    Issue.record("\(name): \(String(describing: read[name]))")
                    continue
                }
                #expect(stored.bitPattern == value.bitPattern || (stored.isNaN && value.isNaN), "\(name): \(stored)")
            }
        }
        #expect(try a.canonicalDump() == b.canonicalDump())
    }

    @Test func namesWithANulByteAreRefusedBeforeAnythingIsWritten() throws {
        let store = try Store.temporary(directory, "names", clock: ManualClock())
        let before = try store.canonicalDump()
        for attempt: () throws -> Void in [
            { try store.set(RecordRef(collection: "c", id: "a\u{0}b"), "f", .int(1)) },
            { try store.set(RecordRef(collection: "c\u{0}", id: "a"), "f", .int(1)) },
            { try store.set(self.ref, "f\u{0}g", .int(1)) },
            { try store.put(self.ref, ["ok": .scalar(.int(1)), "b\u{0}ad": .scalar(.int(2))]) },
            { try store.add(self.ref, "s\u{0}", .int(1)) },
            { try store.delete(RecordRef(collection: "c", id: "\u{0}")) },
        ] {
            do {
                try attempt()
                Issue.record("a name with a NUL byte was accepted")
            } catch let error as ConcordError {
                #expect(error.code == .invalidOperation && error.message.contains("NUL"), "\(error)")
            }
        }
        #expect(try store.canonicalDump() == before)
        #expect(try store.pendingChangeCount() == 0)
    }
}
