import ConcordCodec
import ConcordCore
import Foundation
import GRDB

/// The outbox: local changes not shipped yet, sealed into numbered batches kept until pushed.
extension Store {
    /// Seals the outbox into the next batch, stores its bytes (so a retried push sends the
    /// same bytes) and clears the sealed part of the outbox, in one transaction. Returns the
    /// batch as sealed — its delta, those bytes and the files it references — so a caller
    /// pushing it needs neither to read it back nor to decode it. Nil when nothing changed.
    ///
    /// With `maxSlots`, seals only the oldest writes — every slot whose last local write is
    /// at or before a cut chosen so the delta carries at most `maxSlots` slots (more only
    /// when a single write touched more) — so memory stays bounded however large the
    /// backlog. Call again for the rest. This is exact: a write replaces its own earlier
    /// entries in every slot it touches, so every own dot up to the cut lives in a sealed
    /// slot.
    public func seal(maxSlots: Int? = nil) throws(ConcordError) -> SealedBatch? {
        try writeDatabase { db -> SealedBatch? in
            while true {
                if case let .sealed(batch)? = try sealOnce(db, maxSlots: maxSlots) { return batch }
                // Everything up to the cut belonged to later writes: cleared, try the next cut.
            }
        }
    }

    /// What one try of a seal found: a batch, or nil when the outbox is empty.
    private enum SealTry { case sealed(SealedBatch?) }

    /// One try of ``seal(maxSlots:)``; nil when every slot up to the cut went with a later
    /// write (the outbox is then cleared up to the cut, and the next try cuts further).
    private func sealOnce(_ db: Database, maxSlots: Int?) throws -> SealTry? {
        var dependencies = try SlotIO.context(db)
        var upTo = dependencies[replicaID]
        if let maxSlots, let cut = try outboxCut(db, maxSlots: maxSlots) { upTo = min(upTo, cut) }
        let (batch, fieldRows) = try SlotIO.sealBatch(db, upTo: upTo)
        guard !batch.isEmpty else { return .sealed(nil) }
        dependencies[replicaID] = try meta(db, "sealed_up_to")
        let seq = try meta(db, "sealed_seq") + 1
        var records: [Delta.RecordChange] = []
        records.reserveCapacity(batch.count)
        // Own entries written after the cut are not this batch's: they go with the batch
        // of their own write, whose outbox mark is past the cut and stays.
        let own = replicaID
        let afterCut = { (entry: Entry) in entry.dot.replica == own && entry.dot.hlc > upTo }
        for record in batch {
            if record.whole {
                // Purged since the last seal: shipped whole, with whatever it holds now
                // (up to the cut).
                let slots = (try SlotIO.record(db, record.ref)?.sortedSlots ?? []).compactMap { slot -> (key: SlotKey, entries: [Entry])? in
                    let entries = slot.slot.entries.filter { !afterCut($0) }
                    return entries.isEmpty ? nil : (key: slot.key, entries: entries)
                }
                records.append(Delta.RecordChange(ref: record.ref, slots: slots, whole: true))
                continue
            }
            var slots: [(key: SlotKey, entries: [Entry])] = []
            slots.reserveCapacity(record.slots.count)
            for slot in record.slots {
                // Nearly every slot's entries were read with the outbox (a dirty field's
                // entry is its last own write, at or before the cut); any other is read here.
                if let entries = slot.entries {
                    slots.append((key: slot.key, entries: entries))
                    continue
                }
                let entries = try SlotIO.entries(db, record.ref, slot.key)
                // A field whose entries were removed before the cut (its outbox row) and
                // that was written again after it (its dirty mark): the slot is sealed
                // with that later write, which the next batch carries.
                if case .field = slot.key, entries.contains(where: afterCut) { continue }
                slots.append((key: slot.key, entries: entries))
            }
            if !slots.isEmpty { records.append(Delta.RecordChange(ref: record.ref, slots: slots)) }
        }
        guard !records.isEmpty else {
            try SlotIO.clearOutbox(db, upTo: upTo, fieldRows: fieldRows)
            return nil
        }
        let delta = try Delta(origin: replicaID, seq: seq, dependencies: dependencies, upTo: upTo, records: records)
        let bytes = DeltaCodec.encode(delta)
        try SlotIO.clearOutbox(db, upTo: upTo, fieldRows: fieldRows)
        try db.execute(sql: "INSERT INTO concord_sealed (seq, bytes) VALUES (?, ?)", arguments: [Int64(seq), Data(bytes)])
        try setMeta(db, "sealed_seq", seq)
        try setMeta(db, "sealed_up_to", upTo)
        try recordOwnBatch(db, seq: seq, endingAt: upTo)
        return .sealed(SealedBatch(delta: delta, bytes: bytes))
    }

