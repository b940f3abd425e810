import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import GRDB

extension Store {
    /// A store in `directory` driven by `clock`.
    static func temporary(_ directory: TemporaryDirectory, _ name: String, clock: ManualClock) throws -> Store {
        try Store(path: directory.file(name + ".db"), configuration: .init(clock: clock))
    }

    /// Seals, then applies the delta to every store in `targets`.
    func push(to targets: [Store]) throws {
        guard let delta = try seal()?.delta else { return }
        for target in targets { try target.apply(delta) }
    }
}

/// Every store seals; every delta reaches every other store.
func exchange(_ stores: [Store]) throws {
    let deltas = try stores.compactMap { try $0.seal()?.delta }
    for store in stores {
        for delta in deltas where delta.origin != store.replicaID { try store.apply(delta) }
    }
}

/// Takes a store file back to schema version 4, as that release left it: no record of where
/// its own batches ended, and no record of migration "v5".
func downgradeOwnBatchesToVersionFour(_ db: Database) throws {
    try db.execute(sql: """
        DROP TABLE concord_own_batches;
        DELETE FROM concord_meta WHERE key = 'own_batches_from';
        DELETE FROM grdb_migrations WHERE identifier = 'v5';
        """)
}

/// Takes a store file back to schema version 3, as that release left it: the outbox without
/// its `low` column and that column's index, and no record of migrations "v4" and "v5".
func downgradeOutboxToVersionThree(_ db: Database) throws {
    try downgradeOwnBatchesToVersionFour(db)
    try db.execute(sql: """
        DROP INDEX concord_outbox_low;
        ALTER TABLE concord_outbox DROP COLUMN low;
        DELETE FROM grdb_migrations WHERE identifier = 'v4';
        """)
}

/// Copies a store file with its write-ahead log, if it has one.
func copyStoreFile(_ path: String, to copy: String) throws {
    for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
        try FileManager.default.copyItem(atPath: path + suffix, toPath: copy + suffix)
    }
}

/// Takes a store file back to schema version 5, as that release left it: the sync engine's
/// state and the command line's settings in the one key-value table `concord_sync`, and no
/// record of migration "v6".
func downgradeSyncStateToVersionFive(_ db: Database) throws {
    for table in ["concord_sync_state", "concord_replica_state", "concord_uploaded_files", "concord_pending_reuploads",
                  "concord_object_references", "concord_object_reference_names", "concord_snapshot_covers",
                  "concord_snapshot_cover_seqs", "concord_unopened_heads", "concord_unreferenced_files",
                  "concord_stable_since", "concord_sealed_to_forget", "concord_settings"] {
        try db.execute(sql: "DROP TABLE \(table)")
    }
    try db.execute(sql: """
        CREATE TABLE concord_sync (key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT, WITHOUT ROWID;
        DELETE FROM grdb_migrations WHERE identifier = 'v6';
        """)
}
