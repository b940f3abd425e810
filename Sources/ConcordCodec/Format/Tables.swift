import ConcordCore

/// The replica and name tables that precede an object's records (docs/FORMAT.md §4.1):
/// sorted, unique, and every entry used, so the encoding of a value is unique.
struct Tables {
    var replicas: [ReplicaID] = []
    var names: [String] = []
    var replicaIndex: [ReplicaID: Int] = [:]
    var nameIndex: [ExactString: Int] = [:]

    /// Collects what `records` (and `extraReplicas`) reference and sorts it.
    init(records: [EncodedRecord], extraReplicas: some Sequence<ReplicaID>) {
        var replicaSet = Set(extraReplicas)
        var nameSet = Set<ExactString>()
        // Records one after another mostly name the same collection and fields, and their
        // entries the same replica: a name equal to the previous record's at the same place,
        // or a replica equal to the last one, is in already, and is not hashed again.
        var lastCollection: String?
        var lastReplica: ReplicaID?
        var previousNames: [String] = []
        var names: [String] = []
        for record in records {
            if lastCollection.map({ !Bytewise.equal($0, record.ref.collection) }) ?? true {
                nameSet.insert(ExactString(record.ref.collection))
                lastCollection = record.ref.collection
            }
            names.removeAll(keepingCapacity: true)
            for slot in record.slots {
                if let name = slot.key.fieldName {
                    if names.count >= previousNames.count || !Bytewise.equal(previousNames[names.count], name) {
                        nameSet.insert(ExactString(name))
                    }
                    names.append(name)
                }
                for entry in slot.entries where entry.dot.replica != lastReplica {
                    replicaSet.insert(entry.dot.replica)
                    lastReplica = entry.dot.replica
                }
            }
            swap(&names, &previousNames)
        }
        self.init(replicas: replicaSet, names: nameSet)
    }

    /// The tables of exactly these replicas and names.
    init(replicas replicaSet: Set<ReplicaID>, names nameSet: Set<ExactString>) {
        replicas = replicaSet.sorted()
        names = nameSet.sorted().map(\.value)
        for (index, replica) in replicas.enumerated() { replicaIndex[replica] = index }
        for (index, name) in names.enumerated() { nameIndex[ExactString(name)] = index }
    }

    init() {}

    static func writeReplicas(_ replicas: [ReplicaID], to writer: inout ByteWriter) {
        writer.varint(replicas.count)
        for replica in replicas {
            writer.fixed64BigEndian(replica.high)
            writer.fixed64BigEndian(replica.low)
        }
    }

    static func readReplicas(from reader: inout ByteReader) throws(ConcordError) -> [ReplicaID] {
        let count = try reader.count("replica table", minimumSize: 16, limit: FormatLimits.replicas)
        var replicas: [ReplicaID] = []
        replicas.reserveCapacity(count)
        for _ in 0..<count {
            let replica = ReplicaID(bytes: try reader.raw(16, "replica id"))!
            if let last = replicas.last, !(last < replica) {
                throw reader.error(.malformed, "replica table not strictly ascending at \(replica)")
            }
            replicas.append(replica)
        }
        return replicas
    }

    static func writeNames(_ names: [String], to writer: inout ByteWriter) {
        writer.varint(names.count)
        for name in names { writer.string(name) }
    }

    static func readNames(from reader: inout ByteReader) throws(ConcordError) -> [String] {
        let count = try reader.count("name table", minimumSize: 1, limit: FormatLimits.names)
        var names: [String] = []
        names.reserveCapacity(count)
        var previous: ArraySlice<UInt8>?
        for _ in 0..<count {
            let start = reader.offset
            let name = try reader.string("name", limit: FormatLimits.nameBytes)
            let bytes = Array(name.utf8)[...]
            if let previous, !previous.lexicographicallyPrecedes(bytes) {
                throw reader.error(.malformed, "name table not strictly ascending at \"\(name)\"", at: start)
            }
            previous = bytes
            names.append(name)
        }
        return names
    }
}

extension ByteWriter {
    mutating func fixed64BigEndian(_ value: UInt64) {
        for shift in stride(from: 56, through: 0, by: -8) {
            byte(UInt8(truncatingIfNeeded: value >> UInt64(shift)))
        }
    }
}
