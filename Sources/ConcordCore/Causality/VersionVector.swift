/// A map `replica → highest hlc seen` (docs/ARCHITECTURE.md §2, "Causality").
///
/// Deltas from one origin are applied in order and after their dependencies, so a version
/// vector exactly summarises which writes a replica has seen: every dot `(h, r)` with
/// `h <= self[r]`. Entries equal to zero are never stored, so equal vectors compare equal.
public struct VersionVector: Hashable, Sendable, CustomStringConvertible {
    /// Non-zero entries.
    public private(set) var entries: [ReplicaID: UInt64]

    public init() {
        entries = [:]
    }

    public init(_ entries: [ReplicaID: UInt64]) {
        self.entries = entries.filter { $0.value != 0 }
    }

    /// The highest hlc seen from `replica`, or 0.
    public subscript(replica: ReplicaID) -> UInt64 {
        get { entries[replica] ?? 0 }
        set { entries[replica] = newValue == 0 ? nil : newValue }
    }

    /// Whether this vector has seen everything `other` has.
    public func dominates(_ other: VersionVector) -> Bool {
        other.entries.allSatisfy { self[$0.key] >= $0.value }
    }

    /// The pointwise maximum.
    public func merging(_ other: VersionVector) -> VersionVector {
        var result = self
        result.merge(other)
        return result
    }

    /// Raises every entry to at least `other`'s.
    public mutating func merge(_ other: VersionVector) {
        for (replica, hlc) in other.entries where hlc > self[replica] {
            entries[replica] = hlc
        }
    }

    /// The pointwise minimum: what both have seen.
    public func meeting(_ other: VersionVector) -> VersionVector {
        var result = VersionVector()
        for (replica, hlc) in entries { result[replica] = min(hlc, other[replica]) }
        return result
    }

    /// Entries sorted by replica: the canonical order for encoding and printing.
    public var sorted: [(replica: ReplicaID, hlc: UInt64)] {
        entries.sorted { $0.key < $1.key }.map { (replica: $0.key, hlc: $0.value) }
    }

    /// The greatest hlc of any entry, or 0.
    public var maxHLC: UInt64 { entries.values.max() ?? 0 }

    public var description: String {
        "[" + sorted.map { "\($0.replica): \(HLC.describe($0.hlc))" }.joined(separator: ", ") + "]"
    }
}
