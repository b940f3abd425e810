/// Checks the join-semilattice laws on three values (docs/ARCHITECTURE.md §2, rule 8): commutativity,
/// associativity and idempotence of `join`. Returns a description of each law that fails,
/// so a test can print which one and with what values.
///
/// One checker serves every CRDT type: the registers, the OR-set, the record state and the
/// whole store state.
public func checkSemilattice<T: Equatable>(
    _ a: T, _ b: T, _ c: T, join: (T, T) -> T, describe: (T) -> String = { "\($0)" }
) -> [String] {
    var failures: [String] = []
    let ab = join(a, b)
    let ba = join(b, a)
    if ab != ba {
        failures.append("not commutative:\n a ⊔ b = \(describe(ab))\n b ⊔ a = \(describe(ba))")
    }
    let left = join(join(a, b), c)
    let right = join(a, join(b, c))
    if left != right {
        failures.append("not associative:\n (a ⊔ b) ⊔ c = \(describe(left))\n a ⊔ (b ⊔ c) = \(describe(right))")
    }
    for (name, value) in [("a", a), ("b", b), ("c", c)] where join(value, value) != value {
        failures.append("not idempotent on \(name): \(describe(value))")
    }
    // The join is an upper bound: joining it again with either side changes nothing.
    if join(ab, a) != ab || join(ab, b) != ab {
        failures.append("a ⊔ b is not an upper bound of a and b")
    }
    return failures
}
