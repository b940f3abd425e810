import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// A known failure, not fixed on this branch: `seal(maxSlots:)` throws `malformed` ("entry …
/// of g/y a lies outside the delta's dependencies") after this run of writes, deletes and
/// small seals — on a store with nothing declared, and with the declared tables'
/// maintenance switched off too. Found by `DeclaredTableTests`' small-batch test (seed 2)
/// when it also deleted records; enable this test when the bounded seal is fixed.
@Suite struct BoundedSealRegressionTests {
    @Test(.disabled("seal(maxSlots:) throws malformed after this sequence: a known bug of the bounded seal, to fix apart"))
    func smallSealsAfterDeletesStayWellFormed() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let w = try Store.temporary(directory, "w", clock: clock)
        let script = """
            add z.s 3; set x.b="v0"; remove x.s 1; add y.s 1; seal(maxSlots: 3); seal(maxSlots: 1); seal(maxSlots: 1); seal(maxSlots: 2); set x.b=3; remove z.s 2; set y.a="v1"; seal(maxSlots: 2); seal(maxSlots: 1); seal(maxSlots: 2); seal(maxSlots: 3); set x.b="v2"; set z.a="v2"; add z.s 3; seal(maxSlots: 3); seal(maxSlots: 1); seal(maxSlots: 2); set z.b=2; set y.a=8; delete y; seal(maxSlots: 1); seal(maxSlots: 1); seal(maxSlots: 2); seal(maxSlots: 2); delete y; set x.b="v4"; seal(maxSlots: 3); seal(maxSlots: 1); seal(maxSlots: 2); remove y.s 3; set y.a="v5"; delete y; seal(maxSlots: 3)
            """
        var done: [String] = []
        for op in script.split(separator: ";").map({ $0.trimmingCharacters(in: .whitespaces) }) {
            let parts = op.split(separator: " ")
            do {
                if op.hasPrefix("seal") {
                    _ = try w.seal(maxSlots: Int(op.filter(\.isNumber))!)
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
    }
}
