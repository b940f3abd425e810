import ConcordCodec
import ConcordCore

/// Bytes written one by one from docs/FORMAT.md's rules, for tests that hold the codec to
/// the spec: the primitives (§2), a delta's header and tables (§4.3), and record ids (§4.2).
struct HandWriter {
    private(set) var bytes: [UInt8] = []
    private var previousID: [UInt8] = []

    mutating func varint(_ value: UInt64) {
        var value = value
        while value >= 0x80 { bytes.append(UInt8(value & 0x7f) | 0x80); value >>= 7 }
        bytes.append(UInt8(value))
    }

    mutating func signed(_ value: Int64) { varint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }

    mutating func raw(_ more: some Sequence<UInt8>) { bytes += more }

    /// A replica id: 16 bytes, big-endian.
    mutating func id(_ replica: ReplicaID) {
        for word in [replica.high, replica.low] {
            for shift in stride(from: 56, through: 0, by: -8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
        }
    }

    /// A delta's header through its record count: format `version`, seq 1 of `origin`,
    /// `upTo`, the replica table (`origin`, `other`: ascending), `other` as the one
    /// dependency at `dependency`, and the name table `names` (ascending).
    mutating func deltaHeader(
        version: UInt8, origin: ReplicaID, other: ReplicaID, upTo: UInt64, dependency: UInt64, names: [String], records: Int
    ) {
        raw(ObjectHeader.magic + [version, ObjectHeader.Kind.delta.rawValue])
        id(origin)
        varint(1)  // seq
        varint(upTo)
        varint(2); id(origin); id(other)  // replicas
        varint(1); varint(1); varint(dependency)  // dependencies
        varint(UInt64(names.count))
        for name in names { varint(UInt64(name.utf8.count)); raw(name.utf8) }
        varint(UInt64(records))
    }

    /// A record of the collection at name index 0: its id, as the longest prefix shared with
    /// the previous record's id and the rest.
    mutating func recordID(_ id: String) {
        let id = Array(id.utf8)
        let shared = zip(previousID, id).prefix { $0 == $1 }.count
        previousID = id
        varint(0); varint(UInt64(shared)); varint(UInt64(id.count - shared)); raw(id[shared...])
    }
}
