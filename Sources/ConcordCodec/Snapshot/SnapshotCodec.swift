import ConcordCore

/// The binary encoding of a replica's full state (docs/FORMAT.md §4.4): its causal context
/// and every stored record, visible or not.
public enum SnapshotCodec {
    /// Encodes a replica's state.
    ///
    /// - Throws: ``ConcordCore/ConcordError/Code/invalidOperation`` for a state with slot
    ///   scopes (a delta seen as a state), which no replica holds and no snapshot stores.
    public static func encode(_ state: StoreState) throws(ConcordError) -> [UInt8] {
        guard !state.hasScopes else {
            throw ConcordError(.invalidOperation, "a state with slot scopes (a delta's state) cannot be stored as a snapshot")
        }
        let records: [EncodedRecord] = state.sortedRecords.map { record in
            (ref: record.ref, slots: record.record.sortedSlots.map { (key: $0.key, entries: $0.slot.entries) }, whole: false)
        }
        let contextRanges = state.context.sortedRanges
        let tables = Tables(records: records, extraReplicas: contextRanges.map(\.replica))
        var writer = ByteWriter(capacity: 64 + records.count * 32)
        ObjectHeader.write(.snapshot, to: &writer)
        Tables.writeReplicas(tables.replicas, to: &writer)
        writer.varint(contextRanges.count)
        for entry in contextRanges {
            writer.varint(tables.replicaIndex[entry.replica]!)
            writer.varint(entry.ranges.count)
            var previousUpper: UInt64?
            for range in entry.ranges {
                writer.varint(previousUpper.map { range.lowerBound - $0 - 2 } ?? range.lowerBound)
                writer.varint(range.upperBound - range.lowerBound)
                previousUpper = range.upperBound
            }
        }
        Tables.writeNames(tables.names, to: &writer)
        RecordsCodec.write(records, tables: tables, home: tables.replicas.first, startHLC: 0, to: &writer)
        return writer.bytes
    }

    /// Decodes a snapshot from untrusted bytes, checking that every entry's dot lies in the
    /// context and every payload fits its slot.
    public static func decode(_ bytes: [UInt8]) throws(ConcordError) -> StoreState {
        var reader = ByteReader(bytes, what: "snapshot")
        try ObjectHeader.read(.snapshot, from: &reader)
        let replicas = try Tables.readReplicas(from: &reader)
        var usedReplicas = [Bool](repeating: false, count: replicas.count)
        let contextCount = try reader.count("context", minimumSize: 3, limit: replicas.count)
        var ranges: [ReplicaID: [ClosedRange<UInt64>]] = [:]
        var previousIndex = -1
        for _ in 0..<contextCount {
            let index = try RecordsCodec.index(&reader, "context replica", in: replicas.count)
            guard index > previousIndex else { throw reader.error(.malformed, "context not in ascending replica order") }
            previousIndex = index
            usedReplicas[index] = true
            let rangeCount = try reader.count("ranges", minimumSize: 2, limit: FormatLimits.rangesPerReplica)
            guard rangeCount > 0 else { throw reader.error(.malformed, "replica \(replicas[index]) has no range") }
            var list: [ClosedRange<UInt64>] = []
            list.reserveCapacity(rangeCount)
            for _ in 0..<rangeCount {
                let gap = try reader.varint("range start")
                let length = try reader.varint("range length")
                let (lower, lowerOverflow) = list.last.map { $0.upperBound.addingReportingOverflow(2).partialValue.addingReportingOverflow(gap) }
                    ?? (gap, false)
                let startOverflow = list.last.map { $0.upperBound > UInt64.max - 2 } ?? false
                let (upper, upperOverflow) = lower.addingReportingOverflow(length)
                guard !lowerOverflow, !upperOverflow, !startOverflow else {
                    throw reader.error(.malformed, "range of \(replicas[index]) overflows 64 bits")
                }
                list.append(lower...upper)
            }
            ranges[replicas[index]] = list
        }
        let names = try Tables.readNames(from: &reader)
        var usedNames = [Bool](repeating: false, count: names.count)
        let decoded = try RecordsCodec.read(
            from: &reader, replicas: replicas, names: names, home: replicas.isEmpty ? nil : 0, startHLC: 0, allowWhole: false,
            usedReplicas: &usedReplicas, usedNames: &usedNames)
        guard reader.isAtEnd else { throw reader.error(.malformed, "\(reader.remaining) bytes after the end of the snapshot") }
        try RecordsCodec.checkAllUsed(usedReplicas, "replica table", reader)
        try RecordsCodec.checkAllUsed(usedNames, "name table", reader)

        let context = CausalContext(ranges: ranges)
        var records: [RecordRef: Record] = [:]
        records.reserveCapacity(decoded.count)
        for record in decoded {
            var slots: [SlotKey: Slot] = [:]
            slots.reserveCapacity(record.slots.count)
            for slot in record.slots {
                guard !slot.entries.isEmpty else {
                    throw ConcordError(.malformed, "snapshot: record \(record.ref) stores an empty slot \(slot.key)")
                }
                for entry in slot.entries {
                    guard context.contains(entry.dot) else {
                        throw ConcordError(.malformed, "snapshot: entry \(entry.dot) of \(record.ref) \(slot.key) is outside the snapshot's context")
                    }
                    guard slot.key.accepts(entry.payload) else {
                        throw ConcordError(.malformed, "snapshot: slot \(record.ref) \(slot.key) holds a payload of the wrong kind")
                    }
                }
                slots[slot.key] = Slot(entries: slot.entries)
            }
            records[record.ref] = Record(slots: slots)
        }
        return StoreState(context: context, records: records)
    }

}
