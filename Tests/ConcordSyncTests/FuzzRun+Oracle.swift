import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTestServers
import ConcordTesting
import Foundation
import Synchronization
import GRDB
import Testing

/// The oracle's reading of dots: which were written again under new stamps, what a
/// replica had seen, and rule 4 held against purges.
extension FuzzRun {
    /// A restored store re-stamps its writes past what the remote held under its new id,
    /// same hlc: (old, h) lives on as (new, h).
    func restamped(_ dot: Stamp) -> [Stamp] {
        identityChanges.filter { $0.old == dot.replica }.map { Stamp(hlc: dot.hlc, replica: $0.new) }
    }
    func original(_ dot: Stamp) -> [Stamp] {
        identityChanges.filter { $0.new == dot.replica }.map { Stamp(hlc: dot.hlc, replica: $0.old) }
    }

    /// Whether a replica whose version vector was `seen` had seen `dot` (under either id of
    /// a restored store).
    func saw(_ seen: VersionVector, _ dot: Stamp) -> Bool {
        ([dot] + restamped(dot) + original(dot)).contains { seen[$0.replica] >= $0.hlc }
    }

    /// Rule 4 on its own terms: a delete concurrent with an update leaves the record alive
    /// with all its fields. For every such pair that no later delete resolved (one that saw
    /// the update), no field entry the updater held, and none it made, may have been dropped
    /// by a metadata purge — the purge must wait until the deletion is stable everywhere,
    /// and a concurrent update makes the record visible again.
    func ruleFourFailures(present: [SlotRef: Set<Stamp>]) -> [String] {
        var failures: [String] = []
        let deletes = recordOps.filter { $0.tombstone != nil }
        for update in recordOps where update.tombstone == nil && !update.made.isEmpty {
            // Every entry it made was lost with its device, restored before it pushed them:
            // for every other replica the update never happened, and the delete stands alone.
            if update.made.isSubset(of: lostAtRestore) { continue }
            for delete in deletes where delete.ref == update.ref {
                guard let tombstone = delete.tombstone, !update.made.contains(where: { saw(delete.seen, $0) }), !saw(update.seen, tombstone) else { continue }
                // Resolved: a later delete saw the update (the record may go, and be purged).
                if deletes.contains(where: { later in later.ref == update.ref && update.made.contains { saw(later.seen, $0) } }) { continue }
                var slots = update.held
                for (slot, dots) in update.madeBySlot { slots[slot, default: []].formUnion(dots) }
                for (slot, dots) in slots {
                    for dot in dots where purged[slot]?[dot].map({ waived in !waived.contains(update.id) && !restamped(Stamp(hlc: 0, replica: update.id)).contains { waived.contains($0.replica) } }) ?? false
                        && !(removedLocally[slot]?.contains(dot) ?? false)
                        && !([dot] + restamped(dot)).contains(where: { present[slot]?.contains($0) ?? false }) {
                        failures.append("rule 4: a purge dropped \(slot.record) \(slot.key) \(dot), though update \(update.made.sorted().first!) by r\(update.replica) was concurrent with delete \(tombstone) by r\(delete.replica)")
                    }
                }
            }
        }
        return failures
    }

    /// A write the purge did not wait for is written back by the store itself, inside a
    /// sync (docs/ARCHITECTURE.md §4): after a purge that had not seen one of replica `r`'s
    /// own liveness dots takes fields from a record that dot keeps alive, `r` writes those
    /// fields again as a local write. The oracle learns of it here, after each sync and
    /// compaction of `r`: an entry of `r`'s id that no local operation created must be such
    /// a write, of a value some operation wrote in that slot, on a record `r` had written
    /// to. Its put observed every earlier entry of `r` in the slots it wrote.
    func noteWriteBacks(_ r: Int) throws {
        let id = stores[r].replicaID
        let ids = Set([id] + identityChanges.filter { $0.new == id }.map(\.old))
        for ref in Self.refs {
            guard let record = try stores[r].rawRecord(ref) else { continue }
            for (key, slot) in record.slots {
                let slotRef = SlotRef(record: ref, key: key)
                let known = everCreated[slotRef] ?? []
                let new = slot.entries.filter { entry in
                    ids.contains(entry.dot.replica) && !known.contains(entry.dot) && !original(entry.dot).contains { known.contains($0) }
                }
                guard let top = new.map(\.dot.hlc).max() else { continue }
                guard recordOps.contains(where: { $0.ref == ref && ids.contains($0.id) && $0.tombstone == nil }) else {
                    purgeFailures.append("r\(r) holds \(ref) \(key) \(new.map(\.dot)) though it never wrote to the record")
                    continue
                }
                if case .field = key {
                    let values = Set((written[slotRef] ?? [:]).values)
                    for entry in new where !values.contains(entry.payload) {
                        purgeFailures.append("r\(r) wrote back \(ref) \(key) \(entry.dot) holding \(entry.payload), a value nobody wrote there")
                    }
                }
                for entry in new {
                    created[slotRef, default: []].insert(entry.dot)
                    everCreated[slotRef, default: []].insert(entry.dot)
                    written[slotRef, default: [:]][entry.dot] = entry.payload
                }
                let present = Set(slot.entries.map(\.dot))
                let observed = (created[slotRef] ?? []).filter { ids.contains($0.replica) && $0.hlc < top && !present.contains($0) }
                removed[slotRef, default: []].formUnion(observed)
                trace.log("r\(r) wrote back \(ref) \(key) as \(new.map(\.dot))")
                stats.count("writtenBack")
            }
        }
    }
}
