import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// `seal(maxSlots:)` threw `malformed` ("entry … of g/y a lies outside the delta's
/// dependencies") after this run of writes, deletes and small seals: a delete removed y.a
/// (an outbox row of the field, before the cut) and a later write set it again (its dirty
/// mark, after the cut), and the seal shipped the field with that later entry. Found by
/// `DeclaredTableTests`' small-batch test (seed 2) when it also deleted records. Every
/// batch must now decode, and a reader applying them one by one must end equal.
@Suite struct BoundedSealRegressionTests {
    @Test
    func smallSealsAfterDeletesStayWellFormed() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let w = try Store.temporary(directory, "w", clock: clock)
        let reader = try Store.temporary(directory, "r", clock: clock)
        var sealed = 0
        let script = """
            add z.s 3; set x.b="v0"; remove x.s 1; add y.s 1; seal(maxSlots: 3); seal(maxSlots: 1); seal(maxSlots: 1); seal(maxSlots: 2); set x.b=3; remove z.s 2; set y.a="v1"; seal(maxSlots: 2); seal(maxSlots: 1); seal(maxSlots: 2); seal(maxSlots: 3); set x.b="v2"; set z.a="v2"; add z.s 3; seal(maxSlots: 3); seal(maxSlots: 1); seal(maxSlots: 2); set z.b=2; set y.a=8; delete y; seal(maxSlots: 1); seal(maxSlots: 1); seal(maxSlots: 2); seal(maxSlots: 2); delete y; set x.b="v4"; seal(maxSlots: 3); seal(maxSlots: 1); seal(maxSlots: 2); remove y.s 3; set y.a="v5"; delete y; seal(maxSlots: 3)
            """
        var done: [String] = []
        for op in script.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let parts = op.split(separator: " ")
            do {
                if op.hasPrefix("seal") {
                    if let batch = try w.seal(maxSlots: Int(op.filter(\.isNumber))!) {
                        try reader.apply(batch.delta)
                        sealed += 1
                    }
                } else {
                    clock.advance(by: 1)
                    let target = parts[1].split(separator: ".")
                    let ref = RecordRef(collection: "g", id: String(target[0]))
                    switch parts[0] {
                    case "delete": try w.delete(ref)
                    case "add": try w.add(ref, "s", .int(Int64(parts[2])!))
                    case "remove": try w.remove(ref, "s", .int(Int64(parts[2])!))
                    default:
                        let assignment = target[1].split(separator: "=")
                        let text = String(assignment[1])
                        try w.set(ref, String(assignment[0]), Int64(text).map { .int($0) } ?? .string(text.replacingOccurrences(of: "\"", with: "")))
                    }
                }
                done.append(op)
            } catch {
                Issue.record("\(op) after \(done.count) steps: \(error)")
                return
            }
        }
        while let batch = try w.seal(maxSlots: 2) {
            try reader.apply(batch.delta)
            sealed += 1
        }
        #expect(sealed > 10)
        #expect(try !w.hasPendingChanges())
        #expect(try reader.canonicalDump() == w.canonicalDump())
    }
}
