import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation

extension Store {
    /// A store in `directory` driven by `clock`.
    static func temporary(_ directory: TemporaryDirectory, _ name: String, clock: ManualClock) throws -> Store {
        try Store(path: directory.file(name + ".db"), configuration: .init(clock: clock))
    }

    /// Seals, then applies the delta to every store in `targets`.
    func push(to targets: [Store]) throws {
        guard let delta = try seal() else { return }
        for target in targets { try target.apply(delta) }
    }
}

/// Every store seals; every delta reaches every other store.
func exchange(_ stores: [Store]) throws {
    let deltas = try stores.compactMap { try $0.seal() }
    for store in stores {
        for delta in deltas where delta.origin != store.replicaID { try store.apply(delta) }
    }
}
