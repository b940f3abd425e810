import ConcordCore

/// A record as encoded: `whole` only in deltas (a record shipped whole, docs/FORMAT.md §4.2).
typealias EncodedRecord = (ref: RecordRef, slots: [(key: SlotKey, entries: [Entry])], whole: Bool)

/// Encodes and decodes the record section shared by deltas and snapshots
/// (docs/FORMAT.md §4.2; a delta in version 2: §4.7).
///
/// This file holds what both format versions share — the entry points, each record's
/// collection and id, scalars, files, table indexes — and hands each record's slots to its
/// version: version 1's slot section (the slot encoding both versions use) is in
/// `RecordsCodec+V1.swift`, version 2's common slots, per-replica stamps and strings by
/// reference in `RecordsCodec+V2.swift`.
enum RecordsCodec {
    // Slot kinds, the low two bits of a slot key.
    static let liveness: UInt64 = 0
    static let tombstones: UInt64 = 1
    static let field: UInt64 = 2
    static let element: UInt64 = 3

    // Value tags.
    static let tagNull: UInt8 = 0
    static let tagFalse: UInt8 = 1
    static let tagTrue: UInt8 = 2
    static let tagInt: UInt8 = 3
    static let tagDouble: UInt8 = 4
    static let tagString: UInt8 = 5
    static let tagBytes: UInt8 = 6
    static let tagFile: UInt8 = 7

    static func write(
        _ records: [EncodedRecord], tables: Tables, home: ReplicaID?, startHLC: UInt64, version: UInt8 = 1,
        to writer: inout ByteWriter
    ) {
        writer.varint(records.count)
        var recordWriter = Writer(tables: tables, home: home, startHLC: startHLC, version: version)
        for record in records { recordWriter.write(record, to: &writer) }
    }

    /// Writes the records of a record section one at a time, after its count (a snapshot
    /// written as the store reads it): each id is encoded against the one before it and
    /// each hlc against the last (version 1) or the last of its replica (version 2).
    struct Writer {
        let tables: Tables
        let home: ReplicaID?
        let version: UInt8
        private var previousID: [UInt8] = []
        var previousHLC: UInt64
        // Version 2: the last hlc of each replica (by table index), the strings written so
        // far (by first use), and the previous record's list of common slots.
        let homeIndex: Int
        var previousHLCs: [UInt64]
        var strings: [ExactString: Int] = [:]
        var previousCommon: [UInt64] = []
        var isCommon: [Bool] = []
        // Buffers reused from record to record: the common slots of the record being written
        // (swapped with `previousCommon` after it), and the names of its and of the previous
        // record's common slots.
        var common: [UInt64] = []
        var commonNames: [String] = []
        var previousCommonNames: [String] = []

        init(tables: Tables, home: ReplicaID?, startHLC: UInt64, version: UInt8 = 1) {
            self.tables = tables
            self.home = home
            self.version = version
            previousHLC = startHLC
            homeIndex = home.flatMap { tables.replicaIndex[$0] } ?? -1
            previousHLCs = version >= 2 ? Array(repeating: startHLC, count: tables.replicas.count) : []
        }

        mutating func write(_ record: EncodedRecord, to writer: inout ByteWriter) {
            writer.varint(tables.nameIndex[ExactString(record.ref.collection)]!)
            let id = Array(record.ref.id.utf8)
            let shared = zip(previousID, id).prefix { $0 == $1 }.count
            writer.varint(shared)
            writer.lengthPrefixed(id[shared...])
            previousID = id
            if version >= 2 {
                writeSlotsV2(record, to: &writer)
            } else {
                writeSlotsV1(record, to: &writer)
            }
        }
    }

    @inline(__always)
    static func writeScalar(_ value: ScalarValue, to writer: inout ByteWriter) {
        switch value {
        case .null: writer.byte(tagNull)
        case let .bool(flag): writer.byte(flag ? tagTrue : tagFalse)
        case let .int(number):
            writer.byte(tagInt)
            writer.signed(number)
        case let .double(number):
            writer.byte(tagDouble)
            writer.fixed64(number.bitPattern)
        case let .string(text):
            writer.byte(tagString)
            writer.string(text)
        case let .bytes(data):
            writer.byte(tagBytes)
            writer.lengthPrefixed(data)
        }
    }

    /// Reads the record section. `usedReplicas` and `usedNames` are marked for the
    /// every-entry-used check; the caller checks dots against its own context rules.
    static func read(
        from reader: inout ByteReader, replicas: [ReplicaID], names: [String], home: Int?, startHLC: UInt64,
        version: UInt8 = 1, allowWhole: Bool, usedReplicas: inout [Bool], usedNames: inout [Bool]
    ) throws(ConcordError) -> [EncodedRecord] {
        var records = try Reader(
            from: &reader, replicas: replicas, names: names, home: home, startHLC: startHLC, version: version, allowWhole: allowWhole)
        var decoded: [EncodedRecord] = []
        decoded.reserveCapacity(records.remaining)
        while let record = try records.next(from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames) { decoded.append(record) }
        return decoded
    }

