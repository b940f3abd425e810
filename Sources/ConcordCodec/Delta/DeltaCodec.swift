import ConcordCore

/// The binary encoding of a ``ConcordCore/Delta`` (docs/FORMAT.md §4.3).
///
/// Encoding is deterministic: a delta has exactly one encoding, and decoding accepts only
/// that one, so `encode(decode(bytes)) == bytes` for every accepted input.
public enum DeltaCodec {
    /// Encodes `delta`.
    public static func encode(_ delta: Delta) -> [UInt8] {
        let records: [EncodedRecord] = delta.records.map { (ref: $0.ref, slots: $0.slots, whole: $0.whole) }
        let tables = Tables(records: records, extraReplicas: [delta.origin] + delta.dependencies.entries.keys)
        var writer = ByteWriter(capacity: 64 + delta.entryCount * 10)
        ObjectHeader.write(.delta, to: &writer)
        writer.fixed64BigEndian(delta.origin.high)
        writer.fixed64BigEndian(delta.origin.low)
        writer.varint(delta.seq)
        writer.varint(delta.upTo)
        Tables.writeReplicas(tables.replicas, to: &writer)
        let dependencies = delta.dependencies.sorted
        writer.varint(dependencies.count)
        for dependency in dependencies {
            writer.varint(tables.replicaIndex[dependency.replica]!)
            writer.varint(dependency.hlc)
        }
        Tables.writeNames(tables.names, to: &writer)
        RecordsCodec.write(records, tables: tables, home: delta.origin, startHLC: delta.upTo, to: &writer)
        return writer.bytes
    }

    /// Decodes a delta from untrusted bytes.
    ///
    /// - Throws: ``ConcordCore/ConcordError`` with code `truncated`, `malformed`,
    ///   `unsupportedVersion` or `limitExceeded`, naming the byte offset and what was wrong.
    public static func decode(_ bytes: [UInt8]) throws(ConcordError) -> Delta {
        var reader = ByteReader(bytes, what: "delta")
        try ObjectHeader.read(.delta, from: &reader)
        let origin = ReplicaID(bytes: try reader.raw(16, "origin"))!
        let seq = try reader.varint("seq")
        let upTo = try reader.varint("upTo")
        let replicas = try Tables.readReplicas(from: &reader)
        var usedReplicas = [Bool](repeating: false, count: replicas.count)
        guard let home = replicas.firstIndex(of: origin) else {
            throw reader.error(.malformed, "replica table lacks the origin \(origin)")
        }
        usedReplicas[home] = true
        let dependencyCount = try reader.count("dependency list", minimumSize: 2, limit: replicas.count)
        var dependencies = VersionVector()
        var previousIndex = -1
        for _ in 0..<dependencyCount {
            let index = try RecordsCodec.index(&reader, "dependency replica", in: replicas.count)
            guard index > previousIndex else { throw reader.error(.malformed, "dependencies not in ascending replica order") }
            previousIndex = index
            let hlc = try reader.varint("dependency hlc")
            guard hlc > 0 else { throw reader.error(.malformed, "dependency of \(replicas[index]) is zero; zero entries are omitted") }
            dependencies[replicas[index]] = hlc
            usedReplicas[index] = true
        }
        let names = try Tables.readNames(from: &reader)
        var usedNames = [Bool](repeating: false, count: names.count)
        let records = try RecordsCodec.read(
            from: &reader, replicas: replicas, names: names, home: home, startHLC: upTo, allowWhole: true,
            usedReplicas: &usedReplicas, usedNames: &usedNames)
        guard reader.isAtEnd else { throw reader.error(.malformed, "\(reader.remaining) bytes after the end of the delta") }
        try RecordsCodec.checkAllUsed(usedReplicas, "replica table", reader)
        try RecordsCodec.checkAllUsed(usedNames, "name table", reader)
        do {
            return try Delta(
                decodedOrigin: origin, seq: seq, dependencies: dependencies, upTo: upTo,
                records: records.map { Delta.RecordChange(ref: $0.ref, slots: $0.slots, whole: $0.whole) })
        } catch {
            throw ConcordError(error.code, "delta: \(error.message)")
        }
    }
}
