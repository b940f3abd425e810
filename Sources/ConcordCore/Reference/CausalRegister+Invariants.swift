extension CausalRegister {
    /// Checks the invariants: versions sorted and unique by dot, every dot seen.
    public func _checkInvariants() {
        precondition(DotStore.isWellOrdered(versions), "versions not sorted by dot")
        precondition(versions.allSatisfy { context.contains($0.dot) }, "a version's dot is not in the context")
        context._checkInvariants()
    }
}
