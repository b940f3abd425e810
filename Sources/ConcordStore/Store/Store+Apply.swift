import ConcordCodec
import ConcordCore
import Foundation
import GRDB

/// What applying a remote delta or snapshot did.
public enum StoreApplyResult: Hashable, Sendable {
    /// Its changes are stored.
    case applied
    /// The store had already applied everything in it; nothing changed.
    case alreadyApplied
    /// It references files not yet in the blob directory: nothing was applied. Add the
    /// files (``BlobStore/add(mediaType:expected:read:)``) and apply it again — records
    /// and their files become visible as one unit. Never under the on-demand
    /// ``FilePolicy``: there records apply without their files.
    case heldBack(missingFiles: [ContentHash])
}

extension Store {
    // MARK: Applying remote changes

    /// Applies a remote delta in one transaction. The outbox is untouched: remote changes
    /// never re-enter it.
    ///
    /// `fingerprint`: the batch's fingerprint and size as the remote holds it, recorded with
    /// its seq and end (``appliedBatches()``) so that another batch under the same name can
    /// be told apart.
    ///
    /// - Throws: `notReady` when the delta's dependencies are not applied yet (nothing
    ///   changes); storage errors leave the store as it was.
    @discardableResult
    public func apply(_ delta: Delta, fingerprint: BatchFingerprint? = nil) throws(ConcordError) -> StoreApplyResult {
        var changes = ChangedFields()
        let result: StoreApplyResult = try writeDatabase { db in
            let vector = try SlotIO.context(db)
            let context = CausalContext(vector)
            if vector[delta.origin] >= delta.upTo { return .alreadyApplied }
            let missing = delta.dependencies.entries.filter { vector[$0.key] < $0.value }
            if !missing.isEmpty {
                throw ConcordError(.notReady, "delta \(delta.seq) from \(delta.origin) needs \(VersionVector(missing)) applied first")
            }
            // On demand, records apply at once and their files stay where they are; files
            // of eager fields (a collection or field scoped eager) are needed first.
            let modes = try FileModes(db)
            let missingFiles = modes.allOnDemand ? [] : missingFiles(in: modes.eagerEntries(delta), seen: context)
            if !missingFiles.isEmpty { return .heldBack(missingFiles: missingFiles) }
            let held = try fieldsHeldAgainstPurge(db, delta)
            if vector[delta.origin] != delta.dependencies[delta.origin] {
                // Not at the delta's start: the general join (not reached by stores that
                // only ever join snapshots taken with an empty outbox).
                var state = try SlotIO.state(db)
                let old = state
                try state.apply(delta)
                changes = ChangedFields(try rewrite(db, from: old, to: state))
            } else {
                changes = try applySlots(db, delta, context: context)
            }
            try SlotIO.setContext(db, delta.origin, delta.upTo)
            try setAppliedSeq(db, delta.origin, delta.seq)
            try recordAppliedBatch(db, delta, fingerprint: fingerprint)
            try observe(db, max(delta.upTo, delta.dependencies.maxHLC))
            if !held.isEmpty {
                for (ref, names) in try writeBack(db, held).names { changes.note(names, of: ref) }
            }
            return .applied
        }
        publishChanges(changes, origin: .remote(delta.origin))
        return result
    }

    /// Decodes and applies an encoded delta (docs/FORMAT.md). Malformed, truncated or
    /// newer-format bytes yield the codec's typed error and change nothing.
    @discardableResult
    public func apply(encoded bytes: [UInt8]) throws(ConcordError) -> StoreApplyResult {
        try apply(try DeltaCodec.decode(bytes))
    }

