import ConcordCodec
import ConcordCore
import Testing

/// Format version 2's record section (docs/FORMAT.md §4.7) is canonical as version 1's is:
/// a delta built by hand from the format's rules matches the encoder byte for byte, and each
/// way of writing the same delta otherwise is refused, naming what is wrong.
@Suite struct DeltaVersion2Tests {
    enum HandValue { case int(Int64), string(String) }
    typealias HandEntry = (hlc: UInt64, replica: Int, value: HandValue)
    /// A field register of name index `name`; `common` puts it in the record's common-slot list.
    typealias HandSlot = (name: UInt64, common: Bool, entries: [HandEntry])
    typealias HandRecord = (id: String, slots: [HandSlot])
    /// Ways to write a delta that the format forbids.
    struct Defects {
        /// Writes record N's common-slot list out even when it repeats the previous one.
        var listSpelledOut: Int?
        /// Writes every string in full, repeats included.
        var stringsSpelledOut = false
        /// Adds this to every string reference.
        var referenceOffset: UInt64 = 0
    }

    static let origin = ReplicaID(high: 1, low: 2)
    static let other = ReplicaID(high: 3, low: 4)
    // Names: 0 "c" (the collection), 1 "f", 2 "g", 3 "h"; replicas: 0 origin, 1 other.
    static let records: [HandRecord] = [
        (id: "a", slots: [(name: 1, common: true, entries: [(10, 0, .int(1))]), (name: 2, common: true, entries: [(11, 0, .string("x"))])]),
        (id: "b", slots: [(name: 1, common: true, entries: [(12, 0, .int(-2))]), (name: 2, common: true, entries: [(13, 0, .string("x"))])]),
        (id: "c", slots: [
            (name: 1, common: false, entries: [(5, 1, .string("y")), (14, 0, .string("x"))]),
            (name: 3, common: true, entries: [(15, 0, .int(3))]),
        ]),
    ]

    static func bytes(_ records: [HandRecord], _ defects: Defects = Defects()) -> [UInt8] {
        var out = HandWriter()
        var strings: [String] = []
        func string(_ text: String) {
            if let index = strings.firstIndex(of: text), !defects.stringsSpelledOut {
                out.varint((UInt64(index) + defects.referenceOffset) << 1 | 1)
            } else {
                strings.append(text)
                out.varint(UInt64(text.utf8.count) << 1)
                out.raw(text.utf8)
            }
        }
        var previousHLC: [UInt64] = [20, 20]
        func stamp(_ entry: HandEntry) {
            out.signed(Int64(bitPattern: entry.hlc &- previousHLC[entry.replica]))
            previousHLC[entry.replica] = entry.hlc
        }
        out.deltaHeader(version: 2, origin: origin, other: other, upTo: 20, dependency: 5, names: ["c", "f", "g", "h"], records: records.count)
        var previousList: [UInt64] = []
        for (index, record) in records.enumerated() {
            out.recordID(record.id)
            let common = record.slots.filter(\.common)
            let list = common.map { slot -> UInt64 in
                if case .string = slot.entries[0].value { return slot.name << 1 | 1 }
                return slot.name << 1
            }
            if list == previousList && defects.listSpelledOut != index {
                out.varint(0)
            } else {
                out.varint(UInt64(list.count + 1))
                for item in list { out.varint(item) }
            }
            previousList = list
            let others = record.slots.filter { !$0.common }
            out.varint(UInt64(others.count) << 1)  // not shipped whole
            for slot in common {
                stamp(slot.entries[0])
                switch slot.entries[0].value {
                case let .int(number): out.signed(number)
                case let .string(text): string(text)
                }
            }
            for slot in others {
                out.varint(slot.name << 2 | 2)
                let allHome = slot.entries.allSatisfy { $0.replica == 0 }
                out.varint(UInt64(slot.entries.count) << 1 | (allHome ? 1 : 0))
                for entry in slot.entries {
                    stamp(entry)
                    if !allHome { out.varint(UInt64(entry.replica)) }
                    switch entry.value {
                    case let .int(number): out.raw([3]); out.signed(number)
                    case let .string(text): out.raw([5]); string(text)
                    }
                }
            }
        }
        return out.bytes
    }

    static var delta: Delta {
        get throws {
            func entry(_ hlc: UInt64, _ replica: ReplicaID, _ value: ScalarValue) -> Entry {
                Entry(dot: Stamp(hlc: hlc, replica: replica), payload: .scalar(value))
            }
            return try Delta(
                origin: origin, seq: 1, dependencies: VersionVector([other: 5]), upTo: 20,
                records: [
                    Delta.RecordChange(ref: RecordRef(collection: "c", id: "a"), slots: [
                        (key: .field("f"), entries: [entry(10, origin, .int(1))]),
                        (key: .field("g"), entries: [entry(11, origin, .string("x"))]),
                    ]),
                    Delta.RecordChange(ref: RecordRef(collection: "c", id: "b"), slots: [
                        (key: .field("f"), entries: [entry(12, origin, .int(-2))]),
                        (key: .field("g"), entries: [entry(13, origin, .string("x"))]),
                    ]),
                    Delta.RecordChange(ref: RecordRef(collection: "c", id: "c"), slots: [
                        (key: .field("f"), entries: [entry(5, other, .string("y")), entry(14, origin, .string("x"))]),
                        (key: .field("h"), entries: [entry(15, origin, .int(3))]),
                    ]),
                ])
        }
    }

    @Test func theHandBuiltDeltaIsTheEncodersAndReadsBack() throws {
        let delta = try Self.delta
        let canonical = Self.bytes(Self.records)
        #expect(canonical == DeltaCodec.encode(delta))
        #expect(DeltaCodec.version(of: canonical) == 2)
        #expect(try DeltaCodec.decode(canonical) == delta)
        // The same delta in version 1 is longer, and reads back to the same delta.
        let version1 = DeltaCodec.encode(delta, version: 1)
        #expect(version1.count > canonical.count)
        #expect(try DeltaCodec.decode(version1) == delta)
    }

    @Test func everyOtherWayOfWritingItIsRefused() throws {
        let defects: [(what: String, records: [HandRecord], defects: Defects, fragment: String)] = [
            ("a repeated common-slot list written out", Self.records, Defects(listSpelledOut: 1),
             "common-slot list of c/b repeats the previous record's"),
            ("a string written out twice", Self.records, Defects(stringsSpelledOut: true), "string value spelled out again"),
            ("a reference to a string not read yet", Self.records, Defects(referenceOffset: 2), "string reference"),
            ("a common slot among the others", { var r = Self.records; r[2].slots[1].common = false; return r }(), Defects(),
             "slot h of c/c is a common slot and belongs in the record's common-slot list"),
            ("common slots out of order", { var r = Self.records; r[0].slots.swapAt(0, 1); return r }(), Defects(),
             "common slots of c/a not in strictly ascending name order"),
            ("a field both common and not", { var r = Self.records; r[2].slots[0].name = 3; return r }(), Defects(),
             "slot h of c/c is also in its common-slot list"),
        ]
        for defect in defects {
            let encoded = Self.bytes(defect.records, defect.defects)
            let error = #expect(throws: ConcordError.self, "decoded a delta with \(defect.what)") { try DeltaCodec.decode(encoded) }
            #expect(error?.code == .malformed, "\(defect.what): \(String(describing: error))")
            #expect(error?.message.contains(defect.fragment) == true, "\(defect.what): \(String(describing: error))")
        }
    }
}
