import ConcordCore

/// The binary encoding of a replica's full state (docs/FORMAT.md §4.4): its causal context
/// and every stored record, visible or not.
public enum SnapshotCodec {
    /// Encodes a replica's state.
    ///
    /// - Throws: ``/ConcordCore/ConcordError/Code/invalidOperation`` for a state with slot
    ///   scopes (a delta seen as a state), which no replica holds and no snapshot stores.
    public static func encode(_ state: StoreState) throws(ConcordError) -> [UInt8] {
        guard !state.hasScopes else {
            throw ConcordError(.invalidOperation, "a state with slot scopes (a delta's state) cannot be stored as a snapshot")
        }
        let records: [EncodedRecord] = state.sortedRecords.map { record in
            (ref: record.ref, slots: record.record.sortedSlots.map { (key: $0.key, entries: $0.slot.entries) }, whole: false)
        }
        // The tables come from these records: nothing to check them against.
        var writer = SnapshotWriter(
            context: state.context, tables: Tables(records: records, extraReplicas: state.context.ranges.keys),
            recordCount: records.count, checksTables: false)
        for record in records { try writer.append(record.ref, slots: record.slots) }
        return try writer.finish()
    }

    /// Decodes a snapshot from untrusted bytes, checking that every entry's dot lies in the
    /// context and every payload fits its slot.
    public static func decode(_ bytes: [UInt8]) throws(ConcordError) -> StoreState {
        try SnapshotReader(bytes).state()
    }
}

/// Writes a snapshot encoding one record at a time, so that a store can write a snapshot of
/// a state far larger in memory than its encoding without holding the whole state.
///
/// The encoding's tables come before its records, so the writer is made with every replica
/// and name the records will use, and their number; then each record is appended in
/// ascending order, its slots in canonical order. The writer checks what it is given — order,
/// count, names and replicas in the tables, every table entry used — and throws
/// `invalidOperation` instead of writing an encoding that would not read back.
package struct SnapshotWriter {
    private var writer: ByteWriter
    private let tables: Tables
    private var records: RecordsCodec.Writer
    private var remaining: Int
    private var previous: RecordRef?
    private var usedReplicas: [Bool]
    private var usedNames: [Bool]
    /// Whether ``append(_:slots:)`` checks names and replicas against the tables: not when
    /// the tables were collected from the very records appended (``SnapshotCodec/encode(_:)``),
    /// where the checks cost a fifth of the encoding.
    private let checksTables: Bool

    /// Starts the encoding of a state with `context` whose records use exactly `replicas`
    /// (the context's replicas are added) and `names` (collections and field names), and
    /// number `recordCount`; after `prefix` (a snapshot object's seq table).
    package init(context: CausalContext, replicas: Set<ReplicaID>, names: Set<ExactString>, recordCount: Int, prefix: [UInt8] = []) {
        self.init(context: context, tables: Tables(replicas: replicas.union(context.ranges.keys), names: names),
                  recordCount: recordCount, prefix: prefix, checksTables: true)
    }

    init(context: CausalContext, tables: Tables, recordCount: Int, prefix: [UInt8] = [], checksTables: Bool) {
        self.tables = tables
        self.checksTables = checksTables
        remaining = recordCount
        usedReplicas = [Bool](repeating: false, count: tables.replicas.count)
        usedNames = [Bool](repeating: false, count: tables.names.count)
        writer = ByteWriter(capacity: prefix.count + 64 + recordCount * 32)
        writer.raw(prefix)
        ObjectHeader.write(.snapshot, to: &writer)
        Tables.writeReplicas(tables.replicas, to: &writer)
        let contextRanges = context.sortedRanges
        writer.varint(contextRanges.count)
        for entry in contextRanges {
            let index = tables.replicaIndex[entry.replica]!
            usedReplicas[index] = true
            writer.varint(index)
            writer.varint(entry.ranges.count)
            var previousUpper: UInt64?
            for range in entry.ranges {
                writer.varint(previousUpper.map { range.lowerBound - $0 - 2 } ?? range.lowerBound)
                writer.varint(range.upperBound - range.lowerBound)
                previousUpper = range.upperBound
            }
        }
        Tables.writeNames(tables.names, to: &writer)
        writer.varint(recordCount)
        records = RecordsCodec.Writer(tables: tables, home: tables.replicas.first, startHLC: 0)
    }

    /// Appends a record: after every record appended before it, with at least one slot.
    package mutating func append(_ ref: RecordRef, _ record: Record) throws(ConcordError) {
        try append(ref, slots: record.sortedSlots.map { (key: $0.key, entries: $0.slot.entries) })
    }

    /// Appends a record's slots, in canonical slot order, each with its entries sorted.
    mutating func append(_ ref: RecordRef, slots: [(key: SlotKey, entries: [Entry])]) throws(ConcordError) {
        guard remaining > 0 else { throw ConcordError(.invalidOperation, "a snapshot writer was given more records than it was made for") }
        if let previous, !(previous < ref) {
            throw ConcordError(.invalidOperation, "a snapshot's records must come in ascending order: \(ref) after \(previous)")
        }
        guard !slots.isEmpty else { throw ConcordError(.invalidOperation, "\(ref) has no slot: a snapshot holds no empty record") }
        if checksTables { try checkTables(ref, slots) }
        records.write((ref: ref, slots: slots, whole: false), to: &writer)
        remaining -= 1
        previous = ref
    }

    /// Every name and replica of the record is in the tables (else the encoding could not
    /// refer to it), and is marked used.
    private mutating func checkTables(_ ref: RecordRef, _ slots: [(key: SlotKey, entries: [Entry])]) throws(ConcordError) {
        try use(name: ref.collection)
        for slot in slots {
            if let name = slot.key.fieldName { try use(name: name) }
            for entry in slot.entries {
                guard let index = tables.replicaIndex[entry.dot.replica] else {
                    throw ConcordError(.invalidOperation, "\(ref) holds a dot of \(entry.dot.replica), which the snapshot writer's tables lack")
                }
                usedReplicas[index] = true
            }
        }
    }

    private mutating func use(name: String) throws(ConcordError) {
        guard let index = tables.nameIndex[ExactString(name)] else {
            throw ConcordError(.invalidOperation, "the name \(name.debugDescription) is not in the snapshot writer's tables")
        }
        usedNames[index] = true
    }

    /// The encoding, once every record has been appended and every table entry used.
    package consuming func finish() throws(ConcordError) -> [UInt8] {
        guard remaining == 0 else { throw ConcordError(.invalidOperation, "a snapshot writer is \(remaining) records short of its count") }
        guard !checksTables || (!usedReplicas.contains(false) && !usedNames.contains(false)) else {
            throw ConcordError(.invalidOperation, "a snapshot writer's tables hold a replica or name no record uses")
        }
        return writer.bytes
    }
}

