import ConcordCodec
import ConcordCore
import Foundation
import GRDB

/// Snapshots: the full state exported for another replica to join, and joined from one.
extension Store {
    /// The full state with its version vector, for another replica to join.
    ///
    /// - Throws: `invalidOperation` while local changes are unsealed: a snapshot must hold
    ///   only sealed changes (see ``/ConcordCore/Replica/snapshot``); call ``seal(maxSlots:)`` first.
    public func exportSnapshot() throws(ConcordError) -> StoreState {
        try read { db in
            guard try SlotIO.outboxIsEmpty(db) else {
                throw ConcordError(.invalidOperation, "local changes are not sealed yet; seal (push) before exporting a snapshot")
            }
            return try SlotIO.state(db)
        }
    }

    /// The plaintext of a snapshot object of the full state (its seq table `appliedSeqs`,
    /// then the snapshot encoding), and the files the state references, written as the
    /// store reads its records: the same bytes as `SnapshotObjectCodec.encode` of
    /// ``exportSnapshot()``, without holding the state in memory (a million records of ten
    /// fields took several gigabytes as a state, where their encoding is about 100 MB).
    ///
    /// One read transaction, two passes over the records in key order: the first collects
    /// the tables the encoding starts with (every replica and name, the number of records)
    /// and the files, the second writes each record.
    ///
    /// - Throws: `invalidOperation` while local changes are unsealed, as ``exportSnapshot()``.
    package func exportSnapshotObject(appliedSeqs: [ReplicaID: UInt64]) throws(ConcordError) -> (plaintext: [UInt8], files: Set<ContentHash>) {
        try read { db in
            guard try SlotIO.outboxIsEmpty(db) else {
                throw ConcordError(.invalidOperation, "local changes are not sealed yet; seal (push) before exporting a snapshot")
            }
            let context = CausalContext(try SlotIO.context(db))
            var replicas = Set<ReplicaID>()
            var names = Set<ExactString>()
            var files = Set<ContentHash>()
            var count = 0
            try SlotIO.forEachRecord(db) { ref, record in
                count += 1
                names.insert(ExactString(ref.collection))
                for (key, slot) in record.slots {
                    if let name = key.fieldName { names.insert(ExactString(name)) }
                    for entry in slot.entries {
                        replicas.insert(entry.dot.replica)
                        if case let .file(file) = entry.payload { files.insert(file.hash) }
                    }
                }
            }
            var writer = SnapshotWriter(
                context: context, replicas: replicas, names: names, recordCount: count, prefix: SnapshotObjectCodec.seqTable(appliedSeqs))
            try SlotIO.forEachRecord(db) { ref, record in try writer.append(ref, record) }
            return (try writer.finish(), files)
        }
    }

    /// Joins a snapshot (a full state) in one transaction. Local unsealed changes stay in
    /// the outbox. `appliedSeqs` — per origin, the seq of the newest delta the snapshot
    /// contains — lets a later pull continue after them.
    @discardableResult
    public func join(snapshot: StoreState, appliedSeqs: [ReplicaID: UInt64] = [:]) throws(ConcordError) -> StoreApplyResult {
        guard snapshot.context.versionVector != nil, !snapshot.hasScopes else {
            throw ConcordError(.malformed, "only a replica's full state can be joined as a snapshot")
        }
        var changes: [RecordRef: Set<String>] = [:]
        let result: StoreApplyResult = try writeDatabase { db in
            try join(db, old: try SlotIO.state(db), snapshot: snapshot, appliedSeqs: appliedSeqs, changes: &changes)
        }
        publishChanges(changes.map { ChangeEvent(ref: $0.key, fields: $0.value, origin: .snapshot) })
        return result
    }

    /// Decodes and joins an encoded snapshot.
    @discardableResult
    public func join(encodedSnapshot bytes: [UInt8]) throws(ConcordError) -> StoreApplyResult {
        try join(snapshot: try SnapshotCodec.decode(bytes))
    }

