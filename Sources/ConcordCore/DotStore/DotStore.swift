/// The join of dot stores — the one merge rule every Concord CRDT is built from.
///
/// A causal CRDT is a pair (entries, context): the entries alive in a state, each named by
/// its dot, and the set of dots the state has seen. Joining two of them keeps an entry if
/// both sides have it, or if one side has it and the other has not seen it (docs/ARCHITECTURE.md §2;
/// Almeida, Shoker and Baquero, "Delta state replicated data types", §6). An entry one side
/// has seen but no longer holds was removed there, and stays removed.
public enum DotStore {
    /// Joins two entry lists, each sorted by dot, with the contexts that scope them.
    /// The result is sorted by dot.
    @inlinable
    public static func join<E: Dotted>(
        _ left: [E], seenBy leftContext: (Stamp) -> Bool,
        _ right: [E], seenBy rightContext: (Stamp) -> Bool
    ) -> [E] {
        // One side empty: keep the other side's unseen entries, sharing its storage when
        // nothing is dropped (the common case of applying a new write).
        if left.isEmpty { return right.allSatisfy { !leftContext($0.dot) } ? right : right.filter { !leftContext($0.dot) } }
        if right.isEmpty { return left.allSatisfy { !rightContext($0.dot) } ? left : left.filter { !rightContext($0.dot) } }
        var result: [E] = []
        result.reserveCapacity(max(left.count, right.count))
        var i = 0
        var j = 0
        while i < left.count || j < right.count {
            if j == right.count || (i < left.count && left[i].dot < right[j].dot) {
                if !rightContext(left[i].dot) { result.append(left[i]) }
                i += 1
            } else if i == left.count || right[j].dot < left[i].dot {
                if !leftContext(right[j].dot) { result.append(right[j]) }
                j += 1
            } else {
                result.append(left[i])
                i += 1
                j += 1
            }
        }
        return result
    }

    /// Whether `entries` is sorted by dot with no dot twice.
    public static func isWellOrdered<E: Dotted>(_ entries: [E]) -> Bool {
        var index = 1
        while index < entries.count {
            guard entries[index - 1].dot < entries[index].dot else { return false }
            index += 1
        }
        return true
    }
}

/// Anything named by a dot: the entries of every dot store.
public protocol Dotted {
    var dot: Stamp { get }
}

extension Entry: Dotted {}