/// Reads a snapshot's records one at a time, each checked as ``SnapshotCodec/decode(_:)``
/// checks it, so that a store can join a snapshot far larger in memory than its encoding
/// without holding the whole state (a new replica's bootstrap).
///
/// The context and the tables are read first; ``next()`` returns the records in ascending
/// order and, after the last one, checks the end of the input and that every table entry was
/// used — so a snapshot is valid exactly when reading it to its end throws nothing. A copy of
/// the reader made before the first ``next()`` reads the records again from the start.
public struct SnapshotReader: Sendable {
    /// The snapshot's causal context: every dot its records hold lies in it.
    public let context: CausalContext
    private var reader: ByteReader
    private var records: RecordsCodec.Reader
    private var usedReplicas: [Bool]
    private var usedNames: [Bool]
    private var checkedEnd = false

    /// Reads the header, replica table, context and name table of the snapshot encoding
    /// that starts at `offset` of `bytes` (``SnapshotObjectReader`` starts after the seqs).
    init(_ bytes: [UInt8], startingAt offset: Int) throws(ConcordError) {
        reader = ByteReader(bytes, what: "snapshot", offset: offset)
        try ObjectHeader.read(.snapshot, from: &reader)
        let replicas = try Tables.readReplicas(from: &reader)
        usedReplicas = [Bool](repeating: false, count: replicas.count)
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
        context = CausalContext(ranges: ranges)
        let names = try Tables.readNames(from: &reader)
        usedNames = [Bool](repeating: false, count: names.count)
        records = try RecordsCodec.Reader(
            from: &reader, replicas: replicas, names: names, home: replicas.isEmpty ? nil : 0, startHLC: 0, allowWhole: false)
    }

    /// Reads a snapshot encoding (docs/FORMAT.md §4.4) up to its first record.
    public init(_ bytes: [UInt8]) throws(ConcordError) {
        try self.init(bytes, startingAt: 0)
    }

    /// The whole state: every record left, read into memory.
    public func state() throws(ConcordError) -> StoreState {
        var reader = self
        var records: [RecordRef: Record] = [:]
        records.reserveCapacity(reader.recordCount)
        while let (ref, record) = try reader.next() { records[ref] = record }
        return StoreState(context: context, records: records)
    }

    /// Reads every record left, to check them, keeping none.
    public func check() throws(ConcordError) {
        var reader = self
        while try reader.nextSlots() != nil {}
    }

    /// How many records are left to read.
    public var recordCount: Int { records.remaining }

    /// The next record, checked: no empty slot, every entry's dot in the context, every
    /// payload of its slot's kind. Nil after the last, once the rest of the input is checked.
    public mutating func next() throws(ConcordError) -> (ref: RecordRef, record: Record)? {
        guard let (ref, slots) = try nextSlots() else { return nil }
        var record: [SlotKey: Slot] = [:]
        record.reserveCapacity(slots.count)
        for slot in slots { record[slot.key] = Slot(entries: slot.entries) }
        return (ref, Record(slots: record))
    }

    /// ``next()``, with the record's slots as they are encoded: in canonical order, each
    /// with its entries in ascending stamp order (no dictionary built).
    public mutating func nextSlots() throws(ConcordError) -> (ref: RecordRef, slots: [(key: SlotKey, entries: [Entry])])? {
        guard let record = try records.next(from: &reader, usedReplicas: &usedReplicas, usedNames: &usedNames) else {
            if !checkedEnd {
                guard reader.isAtEnd else { throw reader.error(.malformed, "\(reader.remaining) bytes after the end of the snapshot") }
                try RecordsCodec.checkAllUsed(usedReplicas, "replica table", reader)
                try RecordsCodec.checkAllUsed(usedNames, "name table", reader)
                checkedEnd = true
            }
            return nil
        }
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
        }
        return (record.ref, record.slots)
    }
}
