/// A register built on a dot store: each write replaces every entry its replica had seen
/// and adds one of its own. Concurrent writes leave several entries.
///
/// A **reference type**, with ``LWWRegister`` and ``MVRegister``: the textbook CRDTs that a
/// scalar and a file field's slots behave as. The store and the sync engine do not use
/// them (a record's slots are dot stores, ``Record`` and ``DotStore``); the law tests check
/// them against the semilattice laws. Its invariants are in `CausalRegister+Invariants.swift`.
///
/// Read as an LWW-register (``LWWRegister``) the value is the entry with the greatest
/// stamp (rules 1 and 2); read as a multi-value register (``MVRegister``) every entry is a
/// version (rule 6). Keeping the concurrent entries, rather than only the greatest, is what
/// makes clearing a register by observed-remove (rule 5) a join: the register forgets
/// exactly what the remover saw.
public struct CausalRegister<Value: Hashable & Sendable>: Hashable, Sendable {
    /// One write: its dot and the value it wrote.
    public struct Version: Hashable, Sendable, Dotted {
        public let dot: Stamp
        public let value: Value
        public init(dot: Stamp, value: Value) {
            self.dot = dot
            self.value = value
        }
    }

    /// The surviving writes, sorted by dot.
    public private(set) var versions: [Version]
    /// Every dot this register has seen.
    public private(set) var context: CausalContext

    /// The empty register: no value, nothing seen.
    public init() {
        versions = []
        context = CausalContext()
    }

    init(versions: [Version], context: CausalContext) {
        self.versions = versions
        self.context = context
    }

    /// Writes `value` with the fresh dot `dot` and returns the delta: the new version,
    /// with a context of the dots it replaced plus its own.
    @discardableResult
    public mutating func write(_ value: Value, dot: Stamp) -> CausalRegister {
        var deltaContext = CausalContext()
        for version in versions { deltaContext.insert(version.dot) }
        deltaContext.insert(dot)
        let delta = CausalRegister(versions: [Version(dot: dot, value: value)], context: deltaContext)
        join(delta)
        return delta
    }

    /// Removes every version this replica has seen (observed-remove) and returns the delta.
    @discardableResult
    public mutating func clear() -> CausalRegister {
        var deltaContext = CausalContext()
        for version in versions { deltaContext.insert(version.dot) }
        let delta = CausalRegister(versions: [], context: deltaContext)
        join(delta)
        return delta
    }

    /// The least upper bound of two registers.
    public func joined(_ other: CausalRegister) -> CausalRegister {
        let versions = DotStore.join(
            self.versions, seenBy: { self.context.contains($0) },
            other.versions, seenBy: { other.context.contains($0) }
        )
        return CausalRegister(versions: versions, context: context.union(other.context))
    }

    public mutating func join(_ other: CausalRegister) {
        self = joined(other)
    }

    /// The version with the greatest stamp.
    public var latest: Version? { versions.last }

}

/// A last-writer-wins register of scalar values (docs/ARCHITECTURE.md §2, rules 1 and 2).
public typealias LWWRegister = CausalRegister<ScalarValue>

/// A multi-value register of file references (docs/ARCHITECTURE.md §2, rule 6).
public typealias MVRegister = CausalRegister<FileRef>

extension CausalRegister where Value == ScalarValue {
    /// The value of the greatest stamp, on every replica alike.
    public var value: ScalarValue? { latest?.value }
}

extension CausalRegister where Value == FileRef {
    /// The value read by apps that ignore forks: the version with the greatest stamp.
    public var value: FileRef? { latest?.value }

    /// Whether concurrent writes left versions of different content: a fork.
    public var isForked: Bool {
        guard let first = versions.first?.value.hash else { return false }
        return versions.contains { $0.value.hash != first }
    }
}
