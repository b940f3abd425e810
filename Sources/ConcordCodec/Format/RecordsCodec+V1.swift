import ConcordCore

/// Format version 1's record body (docs/FORMAT.md §4.2): after a record's id, its slot count
/// (after a 0 for a record shipped whole) and its slots. The slot encoding is version 2's
/// too, with version 2's stamps and strings when asked.
extension RecordsCodec.Writer {
    /// Version 1: a record's slots after its id.
    mutating func writeSlotsV1(_ record: EncodedRecord, to writer: inout ByteWriter) {
        if record.whole { writer.varint(0) }
        writer.varint(record.slots.count)
        for slot in record.slots { write(slot, to: &writer) }
    }

    /// A slot as version 1 writes it, with version 2's stamps and strings when asked.
    mutating func write(_ slot: (key: SlotKey, entries: [Entry]), to writer: inout ByteWriter) {
        switch slot.key {
        case .liveness: writer.varint(RecordsCodec.liveness)
        case .tombstones: writer.varint(RecordsCodec.tombstones)
        case let .field(name): writer.varint(UInt64(tables.nameIndex[ExactString(name)]!) << 2 | RecordsCodec.field)
        case let .element(name, value):
            writer.varint(UInt64(tables.nameIndex[ExactString(name)]!) << 2 | RecordsCodec.element)
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
                writer.byte(RecordsCodec.tagFile)
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

    private mutating func writeValue(_ value: ScalarValue, to writer: inout ByteWriter) {
        if version >= 2, case let .string(text) = value {
            writer.byte(RecordsCodec.tagString)
            writeString(text, to: &writer)
        } else {
            RecordsCodec.writeScalar(value, to: &writer)
        }
    }
}

extension RecordsCodec.Reader {
    /// Version 1: a record's slot count (after a 0 for a record shipped whole) and slots.
    mutating func nextSlotsV1(
        of ref: RecordRef, from reader: inout ByteReader, usedReplicas: inout [Bool], usedNames: inout [Bool]
    ) throws(ConcordError) -> EncodedRecord {
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

    /// One slot: key, entry header, entries (docs/FORMAT.md §4.2; in version 2 with
    /// per-replica stamps and strings by reference).
    mutating func readSlot(
        of ref: RecordRef, from reader: inout ByteReader, usedReplicas: inout [Bool], usedNames: inout [Bool]
    ) throws(ConcordError) -> (key: SlotKey, entries: [Entry]) {
        let rawKey = try reader.varint("slot key")
        let kind = rawKey & 3
        let nameIndex = rawKey >> 2
        let key: SlotKey
        switch kind {
        case RecordsCodec.liveness, RecordsCodec.tombstones:
            guard nameIndex == 0 else { throw reader.error(.malformed, "record slot key \(rawKey) carries a name") }
            key = kind == RecordsCodec.liveness ? .liveness : .tombstones
        default:
            guard nameIndex < UInt64(names.count) else {
                throw reader.error(.malformed, "name index \(nameIndex) outside the table of \(names.count)")
            }
            usedNames[Int(nameIndex)] = true
            let name = names[Int(nameIndex)]
            if kind == RecordsCodec.field {
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
                replicaIndex = allHome ? home! : try RecordsCodec.index(&reader, "entry replica", in: replicas.count)
                hlc = previousHLCs[replicaIndex] &+ UInt64(bitPattern: difference)
                previousHLCs[replicaIndex] = hlc
            } else {
                hlc = previousHLC &+ UInt64(bitPattern: try reader.signed("entry stamp"))
                previousHLC = hlc
                replicaIndex = allHome ? home! : try RecordsCodec.index(&reader, "entry replica", in: replicas.count)
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
                if tag == RecordsCodec.tagFile {
                    payload = .file(try RecordsCodec.readFile(&reader))
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

    private mutating func readValue(_ reader: inout ByteReader, tag: UInt8) throws(ConcordError) -> ScalarValue {
        if version >= 2 && tag == RecordsCodec.tagString { return .string(try readString(from: &reader)) }
        return try RecordsCodec.readScalar(&reader, tag: tag)
    }
}
