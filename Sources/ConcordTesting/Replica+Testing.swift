import ConcordCore

extension Replica {
    /// Seals the outbox, throwing when there is nothing to seal: for tests, where an empty
    /// outbox means the test went wrong.
    public mutating func mustSeal() throws(ConcordError) -> Delta {
        guard let delta = seal() else {
            throw ConcordError(.invalidOperation, "replica \(id) has nothing to seal")
        }
        return delta
    }
}
