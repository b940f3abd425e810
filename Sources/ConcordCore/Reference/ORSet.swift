/// An add-wins observed-remove set (docs/ARCHITECTURE.md §2, rule 3).
///
/// A **reference type**: the textbook CRDT that a set field's slots behave as. The store
/// and the sync engine do not use it (a record's slots are dot stores, ``Record`` and
/// ``DotStore``); the law tests check it against the semilattice laws, and the store's set
/// fields against it. Its invariants are in `ORSet+Invariants.swift`.
///
/// Each add is a dot; a remove forgets exactly the adds of that element its replica had
/// seen. An add the remover had not seen survives, so a concurrent add wins.
public struct ORSet<Element: Hashable & Sendable>: Hashable, Sendable {
    /// Per element, the dots of its surviving adds, sorted.
    public private(set) var adds: [Element: [Stamp]]
    /// Every dot this set has seen.
    public private(set) var context: CausalContext

    public init() {
        adds = [:]
        context = CausalContext()
    }

    init(adds: [Element: [Stamp]], context: CausalContext) {
        self.adds = adds
        self.context = context
    }

    /// The elements with a surviving add.
    public var elements: Set<Element> { Set(adds.keys) }

    public func contains(_ element: Element) -> Bool { adds[element] != nil }

    /// Adds `element` with the fresh dot `dot`, replacing the adds of it this replica saw.
    /// Returns the delta.
    @discardableResult
    public mutating func add(_ element: Element, dot: Stamp) -> ORSet {
        var deltaContext = CausalContext()
        for old in adds[element] ?? [] { deltaContext.insert(old) }
        deltaContext.insert(dot)
        let delta = ORSet(adds: [element: [dot]], context: deltaContext)
        join(delta)
        return delta
    }

    /// Removes the adds of `element` this replica has seen. Returns the delta.
    @discardableResult
    public mutating func remove(_ element: Element) -> ORSet {
        var deltaContext = CausalContext()
        for old in adds[element] ?? [] { deltaContext.insert(old) }
        let delta = ORSet(adds: [:], context: deltaContext)
        join(delta)
        return delta
    }

    /// The least upper bound of two sets.
    public func joined(_ other: ORSet) -> ORSet {
        var result: [Element: [Stamp]] = [:]
        for element in Set(adds.keys).union(other.adds.keys) {
            let dots = DotStore.join(
                (adds[element] ?? []).map(Add.init), seenBy: { self.context.contains($0) },
                (other.adds[element] ?? []).map(Add.init), seenBy: { other.context.contains($0) }
            )
            if !dots.isEmpty { result[element] = dots.map(\.dot) }
        }
        return ORSet(adds: result, context: context.union(other.context))
    }

    public mutating func join(_ other: ORSet) {
        self = joined(other)
    }

    private struct Add: Dotted {
        let dot: Stamp
    }

}