    /// The apply's upsert of a record's single observed scalars: parameters 1 and 2 the
    /// record, 3 the origin, then per field its name, kind, value and hlc.
    private static let appliedRegisterWrites = BatchedUpsert.Shape(into: BatchedUpsert.Shape.fields, sharedParameters: 3, parametersPerRow: 4, row: { first in
        "(?1, ?2, ?\(first), ?\(first + 1), ?\(first + 2), NULL, NULL, ?\(first + 3), ?3, 1, \(Rows.cleanSQL))"
    }, onConflict: """
        ON CONFLICT (collection, id, field) DO UPDATE SET
            kind = excluded.kind, value = excluded.value, file_size = NULL, media_type = NULL, hlc = excluded.hlc, replica = excluded.replica
        WHERE concord_fields.versions = 1 AND concord_fields.kind != 6
          AND concord_fields.hlc <= coalesce((SELECT hlc FROM temp.concord_observed o WHERE o.replica = concord_fields.replica), \(Rows.cleanSQL))
        """)

    private func applySlots(_ db: Database, _ delta: Delta, context: CausalContext) throws -> ChangedFields {
        let observed = delta.observed
        try db.execute(sql: """
            CREATE TEMP TABLE IF NOT EXISTS concord_observed (replica BLOB PRIMARY KEY NOT NULL, hlc INTEGER NOT NULL) WITHOUT ROWID;
            DELETE FROM temp.concord_observed;
            """)
        let insertObserved = try db.cachedStatement(sql: "INSERT INTO temp.concord_observed (replica, hlc) VALUES (?, ?)")
        for (replica, hlc) in observed.entries {
            try insertObserved.execute(arguments: [Rows.replicaBlob(replica), Rows.hlc(hlc)])
        }
        // One upsert replaces a single observed scalar with the delta's new one, for all such
        // fields of a record at once; anything else (concurrent values, files, sets,
        // liveness), and a field the upsert did not replace, takes the per-slot join.
        var fastUpserts = BatchedUpsert(Self.appliedRegisterWrites)
        var dotJoins = DotJoinStatements()
        let origin = delta.origin
        let originBlob = Rows.replicaBlob(origin)
        let previous = delta.dependencies[origin]
        let now = configuration.clock.millisecondsSinceEpoch()
        var changes = ChangedFields()
        let seenByOrigin: (Stamp) -> Bool = { $0.hlc <= observed[$0.replica] }
        // The dots waiting to be inserted (`dotJoins`) are of the records before this one: a
        // delta holds each record once (`Delta` checks its records are strictly ascending).
        for change in delta.records {
            // The record's fields for the fast upsert; those it did not replace, to join.
            var fast: [(name: String, value: ScalarValue, hlc: UInt64)] = []
            var slots: [(key: SlotKey, entries: [Entry])] = []
            if change.whole {
                // Shipped whole: every slot it does not carry is empty at the origin.
                let carried = Set(change.slots.map(\.key))
                for (key, slot) in try SlotIO.record(db, change.ref)?.slots ?? [:] where !carried.contains(key) {
                    let kept = slot.entries.filter { !seenByOrigin($0.dot) }
                    guard kept.count < slot.entries.count else { continue }
                    if case let .field(name) = key {
                        try FileHistory.record(db, change.ref, name, superseded: slot.entries, by: kept, at: now)
                    }
                    try SlotIO.replace(db, change.ref, key, with: kept, dirty: 0)
                    changes.note(key.fieldName.map { [$0] } ?? [], of: change.ref)
                }
            }
            for slot in change.slots {
                if case let .field(name) = slot.key, slot.entries.count == 1,
                   slot.entries[0].dot.replica == origin, slot.entries[0].dot.hlc > previous,
                   case let .scalar(value) = slot.entries[0].payload {
                    fast.append((name, value, slot.entries[0].dot.hlc))
                } else {
                    slots.append(slot)
                }
            }
            if !fast.isEmpty {
                let unchanged = try fastUpserts.upsert(db, fast, shared: { binder in
                    binder.bind(change.ref)
                    binder.bind(originBlob, at: 3)
                }, row: { binder, first, row in
                    binder.bind(row.name, at: first)
                    binder.bind(row.value, at: first + 1)
                    binder.bind(Rows.hlc(row.hlc), at: first + 3)
                })
                // The fields it changed are noted at once; those it did not replace are joined.
                let upserted = unchanged.isEmpty ? fast.map(\.name) : fast.map(\.name).filter { name in
                    !unchanged.contains { Bytewise.equal($0.name, name) }
                }
                if !upserted.isEmpty { changes.note(upserted, of: change.ref) }
                for row in unchanged {
                    slots.append((.field(row.name), [Entry(dot: Stamp(hlc: row.hlc, replica: origin), payload: .scalar(row.value))]))
                }
            }
            for slot in slots {
                if slot.key == .liveness || slot.key == .tombstones {
                    if try joinDots(db, &dotJoins, change.ref, slot.key, slot.entries, context: context) {
                        changes.note([], of: change.ref)
                    }
                    continue
                }
                let old = try SlotIO.entries(db, change.ref, slot.key)
                let merged = DotStore.join(
                    old, seenBy: { context.contains($0) },
                    slot.entries, seenBy: seenByOrigin)
                guard merged != old else { continue }
                if case let .field(name) = slot.key {
                    try FileHistory.record(db, change.ref, name, superseded: old, by: merged, at: now)
                }
                try SlotIO.replace(db, change.ref, slot.key, with: merged, dirty: 0)
                changes.note(slot.key.fieldName.map { [$0] } ?? [], of: change.ref)
            }
        }
        try dotJoins.flush(db)
        return changes
    }

