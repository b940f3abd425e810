import ConcordCore
import ConcordTesting
import PropertyBased
import Testing

/// Rule 8: every join is commutative, associative and idempotent, for every CRDT type and
/// the whole state; and applying a delta equals joining the delta's state.
@Suite struct LawTests {
    static let codes = Gen.int(in: 0...9_999).array(of: 0...60)

    static func expectLaws<T: Equatable>(_ a: T, _ b: T, _ c: T, join: (T, T) -> T) {
        let failures = checkSemilattice(a, b, c, join: join)
        #expect(failures.isEmpty, "\(failures.joined(separator: "\n"))")
    }

    /// Three registers written, cleared and joined by three replicas, driven by `codes`.
    static func registers<V: Hashable & Sendable>(_ codes: [Int], values: [V]) -> [CausalRegister<V>] {
        var registers = [CausalRegister<V>](repeating: CausalRegister(), count: 3)
        var hlc: UInt64 = 0
        for code in codes {
            let r = code % 3
            hlc += 1
            switch (code / 3) % 4 {
            case 0, 1: registers[r].write(values[(code / 12) % values.count], dot: Stamp(hlc: hlc, replica: ReplicaID(high: 0, low: UInt64(r))))
            case 2: registers[r].clear()
            default: registers[r].join(registers[(code / 12) % 3])
            }
            registers[r]._checkInvariants()
        }
        return registers
    }

    @Test func lwwRegisterIsASemilattice() async {
        await propertyCheck(input: Self.codes) { codes in
            let r = Self.registers(codes, values: [ScalarValue.int(1), .string("two"), .null, .double(3.5)])
            Self.expectLaws(r[0], r[1], r[2]) { $0.joined($1) }
            // Rule 1: the read value is the greatest surviving stamp's, whichever side joins.
            #expect(r[0].joined(r[1]).value == r[1].joined(r[0]).value)
        }
    }

    @Test func mvRegisterIsASemilattice() async {
        await propertyCheck(input: Self.codes) { codes in
            let files = (1...3).map { FileRef(hash: ContentHash(bytes: [UInt8](repeating: UInt8($0), count: 32))!, size: 1) }
            let r = Self.registers(codes, values: files)
            Self.expectLaws(r[0], r[1], r[2]) { $0.joined($1) }
        }
    }

    @Test func orSetIsASemilattice() async {
        await propertyCheck(input: Self.codes) { codes in
            var sets = [ORSet<Int>](repeating: ORSet(), count: 3)
            var hlc: UInt64 = 0
            for code in codes {
                let r = code % 3
                hlc += 1
                switch (code / 3) % 4 {
                case 0, 1: sets[r].add((code / 12) % 4, dot: Stamp(hlc: hlc, replica: ReplicaID(high: 0, low: UInt64(r))))
                case 2: sets[r].remove((code / 12) % 4)
                default: sets[r].join(sets[(code / 12) % 3])
                }
                sets[r]._checkInvariants()
            }
            Self.expectLaws(sets[0], sets[1], sets[2]) { $0.joined($1) }
        }
    }

    @Test func storeStateIsASemilattice() async {
        await propertyCheck(input: Self.codes) { codes in
            let history = OperationHistory.run(codes)
            let s = history.states
            Self.expectLaws(s[0], s[1], s[2]) { $0.joined($1) }
            // Delta states (with slot scopes) are lattice elements too.
            if history.deltas.count >= 2 {
                Self.expectLaws(s[0], history.deltas[0].state, history.deltas[history.deltas.count - 1].state) { $0.joined($1) }
            }
        }
    }

    @Test func recordJoinIsASemilattice() async {
        // The record lattice: states restricted to one record.
        await propertyCheck(input: Self.codes) { codes in
            let ref = RecordRef(collection: "c", id: "x")
            let records = OperationHistory.run(codes).states.map { state in
                var only = StoreState(context: state.context, records: [:])
                if let record = state.record(ref) { only = StoreState(context: state.context, records: [ref: record]) }
                return only
            }
            Self.expectLaws(records[0], records[1], records[2]) { $0.joined($1) }
        }
    }

    @Test func deltaApplicationEqualsJoiningTheDeltaState() async {
        await propertyCheck(input: Self.codes) { codes in
            var history = OperationHistory.run(codes)
            // Deliver everything at the end too, so every history checks many applications.
            for delta in history.deltas {
                for r in 0..<3 { history.deliver(delta, to: r) }
            }
            #expect(history.applyJoinViolations.isEmpty, "\(history.applyJoinViolations.joined(separator: "\n"))")
            for state in history.states { state._checkInvariants() }
        }
    }

    @Test func causalContextUnionIsASemilattice() async {
        let ranges = Gen.int(in: 0...40).array(of: 0...8)
        await propertyCheck(input: ranges, ranges, ranges) { a, b, c in
            func context(_ values: [Int]) -> CausalContext {
                var context = CausalContext()
                for (index, value) in values.enumerated() {
                    let low = UInt64(value)
                    context.insert(low...(low + UInt64(index % 3)), for: ReplicaID(high: 0, low: UInt64(index % 2)))
                }
                context._checkInvariants()
                return context
            }
            let (x, y, z) = (context(a), context(b), context(c))
            Self.expectLaws(x, y, z) { $0.union($1) }
            // Membership agrees with the ranges it was built from.
            for value in a { #expect(x.contains(Stamp(hlc: UInt64(value), replica: ReplicaID(high: 0, low: UInt64(a.firstIndex(of: value)! % 2))))) }
            #expect(x.union(y).subtracting(y).isSubset(of: x))
            #expect(x.subtracting(y).union(y) == x.union(y))
        }
    }
}
