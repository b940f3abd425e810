import ConcordCore

/// A record as encoded: `whole` only in deltas (a record shipped whole, docs/FORMAT.md §4.2).
typealias EncodedRecord = (ref: RecordRef, slots: [(key: SlotKey, entries: [Entry])], whole: Bool)

/// Encodes and decodes the record section shared by deltas and snapshots
/// (docs/FORMAT.md §4.2).
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
        _ records: [EncodedRecord], tables: Tables, home: ReplicaID?, startHLC: UInt64, to writer: inout ByteWriter
    ) {
        writer.varint(records.count)
        var recordWriter = Writer(tables: tables, home: home, startHLC: startHLC)
        for record in records { recordWriter.write(record, to: &writer) }
    }

    /// Writes the records of a record section one at a time, after its count (a snapshot
    /// written as the store reads it): each id is encoded against the one before it and
    /// each hlc against the last.
    struct Writer {
        let tables: Tables
        let home: ReplicaID?
        private var previousID: [UInt8] = []
        private var previousHLC: UInt64

        init(tables: Tables, home: ReplicaID?, startHLC: UInt64) {
            self.tables = tables
            self.home = home
            previousHLC = startHLC
        }

        mutating func write(_ record: EncodedRecord, to writer: inout ByteWriter) {
            writer.varint(tables.nameIndex[ExactString(record.ref.collection)]!)
            let id = Array(record.ref.id.utf8)
            let shared = zip(previousID, id).prefix { $0 == $1 }.count
            writer.varint(shared)
            writer.lengthPrefixed(id[shared...])
            previousID = id
            if record.whole { writer.varint(0) }
            writer.varint(record.slots.count)
            for slot in record.slots {
                switch slot.key {
                case .liveness: writer.varint(liveness)
                case .tombstones: writer.varint(tombstones)
                case let .field(name): writer.varint(UInt64(tables.nameIndex[ExactString(name)]!) << 2 | field)
                case let .element(name, value):
                    writer.varint(UInt64(tables.nameIndex[ExactString(name)]!) << 2 | element)
                    writeScalar(value, to: &writer)
                }
                let allHome = slot.entries.allSatisfy { $0.dot.replica == home }
                writer.varint(UInt64(slot.entries.count) << 1 | (allHome ? 1 : 0))
                for entry in slot.entries {
                    writer.signed(Int64(bitPattern: entry.dot.hlc &- previousHLC))
                    previousHLC = entry.dot.hlc
                    if !allHome { writer.varint(tables.replicaIndex[entry.dot.replica]!) }
                    switch entry.payload {
                    case .marker: break
                    case let .scalar(value): writeScalar(value, to: &writer)
                    case let .file(file):
                        writer.byte(tagFile)
                        writer.raw(file.hash.bytes)
                        writer.varint(file.size)
                        if let type = file.mediaType {
                            writer.byte(1)
                            writer.string(type)
                        } else {
                            writer.byte(0)
                        }
                    }
                }
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
        allowWhole: Bool, usedReplicas: inout [Bool], usedNames: inout [Bool]
    ) throws(ConcordError) -> [EncodedRecord] {
        var records = try Reader(from: &reader, replicas: replicas, names: names, home: home, startHLC: startHLC, allowWhole: allowWhole)
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
        let allowWhole: Bool
        /// Records not read yet.
        private(set) var remaining: Int
        private var previousID: [UInt8] = []
        private var previousRef: RecordRef?
        private var previousHLC: UInt64

        /// Reads the record count.
        init(from reader: inout ByteReader, replicas: [ReplicaID], names: [String], home: Int?, startHLC: UInt64, allowWhole: Bool) throws(ConcordError) {
            // A record takes at least 4 bytes: collection, prefix, suffix length, slot count.
            remaining = try reader.count("record list", minimumSize: 4, limit: FormatLimits.records)
            self.replicas = replicas
            self.names = names
            self.home = home
            self.allowWhole = allowWhole
            previousHLC = startHLC
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

            var slotCount = try reader.count("slot list of \(ref)", minimumSize: 2, limit: FormatLimits.slotsPerRecord)
            var whole = false
            if slotCount == 0 {
                guard allowWhole else { throw reader.error(.malformed, "record \(ref) has no slot") }
                whole = true
                slotCount = try reader.count("slot list of \(ref)", minimumSize: 2, limit: FormatLimits.slotsPerRecord)
            }
            var slots: [(key: SlotKey, entries: [Entry])] = []
            slots.reserveCapacity(slotCount)
            for _ in 0..<slotCount {
                let rawKey = try reader.varint("slot key")
                let kind = rawKey & 3
                let nameIndex = rawKey >> 2
                let key: SlotKey
                switch kind {
                case liveness, tombstones:
                    guard nameIndex == 0 else { throw reader.error(.malformed, "record slot key \(rawKey) carries a name") }
                    key = kind == liveness ? .liveness : .tombstones
                default:
                    guard nameIndex < UInt64(names.count) else {
                        throw reader.error(.malformed, "name index \(nameIndex) outside the table of \(names.count)")
                    }
                    usedNames[Int(nameIndex)] = true
                    let name = names[Int(nameIndex)]
                    if kind == field {
                        key = .field(name)
                    } else {
                        let tag = try reader.byte("element tag")
                        key = .element(name, try readScalar(&reader, tag: tag))
                    }
                }
                if let last = slots.last, !SlotKey.canonicalOrder(last.key, key) {
                    throw reader.error(.malformed, "slots of \(ref) not in strictly ascending order at \(key)")
                }
                let header = try reader.varint("entry count")
                let allHome = header & 1 == 1
                guard header >> 1 <= UInt64(FormatLimits.entriesPerSlot) else {
                    throw reader.error(.limitExceeded, "slot \(key) of \(ref) has \(header >> 1) entries, over \(FormatLimits.entriesPerSlot)")
                }
                let entryCount = Int(header >> 1)
                guard entryCount <= reader.remaining else {
                    throw reader.error(.truncated, "slot \(key) of \(ref) claims \(entryCount) entries, more than the input holds")
                }
                if allHome && entryCount > 0 && home == nil {
                    throw reader.error(.malformed, "slot \(key) of \(ref) refers to a home replica the object lacks")
                }
                var entries: [Entry] = []
                entries.reserveCapacity(entryCount)
                var sawForeign = false
                for _ in 0..<entryCount {
                    let hlc = previousHLC &+ UInt64(bitPattern: try reader.signed("entry stamp"))
                    previousHLC = hlc
                    let replicaIndex: Int
                    if allHome {
                        replicaIndex = home!
                    } else {
                        replicaIndex = try index(&reader, "entry replica", in: replicas.count)
                        if replicaIndex != home { sawForeign = true }
                    }
                    usedReplicas[replicaIndex] = true
                    let dot = Stamp(hlc: hlc, replica: replicas[replicaIndex])
                    if let last = entries.last, !(last.dot < dot) {
                        throw reader.error(.malformed, "entries of \(ref) \(key) not in strictly ascending stamp order")
                    }
                    let payload: Payload
                    switch key {
                    case .field:
                        let tag = try reader.byte("value tag")
                        if tag == tagFile {
                            payload = .file(try readFile(&reader))
                        } else {
                            payload = .scalar(try readScalar(&reader, tag: tag))
                        }
                    default:
                        payload = .marker
                    }
                    entries.append(Entry(dot: dot, payload: payload))
                }
                if !allHome && !sawForeign && entryCount > 0 {
                    throw reader.error(.malformed, "slot \(key) of \(ref) names replicas where the home flag should be set")
                }
                if !allHome && entryCount == 0 {
                    throw reader.error(.malformed, "empty slot \(key) of \(ref) must set the home flag")
                }
                slots.append((key: key, entries: entries))
            }
            return (ref: ref, slots: slots, whole: whole)
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
