extension CausalContext {
    /// Debug invariant check: normalized ranges.
    public func _checkInvariants() {
        for (_, list) in ranges {
            precondition(!list.isEmpty, "empty range list")
            for index in list.indices.dropFirst() {
                precondition(list[index - 1].upperBound + 1 < list[index].lowerBound, "ranges not normalized")
            }
        }
    }
}