    /// Reads the record section one record at a time (a snapshot joined as it is read).
    struct Reader {
        let replicas: [ReplicaID]
        let names: [String]
        let home: Int?
        let version: UInt8
        let allowWhole: Bool
        /// Records not read yet.
        private(set) var remaining: Int
        private var previousID: [UInt8] = []
        private var previousRef: RecordRef?
        var previousHLC: UInt64
        // Version 2: the last hlc of each replica, the strings read so far (by first use,
        // and as a set to refuse a second spelling-out), the previous record's common slots.
        var previousHLCs: [UInt64]
        var strings: [String] = []
        var stringSet: Set<ExactString> = []
        var previousCommon: [UInt64] = []
        var commonValues: [(hlc: UInt64, value: ScalarValue)] = []

        /// Reads the record count.
        init(
            from reader: inout ByteReader, replicas: [ReplicaID], names: [String], home: Int?, startHLC: UInt64,
            version: UInt8 = 1, allowWhole: Bool
        ) throws(ConcordError) {
            // A record takes at least 4 bytes: collection, prefix, suffix length, slot count.
            remaining = try reader.count("record list", minimumSize: 4, limit: FormatLimits.records)
            self.replicas = replicas
            self.names = names
            self.home = home
            self.version = version
            self.allowWhole = allowWhole
            previousHLC = startHLC
            previousHLCs = version >= 2 ? Array(repeating: startHLC, count: replicas.count) : []
        }

        /// The next record; nil after the last.
        mutating func next(from reader: inout ByteReader, usedReplicas: inout [Bool], usedNames: inout [Bool]) throws(ConcordError) -> EncodedRecord? {
            guard remaining > 0 else { return nil }
            remaining -= 1
            let collectionIndex = try index(&reader, "collection name", in: names.count)
            usedNames[collectionIndex] = true
            let shared = try reader.varint("id prefix length")
            guard shared <= UInt64(previousID.count) else {
                throw reader.error(.malformed, "id shares \(shared) bytes with a previous id of \(previousID.count)")
            }
            let suffix = try reader.lengthPrefixed("record id", limit: FormatLimits.idBytes)
            if Int(shared) < previousID.count, let first = suffix.first, first == previousID[Int(shared)] {
                throw reader.error(.malformed, "id prefix length is not the longest shared prefix")
            }
            var idBytes = Array(previousID[..<Int(shared)])
            idBytes.append(contentsOf: suffix)
            guard idBytes.count <= FormatLimits.idBytes else {
                throw reader.error(.limitExceeded, "record id of \(idBytes.count) bytes exceeds \(FormatLimits.idBytes)")
            }
            guard let id = ByteReader.utf8(idBytes[...]) else { throw reader.error(.malformed, "record id is not valid UTF-8") }
            let ref = RecordRef(collection: names[collectionIndex], id: id)
            if let previousRef, !(previousRef < ref) {
                throw reader.error(.malformed, "records not in strictly ascending order at \(ref)")
            }
            previousRef = ref
            previousID = idBytes
            if version >= 2 { return try nextSlotsV2(of: ref, from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames) }
            return try nextSlotsV1(of: ref, from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames)
        }
    }

    @inline(__always)
    static func index(_ reader: inout ByteReader, _ field: String, in count: Int) throws(ConcordError) -> Int {
        let value = try reader.varint(field)
        guard value < UInt64(count) else {
            throw reader.error(.malformed, "\(field) index \(value) outside the table of \(count)")
        }
        return Int(value)
    }

    static func readScalar(_ reader: inout ByteReader, tag: UInt8) throws(ConcordError) -> ScalarValue {
        switch tag {
        case tagNull: return .null
        case tagFalse: return .bool(false)
        case tagTrue: return .bool(true)
        case tagInt: return .int(try reader.signed("int value"))
        case tagDouble: return .double(Double(bitPattern: try reader.fixed64("double value")))
        case tagString: return .string(try reader.string("string value", limit: FormatLimits.valueBytes))
        case tagBytes: return .bytes(Array(try reader.lengthPrefixed("bytes value", limit: FormatLimits.valueBytes)))
        default: throw reader.error(.malformed, "unknown value tag \(tag)")
        }
    }

    static func readFile(_ reader: inout ByteReader) throws(ConcordError) -> FileRef {
        let hash = ContentHash(bytes: try reader.raw(32, "content hash"))!
        let size = try reader.varint("file size")
        let flag = try reader.byte("media type flag")
        switch flag {
        case 0: return FileRef(hash: hash, size: size)
        case 1: return FileRef(hash: hash, size: size, mediaType: try reader.string("media type", limit: FormatLimits.mediaTypeBytes))
        default: throw reader.error(.malformed, "media type flag \(flag) is neither 0 nor 1")
        }
    }

    /// Throws unless every table entry was used: unused entries would make two encodings
    /// of one value possible.
    static func checkAllUsed(_ used: [Bool], _ table: String, _ reader: ByteReader) throws(ConcordError) {
        if let unused = used.firstIndex(of: false) {
            throw reader.error(.malformed, "\(table) entry \(unused) is never used")
        }
    }
}
