/// A set of dots (stamps), as per-replica sets of disjoint closed hlc ranges.
///
/// A causal context says which writes a state has *seen*: an entry whose dot is in the
/// other side's context but not in its store was removed there (docs/ARCHITECTURE.md §2). A replica's
/// full state has a context of the form `[0 ... vv[r]]` for each replica — a version vector;
/// a delta's context holds its origin's new range `(deps[origin], upTo]`, and its touched
/// slots are scoped by the dependency vector. Ranges are kept normalized (sorted, disjoint,
/// non-adjacent), so equal sets of dots have equal representations.
public struct CausalContext: Hashable, Sendable, CustomStringConvertible {
    /// Per replica, sorted disjoint non-adjacent ranges of hlc values.
    public private(set) var ranges: [ReplicaID: [ClosedRange<UInt64>]]

    public init() {
        ranges = [:]
    }

    /// The context `{ (h, r) | h <= vector[r] }` of a version vector.
    public init(_ vector: VersionVector) {
        var ranges: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        ranges.reserveCapacity(vector.entries.count)
        for (replica, hlc) in vector.entries { ranges[replica] = [0...hlc] }
        self.ranges = ranges
    }

    /// Builds a context from arbitrary ranges, normalizing them.
    public init(ranges: [ReplicaID: [ClosedRange<UInt64>]]) {
        self.ranges = [:]
        for (replica, list) in ranges {
            for range in list { insert(range, for: replica) }
        }
    }

    public var isEmpty: Bool { ranges.isEmpty }

    /// Whether the context holds the dot `stamp`.
    @inlinable
    public func contains(_ stamp: Stamp) -> Bool {
        guard let list = ranges[stamp.replica] else { return false }
        return Self.contains(list, stamp.hlc)
    }

    @usableFromInline
    static func contains(_ list: [ClosedRange<UInt64>], _ hlc: UInt64) -> Bool {
        if list.count == 1 { return list[0].contains(hlc) }
        var low = 0
        var high = list.count
        while low < high {
            let mid = (low + high) / 2
            if list[mid].upperBound < hlc { low = mid + 1 } else { high = mid }
        }
        return low < list.count && list[low].contains(hlc)
    }

    /// Adds every dot `(h, replica)` with `h` in `range`.
    public mutating func insert(_ range: ClosedRange<UInt64>, for replica: ReplicaID) {
        guard var list = ranges[replica] else {
            ranges[replica] = [range]
            return
        }
        // Fast path: extending the last range, as applying deltas in order does.
        if let last = list.last, range.lowerBound >= last.lowerBound {
            if last.upperBound == .max || range.lowerBound <= last.upperBound + 1 {
                list[list.count - 1] = last.lowerBound...max(last.upperBound, range.upperBound)
            } else {
                list.append(range)
            }
            ranges[replica] = list
            return
        }
        var merged: [ClosedRange<UInt64>] = []
        merged.reserveCapacity(list.count + 1)
        var pending = range
        var placed = false
        for existing in list {
            if placed {
                merged.append(existing)
            } else if existing.upperBound != .max && existing.upperBound + 1 < pending.lowerBound {
                merged.append(existing)
            } else if pending.upperBound != .max && pending.upperBound + 1 < existing.lowerBound {
                merged.append(pending)
                merged.append(existing)
                placed = true
            } else {
                pending = min(existing.lowerBound, pending.lowerBound)...max(existing.upperBound, pending.upperBound)
            }
        }
        if !placed { merged.append(pending) }
        ranges[replica] = merged
    }

    /// Adds one dot.
    public mutating func insert(_ stamp: Stamp) {
        insert(stamp.hlc...stamp.hlc, for: stamp.replica)
    }

    /// The union of two sets of dots.
    public func union(_ other: CausalContext) -> CausalContext {
        var result = self
        result.formUnion(other)
        return result
    }

    public mutating func formUnion(_ other: CausalContext) {
        for (replica, list) in other.ranges {
            for range in list { insert(range, for: replica) }
        }
    }

    /// The dots of `self` that are not in `other`.
    public func subtracting(_ other: CausalContext) -> CausalContext {
        var result = CausalContext()
        for (replica, list) in ranges {
            guard let remove = other.ranges[replica] else {
                result.ranges[replica] = list
                continue
            }
            var kept: [ClosedRange<UInt64>] = []
            for range in list {
                var pieces = [range]
                for cut in remove {
                    pieces = pieces.flatMap { Self.cut($0, removing: cut) }
                }
                kept.append(contentsOf: pieces)
            }
            if !kept.isEmpty { result.ranges[replica] = kept }
        }
        return result
    }

    private static func cut(_ range: ClosedRange<UInt64>, removing cut: ClosedRange<UInt64>) -> [ClosedRange<UInt64>] {
        guard cut.overlaps(range) else { return [range] }
        var pieces: [ClosedRange<UInt64>] = []
        if range.lowerBound < cut.lowerBound { pieces.append(range.lowerBound...(cut.lowerBound - 1)) }
        if range.upperBound > cut.upperBound { pieces.append((cut.upperBound + 1)...range.upperBound) }
        return pieces
    }

    /// Whether every dot of `self` is in `other`.
    public func isSubset(of other: CausalContext) -> Bool {
        subtracting(other).isEmpty
    }

    /// The version vector this context equals, if it has the form `[0 ... h]` per replica.
    public var versionVector: VersionVector? {
        var entries: [ReplicaID: UInt64] = [:]
        for (replica, list) in ranges {
            guard list.count == 1, list[0].lowerBound == 0 else { return nil }
            entries[replica] = list[0].upperBound
        }
        return VersionVector(entries)
    }

    /// The greatest hlc in the context for `replica`, or 0.
    public func maxHLC(for replica: ReplicaID) -> UInt64 {
        ranges[replica]?.last?.upperBound ?? 0
    }

    /// The largest version vector contained in this context: per replica, the top of a
    /// range starting at 0.
    public var coveredVector: VersionVector {
        var vector = VersionVector()
        for (replica, list) in ranges where list[0].lowerBound == 0 {
            vector[replica] = list[0].upperBound
        }
        return vector
    }

    /// Replicas sorted: the canonical order for encoding and printing.
    public var sortedRanges: [(replica: ReplicaID, ranges: [ClosedRange<UInt64>])] {
        ranges.sorted { $0.key < $1.key }.map { (replica: $0.key, ranges: $0.value) }
    }

    public var description: String {
        "{" + sortedRanges.map { entry in
            "\(entry.replica): " + entry.ranges.map { "\($0.lowerBound)...\($0.upperBound)" }.joined(separator: ",")
        }.joined(separator: "; ") + "}"
    }
}
