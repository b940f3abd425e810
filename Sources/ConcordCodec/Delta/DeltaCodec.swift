import ConcordCore

/// The binary encoding of a ``/ConcordCore/Delta`` (docs/FORMAT.md §4.3).
///
/// Encoding is deterministic: a delta has exactly one encoding in each format version, and
/// decoding accepts only that one, so `encode(decode(bytes), version: version(of: bytes))
/// == bytes` for every accepted input. This release reads versions 1 and 2 and writes 2.
public enum DeltaCodec {
    /// The format version this release writes deltas in: 2, whose record section is denser
    /// than version 1's (docs/FORMAT.md §4.7).
    public static let currentVersion: UInt8 = 2
    /// The format versions of deltas this release reads.
    public static let readableVersions: ClosedRange<UInt8> = 1...2

    /// Encodes `delta` in format `version` (1 or 2; the current one unless asked).
    public static func encode(_ delta: Delta, version: UInt8 = currentVersion) -> [UInt8] {
        precondition(readableVersions.contains(version), "delta format version \(version) is not one this release writes")
        let records: [EncodedRecord] = delta.records.map { (ref: $0.ref, slots: $0.slots, whole: $0.whole) }
        let tables = Tables(records: records, extraReplicas: [delta.origin] + delta.dependencies.entries.keys)
        var writer = ByteWriter(capacity: 64 + delta.entryCount * 10)
        ObjectHeader.write(.delta, version: version, to: &writer)
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
        RecordsCodec.write(records, tables: tables, home: delta.origin, startHLC: delta.upTo, version: version, to: &writer)
        return writer.bytes
    }

    /// The format version an encoded object's header names; nil when `bytes` is too short
    /// to hold a header. Says nothing of whether the rest decodes.
    public static func version(of bytes: [UInt8]) -> UInt8? {
        bytes.count > ObjectHeader.magic.count ? bytes[ObjectHeader.magic.count] : nil
    }

    /// Decodes a delta from untrusted bytes.
    ///
    /// - Throws: ``/ConcordCore/ConcordError`` with code `truncated`, `malformed`,
    ///   `unsupportedVersion` or `limitExceeded`, naming the byte offset and what was wrong.
    public static func decode(_ bytes: [UInt8]) throws(ConcordError) -> Delta {
        var reader = ByteReader(bytes, what: "delta")
        let version = try ObjectHeader.read(.delta, versions: readableVersions, from: &reader)
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
            from: &reader, replicas: replicas, names: names, home: home, startHLC: upTo, version: version, allowWhole: true,
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