    /// The dot-store join for a liveness or tombstone slot, in SQL with nothing read: delete
    /// the local dots the delta's origin had observed and the delta no longer holds, then
    /// insert the delta's dots this store has not seen. Equal to `DotStore.join` (local ∩
    /// delta, local unobserved, delta unseen). Returns whether the slot changed.
    private func joinDots(
        _ db: Database, _ statements: inout DotJoinStatements, _ ref: RecordRef, _ key: SlotKey, _ entries: [Entry], context: CausalContext
    ) throws -> Bool {
        let kind = key == .liveness ? Rows.slotLiveness : Rows.slotTombstones
        // The local dots the origin had observed, less those the delta still holds (local
        // dots are all seen here, so those need no insert either).
        try statements.removal(db, keeping: entries.count).execute { binder in
            binder.bind(ref)
            binder.bind(kind, at: 3)
            for (index, entry) in entries.enumerated() {
                binder.bind(Rows.hlc(entry.dot.hlc), at: Int32(4 + 2 * index))
                binder.bind(Rows.replicaBlob(entry.dot.replica), at: Int32(5 + 2 * index))
            }
        }
        var changed = db.changesCount > 0
        for entry in entries where !context.contains(entry.dot) {
            try statements.insert(db, ref, kind: kind, entry.dot)
            changed = true
        }
        return changed
    }

    func setAppliedSeq(_ db: Database, _ origin: ReplicaID, _ seq: UInt64) throws {
        guard let seq = Int64(exactly: seq) else {
            throw ConcordError(.invalidOperation, "batch \(seq) of replica \(origin) is past the largest seq a store records (2^63 − 1): not applied")
        }
        try db.cachedStatement(sql: """
            INSERT INTO concord_origins (replica, seq) VALUES (?, ?)
            ON CONFLICT (replica) DO UPDATE SET seq = max(seq, excluded.seq)
            """).execute(arguments: [Rows.replicaBlob(origin), seq])
    }

    /// Per remote replica, the seq of its newest delta this store has applied (directly or
    /// through a snapshot).
    public func appliedSeqs() throws(ConcordError) -> [ReplicaID: UInt64] {
        try read { db in
            var seqs: [ReplicaID: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT replica, seq FROM concord_origins") {
                seqs[try Rows.replica(row["replica"])] = UInt64(row["seq"] as Int64)
            }
            return seqs
        }
    }

    /// The files that entries new to this store refer to and the blob directory lacks.
    func missingFiles(in entries: [Entry], seen context: CausalContext) -> [ContentHash] {
        var missing: Set<ContentHash> = []
        for reference in entries.fileReferences where !context.contains(reference.stamp) && !blobs.contains(reference.file.hash) {
            missing.insert(reference.file.hash)
        }
        return missing.sorted()
    }

