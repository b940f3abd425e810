/// The swap of one replica's dots past a stamp with another id's: how a fork of a
/// replica's history is merged (docs/ARCHITECTURE.md §4, "Merging a fork").
///
/// Two copies of `replica` that both wrote past stamp `after` wrote dots under one name.
/// Swapping the dots `(h, replica)` and `(h, to)` for every `h > after` moves one side's
/// writes to the fresh id `to` and leaves the common prefix where it was. A swap is its own
/// inverse, so it is injective on dots, and it commutes with the join: renaming two states
/// and joining them equals joining them and renaming the result.
public struct DotRename: Hashable, Sendable, CustomStringConvertible {
    /// The replica whose history forked.
    public let replica: ReplicaID
    /// The fresh id the renamed side's dots move to.
    public let to: ReplicaID
    /// The last stamp of the common prefix: dots with a greater hlc are swapped.
    public let after: UInt64

    /// - Throws: ``ConcordError/Code/invalidOperation`` when `to` is `replica`.
    public init(replica: ReplicaID, to: ReplicaID, after: UInt64) throws(ConcordError) {
        guard replica != to else {
            throw ConcordError(.invalidOperation, "a fork of \(replica) cannot be renamed to its own id")
        }
        self.replica = replica
        self.to = to
        self.after = after
    }

    /// The dot `stamp` is renamed to.
    public func callAsFunction(_ stamp: Stamp) -> Stamp {
        guard stamp.hlc > after else { return stamp }
        if stamp.replica == replica { return Stamp(hlc: stamp.hlc, replica: to) }
        if stamp.replica == to { return Stamp(hlc: stamp.hlc, replica: replica) }
        return stamp
    }

    /// The entries of a dot store renamed, sorted by dot again.
    func callAsFunction(_ entries: [Entry]) -> [Entry] {
        guard entries.contains(where: { $0.dot.hlc > after && ($0.dot.replica == replica || $0.dot.replica == to) }) else {
            return entries
        }
        return entries.map { Entry(dot: self($0.dot), payload: $0.payload) }.sorted { $0.dot < $1.dot }
    }

    public var description: String { "\(replica) past \(HLC.describe(after)) → \(to)" }
}

extension CausalContext {
    /// The same dots with `rename` applied to each.
    public func renaming(_ rename: DotRename) -> CausalContext {
        let (ownBelow, ownAbove) = Self.split(ranges[rename.replica] ?? [], at: rename.after)
        let (otherBelow, otherAbove) = Self.split(ranges[rename.to] ?? [], at: rename.after)
        guard !ownAbove.isEmpty || !otherAbove.isEmpty else { return self }
        var swapped = ranges
        swapped[rename.replica] = nil
        swapped[rename.to] = nil
        var result = CausalContext(ranges: swapped)
        for range in ownBelow + otherAbove { result.insert(range, for: rename.replica) }
        for range in otherBelow + ownAbove { result.insert(range, for: rename.to) }
        return result
    }

    /// Whether any dot of `replica` lies past `hlc`.
    func holds(_ replica: ReplicaID, past hlc: UInt64) -> Bool {
        (ranges[replica]?.last?.upperBound ?? 0) > hlc
    }

    /// `list` cut into the ranges at or below `hlc` and those above it.
    private static func split(_ list: [ClosedRange<UInt64>], at hlc: UInt64) -> (below: [ClosedRange<UInt64>], above: [ClosedRange<UInt64>]) {
        var below: [ClosedRange<UInt64>] = []
        var above: [ClosedRange<UInt64>] = []
        for range in list {
            if range.upperBound <= hlc {
                below.append(range)
            } else if range.lowerBound > hlc {
                above.append(range)
            } else {
                below.append(range.lowerBound...hlc)
                above.append((hlc + 1)...range.upperBound)
            }
        }
        return (below, above)
    }
}
