import ConcordCore

/// Format version 2's record body (docs/FORMAT.md §4.7): each record's list of common slots,
/// their values, then its other slots in version 1's encoding, with stamps per replica and
/// strings by reference.
extension RecordsCodec {
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
}

extension RecordsCodec.Writer {
    /// Version 2: a record's common-slot list (0 when it repeats the previous record's), its
    /// count of other slots with the shipped-whole flag, the common slots' values, then the
    /// other slots.
    mutating func writeSlotsV2(_ record: EncodedRecord, to writer: inout ByteWriter) {
        // Which slots are common, asked once per slot (a buffer the writer reuses).
        isCommon.removeAll(keepingCapacity: true)
        common.removeAll(keepingCapacity: true)
        commonNames.removeAll(keepingCapacity: true)
        for slot in record.slots {
            if let kind = RecordsCodec.commonKind(slot.key, slot.entries, home: home), case let .field(name) = slot.key {
                // A name the previous record's common slot at the same place had: its index
                // is known (records one after another mostly have the same fields).
                let place = common.count
                let index = place < previousCommonNames.count && Bytewise.equal(previousCommonNames[place], name)
                    ? previousCommon[place] >> 1 : UInt64(tables.nameIndex[ExactString(name)]!)
                common.append(index << 1 | kind)
                commonNames.append(name)
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
        }
        // This record's list is the previous one for the next (`common` is reused).
        defer {
            swap(&common, &previousCommon)
            swap(&commonNames, &previousCommonNames)
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

    /// Version 2: the difference from the previous hlc of the same replica.
    @inline(__always)
    mutating func writeStamp(_ hlc: UInt64, replica: Int, to writer: inout ByteWriter) {
        writer.signed(Int64(bitPattern: hlc &- previousHLCs[replica]))
        previousHLCs[replica] = hlc
    }

    /// Version 2: a string's bytes at its first use, an index to that use after.
    mutating func writeString(_ text: String, to writer: inout ByteWriter) {
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

extension RecordsCodec.Reader {
    /// Version 2: the record's common-slot list, slot count, common slots' values and
    /// other slots (docs/FORMAT.md §4.7), merged into canonical slot order.
    mutating func nextSlotsV2(
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
            if let home, RecordsCodec.commonKind(slot.key, slot.entries, home: replicas[home]) != nil {
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

    /// Version 2: the next stamp of `replica`, as a difference from its previous one.
    private mutating func stamp(replica: Int, from reader: inout ByteReader) throws(ConcordError) -> UInt64 {
        let hlc = previousHLCs[replica] &+ UInt64(bitPattern: try reader.signed("entry stamp"))
        previousHLCs[replica] = hlc
        return hlc
    }

    /// Version 2: a string spelled out at its first use, or an index to that use.
    mutating func readString(from reader: inout ByteReader) throws(ConcordError) -> String {
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