    /// Joins a snapshot as it is read, in one transaction: what ``join(snapshot:appliedSeqs:)``
    /// does with `reader`'s state, without holding that state in memory when the store holds
    /// nothing yet — no record, an empty context: a new replica's bootstrap. The records are
    /// read twice, to find the files they need (`heldBack` when one is missing, with nothing
    /// written) and then to insert them as they come; memory stays that of one record, beside
    /// the snapshot's bytes. Any other store reads the whole state and joins it.
    ///
    /// - Throws: what the reader throws for a malformed snapshot, before anything is written.
    @discardableResult
    public func join(snapshot reader: SnapshotReader, appliedSeqs: [ReplicaID: UInt64] = [:]) throws(ConcordError) -> StoreApplyResult {
        guard let vector = reader.context.versionVector else {
            throw ConcordError(.malformed, "only a replica's full state can be joined as a snapshot")
        }
        var changes = ChangeList(for: self)
        var joined: [RecordRef: Set<String>] = [:]
        let result: StoreApplyResult = try writeDatabase { db in
            let old = try SlotIO.state(db)
            guard old.records.isEmpty, old.context.isEmpty else {
                return try join(db, old: old, snapshot: try reader.state(), appliedSeqs: appliedSeqs, changes: &joined)
            }
            if reader.context.isEmpty, reader.recordCount == 0 {
                try reader.check()
                return .alreadyApplied
            }
            // First pass: every record checked, and the files they need found.
            var missing: Set<ContentHash> = []
            var scan = reader
            let modes = try FileModes(db)
            while !modes.allOnDemand, let (ref, slots) = try scan.nextSlots() {
                for (key, entries) in slots {
                    guard case let .field(name) = key, !modes.onDemand(ref.collection, name) else { continue }
                    for entry in entries {
                        if case let .file(file) = entry.payload, !blobs.contains(file.hash) { missing.insert(file.hash) }
                    }
                }
            }
            if !missing.isEmpty { return .heldBack(missingFiles: missing.sorted()) }
            // Second pass: each record inserted as it is read, in key order.
            var insert = try SlotIO.FreshInsert(db)
            var records = reader
            while let (ref, slots) = try records.nextSlots() {
                try insert.insert(ref, slots)
                changes.append(ref, slots)
            }
            for (replica, hlc) in vector.entries { try SlotIO.setContext(db, replica, hlc) }
            for (origin, seq) in appliedSeqs where origin != replicaID { try setAppliedSeq(db, origin, seq) }
            try observe(db, reader.context.ranges.values.compactMap { $0.last?.upperBound }.max() ?? 0)
            return .applied
        }
        publishChanges(joined.map { ChangeEvent(ref: $0.key, fields: $0.value, origin: .snapshot) })
        changes.publish(to: self)
        return result
    }

    /// Joins `snapshot` into `old`, the store's state, within a write transaction.
    private func join(
        _ db: Database, old: StoreState, snapshot: StoreState, appliedSeqs: [ReplicaID: UInt64], changes: inout [RecordRef: Set<String>]
    ) throws -> StoreApplyResult {
        if old.context.union(snapshot.context) == old.context, old.joined(snapshot) == old { return .alreadyApplied }
        let modes = try FileModes(db)
        let entries = snapshot.records.flatMap { ref, record in
            record.slots.filter { !modes.onDemand(ref.collection, $0.key.fieldName) }.values.flatMap(\.entries)
        }
        let missing = modes.allOnDemand ? [] : missingFiles(in: entries, seen: old.context)
        if !missing.isEmpty { return .heldBack(missingFiles: missing) }
        if old.records.isEmpty, old.context.isEmpty {
            // A new replica's first snapshot (the bootstrap): the join is the snapshot
            // itself, inserted row by row without diffing it against nothing.
            changes = try SlotIO.insertAll(db, snapshot)
            if let vector = snapshot.context.versionVector { for (replica, hlc) in vector.entries { try SlotIO.setContext(db, replica, hlc) } }
        } else {
            // Records the snapshot left out (purged) that an own write it had not seen keeps
            // alive: their fields are written back, as after a purge in a delta.
            var held: [(RecordRef, [String: FieldValue])] = []
            for (ref, record) in old.records where snapshot.records[ref] == nil {
                if let fields = heldByOwnWrite(record, unseenBy: { !snapshot.context.contains($0) }) { held.append((ref, fields)) }
            }
            changes = try rewrite(db, from: old, to: old.joined(snapshot))
            if !held.isEmpty {
                for (ref, names) in try writeBack(db, held).names { changes[ref, default: []].formUnion(names) }
            }
        }
        for (origin, seq) in appliedSeqs where origin != replicaID { try setAppliedSeq(db, origin, seq) }
        try observe(db, snapshot.context.ranges.values.compactMap { $0.last?.upperBound }.max() ?? 0)
        return .applied
    }
}