    /// The greatest write hlc such that the slots last written at or before it number at
    /// most `maxSlots` (or the first write's hlc, if that write alone touched more). Only
    /// the earliest slots are read, not the whole outbox.
    private func outboxCut(_ db: Database, maxSlots: Int) throws -> UInt64? {
        let stamps = try SlotIO.earliestSlotStamps(db, count: max(maxSlots, 0))
        guard var cut = stamps.first else { return nil }
        var start = 0
        while start < stamps.count {
            // The slots of one write (one hlc) are sealed together or not at all.
            let hlc = stamps[start]
            var end = start + 1
            while end < stamps.count, stamps[end] == hlc { end += 1 }
            guard end <= maxSlots else { break }
            cut = hlc
            start = end
        }
        return Rows.hlc(stored: cut)
    }

    /// This replica's sealed batch `seq`, read back: the same value ``seal(maxSlots:)``
    /// returned, its bytes exactly as first sealed. Nil when `seq` was never sealed or its
    /// bytes were forgotten (``forgetSealedDeltas(_:)``).
    public func sealedBatch(seq: UInt64) throws(ConcordError) -> SealedBatch? {
        guard let bytes = try sealedBytes(seq: seq) else { return nil }
        return SealedBatch(delta: try DeltaCodec.decode(bytes), bytes: bytes)
    }

    /// The bytes of sealed batch `seq` alone, for the sync engine's paths that need no
    /// delta: a size compared with the remote's copy, a batch re-sent whose files it kept
    /// from sealing.
    package func sealedBytes(seq: UInt64) throws(ConcordError) -> [UInt8]? {
        // A seq past 2^63 − 1 was never sealed (a planted name may claim one).
        guard let seq = Int64(exactly: seq) else { return nil }
        return try read { db in try Data.fetchOne(db, sql: "SELECT bytes FROM concord_sealed WHERE seq = ?", arguments: [seq]).map { [UInt8]($0) } }
    }

    /// Forgets the bytes of sealed deltas `seqs`, once no push or repair can need them:
    /// their batches were compacted away and a snapshot covers them. Unpushed ones are kept.
    public func forgetSealedDeltas(_ seqs: [UInt64]) throws(ConcordError) {
        guard !seqs.isEmpty else { return }
        try writeDatabase { db in
            let statement = try db.cachedStatement(sql: "DELETE FROM concord_sealed WHERE seq = ?")
            for seq in seqs { if let seq = Int64(exactly: seq) { try statement.execute(arguments: [seq]) } }
            if let newest = seqs.max() { try pruneOwnBatches(db, before: newest) }
        }
    }

    /// The seq of this replica's newest sealed delta (0 before the first).
    public func sealedSeq() throws(ConcordError) -> UInt64 {
        try read { db in try meta(db, "sealed_seq") }
    }

    /// The slots changed locally since the last seal: the outbox.
    public func pendingSlots() throws(ConcordError) -> Set<SlotRef> {
        try read { db in
            Set(try SlotIO.outbox(db).flatMap { ref, keys in keys.map { SlotRef(record: ref, key: $0) } })
        }
    }

    /// Whether anything changed locally since the last seal: one probe of the outbox, where
    /// ``pendingChangeCount()`` reads all of it.
    public func hasPendingChanges() throws(ConcordError) -> Bool {
        try read { db in !(try SlotIO.outboxIsEmpty(db)) }
    }

    /// How many slots changed locally since the last seal.
    public func pendingChangeCount() throws(ConcordError) -> Int {
        // A purged record counts once: it has no slot of its own in the outbox.
        try read { db in try SlotIO.outbox(db).values.reduce(0) { $0 + max($1.count, 1) } }
    }
}
