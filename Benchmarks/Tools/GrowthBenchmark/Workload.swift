import Concord
import ConcordTesting

/// The growth run's workload: a working set of records in three collections, edited by a
/// seeded mix of operations. Everything here is a pure function of the seed.
struct GrowthWorkload {
    let records: Int
    /// One file attachment per this many operations, on average.
    let fileEvery: Int
    /// How many (record, field) places files are attached to — again and again, so old
    /// files become unreferenced.
    let fileSlots: Int

    static let tags: [ScalarValue] = (0..<20).map { .string("tag\($0)") }
    static let words = [
        "alpha", "budget", "call", "draft", "email", "follow", "garden", "hotel", "invoice",
        "journal", "kitchen", "letter", "meeting", "notes", "order", "plan", "quote", "review",
        "school", "travel", "update", "visit", "week", "yearly", "zone", "bring", "check", "fix",
    ]

    /// Record `index`: 60 % notes, 30 % tasks, 10 % docs.
    func ref(_ index: Int) -> RecordRef {
        switch index % 10 {
        case 0..<6: RecordRef(collection: "notes", id: "n\(index)")
        case 6..<9: RecordRef(collection: "tasks", id: "t\(index)")
        default: RecordRef(collection: "docs", id: "d\(index)")
        }
    }

    static func scalarFields(_ collection: String) -> [String] {
        switch collection {
        case "notes": ["title", "body", "pinned", "edited", "color"]
        case "tasks": ["title", "done", "priority", "due", "estimate"]
        default: ["name", "version", "summary"]
        }
    }

    static func setField(_ collection: String) -> String {
        collection == "tasks" ? "labels" : "tags"
    }

    func value(_ field: String, _ g: inout SeededGenerator) -> ScalarValue {
        switch field {
        case "title", "name": .string(Self.sentence(words: g.int(1...4), &g))
        case "body", "summary": .string(Self.sentence(words: g.int(4...16), &g))
        case "pinned", "done": .bool(g.next() & 1 == 0)
        case "color": .int(Int64(g.int(0...7)))
        case "priority": .int(Int64(g.int(1...5)))
        case "edited", "due": .int(1_767_225_600_000 + Int64(g.int(0...100_000_000)))
        case "version": .int(Int64(g.int(1...500)))
        case "estimate": .double(Double(g.int(1...64)) / 4)
        default: .null
        }
    }

    static func sentence(words count: Int, _ g: inout SeededGenerator) -> String {
        (0..<count).map { _ in words[g.int(0...words.count - 1)] }.joined(separator: " ")
    }

    /// Every field of a (re-)created record.
    func fullRecord(_ ref: RecordRef, _ g: inout SeededGenerator) -> [String: FieldWrite] {
        var fields: [String: FieldWrite] = [:]
        for field in Self.scalarFields(ref.collection) { fields[field] = .scalar(value(field, &g)) }
        let tagCount = g.int(0...3)
        fields[Self.setField(ref.collection)] = .set((0..<tagCount).map { _ in Self.tags[g.int(0...Self.tags.count - 1)] })
        return fields
    }

    enum Kind: String, CaseIterable { case scalar, set, deleteOrCreate, file }

    /// One operation, applied inside `tx`. Returns its kind (for the mix's tally).
    func operation(_ tx: WriteTransaction, _ g: inout SeededGenerator) throws(ConcordError) -> Kind {
        if fileEvery > 0, g.int(1...fileEvery) == 1 {
            // Files go on a few fixed places: docs records' `attachment` field.
            let slot = g.int(0...fileSlots - 1)
            let ref = RecordRef(collection: "docs", id: "d\(slot * 10 + 9)")
            var bytes = [UInt8](repeating: 0, count: g.int(1024...4096))
            for index in stride(from: 0, to: bytes.count, by: 8) {
                withUnsafeBytes(of: g.next()) { word in
                    for offset in 0..<min(8, bytes.count - index) { bytes[index + offset] = word[offset] }
                }
            }
            try tx.attachFile(ref, "attachment", bytes: bytes, mediaType: "application/octet-stream")
            return .file
        }
        let ref = ref(g.int(0...records - 1))
        let roll = g.int(0...999)
        if roll < 800 {
            let fields = Self.scalarFields(ref.collection)
            let field = fields[g.int(0...fields.count - 1)]
            try tx.set(ref, field, value(field, &g))
            return .scalar
        } else if roll < 950 {
            let tag = Self.tags[g.int(0...Self.tags.count - 1)]
            if g.next() & 1 == 0 {
                try tx.add(ref, Self.setField(ref.collection), tag)
            } else {
                try tx.remove(ref, Self.setField(ref.collection), tag)
            }
            return .set
        } else {
            if g.next() & 1 == 0 {
                try tx.delete(ref)
            } else {
                try tx.create(ref, fullRecord(ref, &g))
            }
            return .deleteOrCreate
        }
    }
}
