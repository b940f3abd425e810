extension ORSet {
    /// Checks the invariants: dots sorted, non-empty per element, every dot seen.
    public func _checkInvariants() {
        for (_, dots) in adds {
            precondition(!dots.isEmpty, "element with no add")
            precondition(zip(dots, dots.dropFirst()).allSatisfy { $0 < $1 }, "adds not sorted")
            precondition(dots.allSatisfy(context.contains), "an add's dot is not in the context")
        }
        context._checkInvariants()
    }
}
