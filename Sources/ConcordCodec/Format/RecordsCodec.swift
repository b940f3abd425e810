import ConcordCore

/// A record as encoded: `whole` only in deltas (a record shipped whole, docs/FORMAT.md §4.2).
typealias EncodedRecord = (ref: RecordRef, slots: [(key: SlotKey, entries: [Entry])], whole: Bool)

/// Encodes and decodes the record section shared by deltas and snapshots
/// (docs/FORMAT.md §4.2; a delta in version 2: §4.7).
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

    /// Whether a slot is a *common slot* of format version 2 (docs/FORMAT.md §4.7): a field
    /// register holding one entry, of the home replica, with an integer or string value.
    /// Its value kind then: `1` for a string, `0` for an integer.
    @inline(__always)
    static func commonKind(_ key: SlotKey, _ entries: [Entry], home: ReplicaID?) -> UInt64? {
        guard case .field = key, entries.count == 1, entries[0].dot.replica == home,
              case let .scalar(value) = entries[0].payload else { return nil }
        switch value {
        case .int: return 0
        case .string: return 1
        default: return nil
        }
    }

    /// Writes the records of a record section one at a time, after its count (a snapshot
    /// written as the store reads it): each id is encoded against the one before it and
    /// each hlc against the last (version 1) or the last of its replica (version 2).
    struct Writer {
        let tables: Tables
        let home: ReplicaID?
        let version: UInt8
        private var previousID: [UInt8] = []
        private var previousHLC: UInt64
        // Version 2: the last hlc of each replica (by table index), the strings written so
        // far (by first use), and the previous record's list of common slots.
        private let homeIndex: Int
        private var previousHLCs: [UInt64]
        private var strings: [ExactString: Int] = [:]
        private var previousCommon: [UInt64] = []
        private var isCommon: [Bool] = []

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
            guard version >= 2 else {
                if record.whole { writer.varint(0) }
                writer.varint(record.slots.count)
                for slot in record.slots { write(slot, to: &writer) }
                return
            }
            // Which slots are common, asked once per slot (a buffer the writer reuses).
            isCommon.removeAll(keepingCapacity: true)
            var common: [UInt64] = []
            for slot in record.slots {
                if let kind = commonKind(slot.key, slot.entries, home: home), case let .field(name) = slot.key {
                    common.append(UInt64(tables.nameIndex[ExactString(name)]!) << 1 | kind)
                    isCommon.append(true)
                } else {
                    isCommon.append(false)
                }
            }
            if common == previousCommon {
                writer.varint(0)
            } else {
                writer.varint(common.count + 1)
                for item in common { writer.varint(item) }
                previousCommon = common
            }
            writer.varint(UInt64(record.slots.count - common.count) << 1 | (record.whole ? 1 : 0))
            for (index, slot) in record.slots.enumerated() where isCommon[index] {
                let entry = slot.entries[0]
                writeStamp(entry.dot.hlc, replica: homeIndex, to: &writer)
                switch entry.payload {
                case let .scalar(.int(number)): writer.signed(number)
                case let .scalar(.string(text)): writeString(text, to: &writer)
                default: preconditionFailure("a common slot holds an integer or a string")
                }
            }
            for (index, slot) in record.slots.enumerated() where !isCommon[index] {
                write(slot, to: &writer)
            }
        }

        /// A slot as version 1 writes it, with version 2's stamps and strings when asked.
        private mutating func write(_ slot: (key: SlotKey, entries: [Entry]), to writer: inout ByteWriter) {
            switch slot.key {
            case .liveness: writer.varint(liveness)
            case .tombstones: writer.varint(tombstones)
            case let .field(name): writer.varint(UInt64(tables.nameIndex[ExactString(name)]!) << 2 | field)
            case let .element(name, value):
                writer.varint(UInt64(tables.nameIndex[ExactString(name)]!) << 2 | element)
                writeValue(value, to: &writer)
            }
            let allHome = slot.entries.allSatisfy { $0.dot.replica == home }
            writer.varint(UInt64(slot.entries.count) << 1 | (allHome ? 1 : 0))
            for entry in slot.entries {
                let replica = allHome ? homeIndex : tables.replicaIndex[entry.dot.replica]!
                if version >= 2 {
                    writeStamp(entry.dot.hlc, replica: replica, to: &writer)
                } else {
                    writer.signed(Int64(bitPattern: entry.dot.hlc &- previousHLC))
                    previousHLC = entry.dot.hlc
                }
                if !allHome { writer.varint(replica) }
                switch entry.payload {
                case .marker: break
                case let .scalar(value): writeValue(value, to: &writer)
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

        /// Version 2: the difference from the previous hlc of the same replica.
        @inline(__always)
        private mutating func writeStamp(_ hlc: UInt64, replica: Int, to writer: inout ByteWriter) {
            writer.signed(Int64(bitPattern: hlc &- previousHLCs[replica]))
            previousHLCs[replica] = hlc
        }

        private mutating func writeValue(_ value: ScalarValue, to writer: inout ByteWriter) {
            if version >= 2, case let .string(text) = value {
                writer.byte(tagString)
                writeString(text, to: &writer)
            } else {
                writeScalar(value, to: &writer)
            }
        }

        /// Version 2: a string's bytes at its first use, an index to that use after.
        private mutating func writeString(_ text: String, to writer: inout ByteWriter) {
            let key = ExactString(text)
            if let index = strings[key] {
                writer.varint(UInt64(index) << 1 | 1)
            } else {
                strings[key] = strings.count
                var text = text
                text.withUTF8 { utf8 in
                    writer.varint(UInt64(utf8.count) << 1)
                    writer.raw(utf8)
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
        private var previousHLC: UInt64
        // Version 2: the last hlc of each replica, the strings read so far (by first use,
        // and as a set to refuse a second spelling-out), the previous record's common slots.
        private var previousHLCs: [UInt64]
        private var strings: [String] = []
        private var stringSet: Set<ExactString> = []
        private var previousCommon: [UInt64] = []
        private var commonValues: [(hlc: UInt64, value: ScalarValue)] = []

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
            if version >= 2 { return try nextSlots(of: ref, from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames) }

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
                let slot = try readSlot(of: ref, from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames)
                if let last = slots.last, !SlotKey.canonicalOrder(last.key, slot.key) {
                    throw reader.error(.malformed, "slots of \(ref) not in strictly ascending order at \(slot.key)")
                }
                slots.append(slot)
            }
            return (ref: ref, slots: slots, whole: whole)
        }

        /// Version 2: the record's common-slot list, slot count, common slots' values and
        /// other slots (docs/FORMAT.md §4.7), merged into canonical slot order.
        private mutating func nextSlots(
            of ref: RecordRef, from reader: inout ByteReader, usedReplicas: inout [Bool], usedNames: inout [Bool]
        ) throws(ConcordError) -> EncodedRecord {
            let listStart = reader.offset
            let list = try reader.count("common-slot list of \(ref)", limit: FormatLimits.slotsPerRecord + 1)
            if list > 0 {
                var common: [UInt64] = []
                common.reserveCapacity(list - 1)
                for _ in 1..<list {
                    let item = try reader.varint("common slot of \(ref)")
                    guard item >> 1 < UInt64(names.count) else {
                        throw reader.error(.malformed, "name index \(item >> 1) outside the table of \(names.count)")
                    }
                    if let last = common.last, last >> 1 >= item >> 1 {
                        throw reader.error(.malformed, "common slots of \(ref) not in strictly ascending name order")
                    }
                    usedNames[Int(item >> 1)] = true
                    common.append(item)
                }
                guard common != previousCommon else {
                    throw reader.error(.malformed, "common-slot list of \(ref) repeats the previous record's; it must be written as 0", at: listStart)
                }
                previousCommon = common
            }
            let common = previousCommon
            let header = try reader.varint("slot count of \(ref)")
            let whole = header & 1 == 1
            guard header >> 1 <= UInt64(FormatLimits.slotsPerRecord - common.count) else {
                throw reader.error(.limitExceeded, "record \(ref) has \(header >> 1) slots besides \(common.count) common ones, over \(FormatLimits.slotsPerRecord)")
            }
            let otherCount = Int(header >> 1)
            guard otherCount <= reader.remaining / 2 else {
                throw reader.error(.truncated, "record \(ref) claims \(otherCount) slots, more than the input holds")
            }
            if whole && !allowWhole { throw reader.error(.malformed, "record \(ref) is marked as shipped whole outside a delta") }
            if otherCount == 0 && common.isEmpty && !whole { throw reader.error(.malformed, "record \(ref) has no slot") }
            if !common.isEmpty && home == nil { throw reader.error(.malformed, "record \(ref) has common slots but the object has no home replica") }

            // The common slots' stamps and values, kept in a buffer the reader reuses (a
            // new array per record costs more in allocation than the rest of the record).
            commonValues.removeAll(keepingCapacity: true)
            for item in common {
                let hlc = try stamp(replica: home!, from: &reader)
                let value: ScalarValue = item & 1 == 1 ? .string(try readString(from: &reader)) : .int(try reader.signed("int value"))
                commonValues.append((hlc: hlc, value: value))
            }
            if !common.isEmpty { usedReplicas[home!] = true }
            // The other slots, merged with the common ones (both ascending) as they are read.
            var slots: [(key: SlotKey, entries: [Entry])] = []
            slots.reserveCapacity(common.count + otherCount)
            var nextCommon = 0
            for _ in 0..<otherCount {
                let slot = try readSlot(of: ref, from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames)
                if let home, commonKind(slot.key, slot.entries, home: replicas[home]) != nil {
                    throw reader.error(.malformed, "slot \(slot.key) of \(ref) is a common slot and belongs in the record's common-slot list")
                }
                if let last = slots.last, !SlotKey.canonicalOrder(last.key, slot.key) {
                    throw reader.error(.malformed, "slots of \(ref) not in strictly ascending order at \(slot.key)")
                }
                while nextCommon < common.count, SlotKey.canonicalOrder(.field(names[Int(common[nextCommon] >> 1)]), slot.key) {
                    slots.append(commonSlot(nextCommon, common))
                    nextCommon += 1
                }
                if nextCommon < common.count, !SlotKey.canonicalOrder(slot.key, .field(names[Int(common[nextCommon] >> 1)])) {
                    throw reader.error(.malformed, "slot \(slot.key) of \(ref) is also in its common-slot list")
                }
                slots.append(slot)
            }
            while nextCommon < common.count {
                slots.append(commonSlot(nextCommon, common))
                nextCommon += 1
            }
            return (ref: ref, slots: slots, whole: whole)
        }

        /// Common slot `index` of the record being read, from `commonValues`.
        @inline(__always)
        private func commonSlot(_ index: Int, _ common: [UInt64]) -> (key: SlotKey, entries: [Entry]) {
            let (hlc, value) = commonValues[index]
            return (key: .field(names[Int(common[index] >> 1)]), entries: [Entry(dot: Stamp(hlc: hlc, replica: replicas[home!]), payload: .scalar(value))])
        }

        /// One slot: key, entry header, entries (docs/FORMAT.md §4.2; in version 2 with
        /// per-replica stamps and strings by reference).
        private mutating func readSlot(
            of ref: RecordRef, from reader: inout ByteReader, usedReplicas: inout [Bool], usedNames: inout [Bool]
        ) throws(ConcordError) -> (key: SlotKey, entries: [Entry]) {
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
                    key = .element(name, try readValue(&reader, tag: tag))
                }
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
                let hlc: UInt64
                let replicaIndex: Int
                if version >= 2 {
                    let difference = try reader.signed("entry stamp")
                    replicaIndex = allHome ? home! : try index(&reader, "entry replica", in: replicas.count)
                    hlc = previousHLCs[replicaIndex] &+ UInt64(bitPattern: difference)
                    previousHLCs[replicaIndex] = hlc
                } else {
                    hlc = previousHLC &+ UInt64(bitPattern: try reader.signed("entry stamp"))
                    previousHLC = hlc
                    replicaIndex = allHome ? home! : try index(&reader, "entry replica", in: replicas.count)
                }
                if replicaIndex != home { sawForeign = true }
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
                        payload = .scalar(try readValue(&reader, tag: tag))
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
            return (key: key, entries: entries)
        }

        /// Version 2: the next stamp of `replica`, as a difference from its previous one.
        private mutating func stamp(replica: Int, from reader: inout ByteReader) throws(ConcordError) -> UInt64 {
            let hlc = previousHLCs[replica] &+ UInt64(bitPattern: try reader.signed("entry stamp"))
            previousHLCs[replica] = hlc
            return hlc
        }

        private mutating func readValue(_ reader: inout ByteReader, tag: UInt8) throws(ConcordError) -> ScalarValue {
            if version >= 2 && tag == tagString { return .string(try readString(from: &reader)) }
            return try readScalar(&reader, tag: tag)
        }

        /// Version 2: a string spelled out at its first use, or an index to that use.
        private mutating func readString(from reader: inout ByteReader) throws(ConcordError) -> String {
            let start = reader.offset
            let header = try reader.varint("string value")
            if header & 1 == 1 {
                guard header >> 1 < UInt64(strings.count) else {
                    throw reader.error(.malformed, "string reference \(header >> 1) outside the \(strings.count) strings so far", at: start)
                }
                return strings[Int(header >> 1)]
            }
            guard header >> 1 <= UInt64(FormatLimits.valueBytes) else {
                throw reader.error(.limitExceeded, "string value is \(header >> 1) bytes, over the limit of \(FormatLimits.valueBytes)", at: start)
            }
            let bytes = try reader.raw(Int(header >> 1), "string value")
            guard let text = ByteReader.utf8(bytes) else { throw reader.error(.malformed, "string value is not valid UTF-8", at: start) }
            guard stringSet.insert(ExactString(text)).inserted else {
                throw reader.error(.malformed, "string value spelled out again; a repeat must refer to its first use", at: start)
            }
            strings.append(text)
            return text
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
