extension Delta {
    /// This batch as the replicas that merged a fork apply it (docs/ARCHITECTURE.md §4,
    /// "Merging a fork"): its entries' dots renamed, and its dependencies on the forked
    /// replica cut at the common prefix (`rename.after`), the rest moved to the fresh id —
    /// so it claims to have seen the prefix and nothing of the other side.
    ///
    /// A batch of the forked replica itself (from `forkSeq` on) becomes a batch of
    /// `rename.to`, numbered from 1 at `forkSeq`; a batch of another replica that had
    /// applied the renamed side keeps its origin and seq.
    ///
    /// - Throws: ``ConcordError/Code/invalidOperation`` for a batch of the forked replica
    ///   before the fork, or one that already names the fresh id.
    public func renaming(_ rename: DotRename, forkSeq: UInt64) throws(ConcordError) -> Delta {
        let forked = rename.replica
        guard dependencies[rename.to] == 0, origin != rename.to else {
            throw ConcordError(.invalidOperation, "batch \(seq) of \(origin) already depends on \(rename.to)")
        }
        var renamedOrigin = origin
        var renamedSeq = seq
        if origin == forked {
            guard seq >= forkSeq, forkSeq > 0, dependencies[forked] >= rename.after else {
                throw ConcordError(.invalidOperation, "batch \(seq) of \(origin) lies before its fork at \(forkSeq)")
            }
            renamedOrigin = rename.to
            renamedSeq = seq - forkSeq + 1
        }
        var renamedDependencies = dependencies
        let seen = dependencies[forked]
        renamedDependencies[forked] = min(seen, rename.after)
        renamedDependencies[rename.to] = seen > rename.after ? seen : 0
        let renamedRecords = records.map { change in
            RecordChange(ref: change.ref, slots: change.slots.map { (key: $0.key, entries: rename($0.entries)) }, whole: change.whole)
        }
        return try Delta(origin: renamedOrigin, seq: renamedSeq, dependencies: renamedDependencies, upTo: upTo, records: renamedRecords)
    }
}