    /// Rewrites every slot that differs between two states (remote changes: not marked in
    /// the outbox), keeping superseded file versions in history. Returns what changed.
    func rewrite(_ db: Database, from old: StoreState, to new: StoreState) throws -> [RecordRef: Set<String>] {
        let now = configuration.clock.millisecondsSinceEpoch()
        var changes: [RecordRef: Set<String>] = [:]
        for ref in Set(old.records.keys).union(new.records.keys) {
            let before = old.records[ref]?.slots ?? [:]
            let after = new.records[ref]?.slots ?? [:]
            for key in Set(before.keys).union(after.keys) {
                let oldEntries = before[key]?.entries ?? []
                let newEntries = after[key]?.entries ?? []
                guard oldEntries != newEntries else { continue }
                if case let .field(name) = key {
                    try FileHistory.record(db, ref, name, superseded: oldEntries, by: newEntries, at: now)
                }
                try SlotIO.replace(db, ref, key, with: newEntries, dirty: 0)
                changes[ref, default: []].formUnion(key.fieldName.map { [$0] } ?? [])
            }
        }
        guard let vector = new.context.versionVector else {
            throw ConcordError(.malformed, "a joined state's context is not a version vector; only replica snapshots can be joined")
        }
        for (replica, hlc) in vector.entries { try SlotIO.setContext(db, replica, hlc) }
        return changes
    }
}

/// The statements of the apply's liveness and tombstone joins (`joinDots`), prepared once
/// per apply. The dots to insert wait, and are inserted up to ``BatchedUpsert/limit`` in one
/// statement (``flush(_:)``): when that many wait, and at the end of the apply.
private struct DotJoinStatements {
    private var removals: [Int: BoundStatement] = [:]
    /// Dots: parameters 1 to 5 of each row its record's collection and id, the slot's kind,
    /// the hlc and the replica.
    private static let dotInserts = BatchedUpsert.Shape(
        into: "concord_dots (collection, id, kind, hlc, replica)", sharedParameters: 0, parametersPerRow: 5,
        row: { first in "(?\(first), ?\(first + 1), ?\(first + 2), ?\(first + 3), ?\(first + 4))" })
    private var inserts = BatchedUpsert(dotInserts)
    private var pending: [(ref: RecordRef, kind: Int64, dot: Stamp)] = []

    /// Deletes a record's dots of one kind that the delta's origin had observed, except
    /// the `count` dots given: parameters 1 and 2 the record, 3 the kind, then each dot's
    /// hlc and replica.
    mutating func removal(_ db: Database, keeping count: Int) throws -> BoundStatement {
        if let statement = removals[count] { return statement }
        let except = count == 0 ? "" : "AND (hlc, replica) NOT IN (VALUES "
            + (0..<count).map { "(?\(4 + 2 * $0), ?\(5 + 2 * $0))" }.joined(separator: ", ") + ")"
        let statement = BoundStatement(try db.makeStatement(sql: """
            DELETE FROM concord_dots WHERE collection = ?1 AND id = ?2 AND kind = ?3
                AND hlc <= coalesce((SELECT hlc FROM temp.concord_observed o WHERE o.replica = concord_dots.replica), \(Rows.cleanSQL))
                \(except)
            """))
        // A slot of many dots is rare: its statement is not kept.
        if count <= 8 { removals[count] = statement }
        return statement
    }

    /// Inserts one dot of a record's liveness or tombstones (`kind`), with others.
    mutating func insert(_ db: Database, _ ref: RecordRef, kind: Int64, _ dot: Stamp) throws {
        if pending.count == BatchedUpsert.limit { try flush(db) }
        pending.append((ref, kind, dot))
    }

    /// Inserts the dots waiting.
    mutating func flush(_ db: Database) throws {
        guard !pending.isEmpty else { return }
        let rows = pending
        pending.removeAll(keepingCapacity: true)
        try inserts.execute(db, rows) { binder, first, row in
            binder.bind(row.ref, at: first)
            binder.bind(row.kind, at: first + 2)
            binder.bind(Rows.hlc(row.dot.hlc), at: first + 3)
            binder.bind(Rows.replicaBlob(row.dot.replica), at: first + 4)
        }
    }
}
