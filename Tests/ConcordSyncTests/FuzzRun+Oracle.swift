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
}
