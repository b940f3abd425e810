import ConcordCodec
import ConcordCore
import Foundation
import GRDB

/// The SQLite schema (docs/ARCHITECTURE.md §3), managed by GRDB migrations so a later release can
/// migrate an existing file. Every table is prefixed `concord_`; apps may read them with
/// SQL and observe them with GRDB, but write only through ``Store``.
///
/// - `concord_fields`: one row per scalar or file field — its current value and stamp, so a
///   common write is one upsert. `versions` counts the field's entries; those beyond the
///   winner (concurrent writes, file forks) are in `concord_field_versions`.
/// - `concord_elements`: one row per surviving add of a set element.
/// - `concord_dots`: liveness dots (kind 0) and tombstones (kind 1) of records.
/// - `concord_outbox`: slots changed locally since the last seal (field rows carry a
///   `dirty` column instead, so the common write needs no second row). Both record the hlc
///   of the local write that last touched the slot (`dirty` holds hlc 0 when clean), so the
///   outbox can be sealed in bounded batches in write order. A row of kind 4 marks a purged record, which the
///   next delta ships whole. A record with a dirty field always has its liveness row in the
///   outbox, with an hlc at least its fields' `dirty`: every local write renews the
///   record's liveness in the same transaction. The seal finds dirty fields through those
///   rows, so no index of dirty fields is kept up to date on every write (migration "v3").
///   Each row's `low` is at most the hlc of every slot it stands for — its own, and for a
///   liveness row its record's dirty fields' — and is indexed: a bounded seal reads only the
///   rows of `low` up to its cut, not the whole outbox (migration "v4").
/// - `concord_context`: the version vector of everything this replica has applied.
/// - `concord_sealed`: sealed deltas' bytes, kept so a retried push sends identical bytes.
/// - `concord_own_batches`: per own batch sealed, the stamp it ended at: another replica's
///   batch can only depend on this replica up to one of them, so a batch that depends on
///   another stamp shows this store is an older copy of itself (migration "v5"). Complete
///   from seq `own_batches_from` in `concord_meta` on. Seq 0 is where a new identity's
///   context starts (the writes it took over), which a snapshot may show before a batch.
/// - `concord_history`: superseded file versions, kept for the retention window.
/// - `concord_origins`: per remote replica, the seq of its newest delta applied here, and of
///   the newest batch of it applied as a batch (not through a snapshot) its seq, the stamp
///   it ended at, its fingerprint and its size on the remote (`batch_seq`, `batch_up_to`,
///   `batch_fingerprint`, `batch_size`, migration "v8-batch-fingerprints"; NULL until one is): a batch under that name with
///   other contents, or a next batch that follows another end, is a fork of that replica's
///   history (``Store/appliedBatches()``).
/// - `concord_forks` (migration "v14-history-forks"): per fork of a replica's history this
///   store knows (replica, the seq `k` where it parts), the common prefix's last stamp
///   (`after`), the fingerprints of the two sides' batches at `k` (`side2` NULL until
///   known), the one this store holds (`held`, NULL for neither), the own seq through which
///   its own batches saw that side (`through`, set when it merges), whether it merged it and
///   the fingerprint of the remote's batch at `k` when it was read (`remote_side`, 0 when
///   none was there) (``Store/historyForks()``).
///   `concord_fork_holders`: the same for other replicas, as their heads tell it.
/// - The sync engine's own state (migration "v6"; ``Store/syncState(_:)``), each column of
///   one type — numbers (seqs, and times in milliseconds since the epoch) as their 64-bit
///   pattern, ids and digests as their bytes, remote paths and keyed file names as text:
///   - `concord_sync_state`: one row (`id` 0) of single values: the remote store's id, the
///     `concord.json` kept, the pushed seq, the newest own snapshot and head, … A column
///     never set is NULL, or its default (0).
///   - `concord_replica_state`: per replica, when its newest head said it synced
///     (`seen_at`), when this replica retired it (`retired_at`), how far its clock was
///     found ahead (`clock_skew`); NULL where not known.
///   - `concord_uploaded_files`: per file (content hash), when this replica last uploaded
///     it. `concord_pending_reuploads`: files whose re-upload has not succeeded yet.
///   - `concord_object_references`: the remote batches and snapshots whose referenced files
///     are known, and `concord_object_reference_names` those files' keyed names (a child
///     row per name).
///   - `concord_snapshot_covers`: the remote snapshots whose coverage is known, and
///     `concord_snapshot_cover_seqs` per origin the newest seq each contains.
///   - `concord_unopened_heads`: head names whose object did not open, with the size and
///     time the listing gave (NULL where it gave none).
///   - `concord_unreferenced_files`: per keyed file name, when this replica first found the
///     remote file unreferenced.
///   - `concord_stable_since`: per deleted record, when its deletion was first found stable.
///   - `concord_sealed_to_forget`: own batches whose sealed bytes a compaction of an older
///     release left to forget.
/// - `concord_declarations` and `concord_declared_pending` (migration "v7"): the declared
///   collections, and the records whose declared rows wait to be pivoted before their
///   transaction commits (`Declared/DeclaredTables.swift`). Each declaration has tables of
///   its own (``CollectionDeclaration/tableName``), made by ``Store/declare(_:)``; each
///   row says whether it holds its record whole (`concord_whole`, migration
///   "v9-declared-whole-rows", which makes every declared table again).
/// - `concord_settings`: text by key: an application's settings (the `concord` command
///   line's remote), which the store never reads, and under `schema.` keys what the store
///   and the sync keep of schema versions — the fleet's, the minimum, the heads last read
///   for them (`Declared/Evolution/SchemaVersions.swift`).
///
/// The tables apps read (`concord_fields`, `concord_elements`, `concord_dots`) are rowid
/// tables: SQLite does not report changes to WITHOUT ROWID tables to its update hook, and
/// GRDB's observation needs those reports.
///
/// Every `hlc` column, and `dirty`, holds a stamp with its top bit flipped (`Rows.hlc(_:)`):
/// SQLite's integers are signed, and stamps of 2^63 and above (a clock past the year 6429)
/// must still compare above the others. Version 1 stored the plain bit pattern; migration
/// "v2" rewrites every such column.
enum Schema {
    /// The schema version this release writes: the number of the newest migration.
    static let version = 14

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE concord_meta (key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT;
                CREATE TABLE concord_context (replica BLOB PRIMARY KEY NOT NULL, hlc INTEGER NOT NULL) STRICT, WITHOUT ROWID;
                CREATE TABLE concord_fields (
                    collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
                    kind INTEGER NOT NULL,          -- 0 null, 1 bool, 2 int, 3 double, 4 string, 5 bytes, 6 file
                    value ANY,                      -- the scalar; for a file, its hash (32-byte BLOB)
                    file_size INTEGER, media_type TEXT,
                    hlc INTEGER NOT NULL, replica BLOB NOT NULL,
                    versions INTEGER NOT NULL DEFAULT 1,
                    dirty INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (collection, id, field)
                ) STRICT;
                CREATE INDEX concord_fields_dirty ON concord_fields (dirty) WHERE dirty > 0;
                CREATE TABLE concord_field_versions (
                    collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
                    hlc INTEGER NOT NULL, replica BLOB NOT NULL,
                    kind INTEGER NOT NULL, value ANY, file_size INTEGER, media_type TEXT,
                    PRIMARY KEY (collection, id, field, hlc, replica)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE concord_elements (
                    collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
                    element BLOB NOT NULL,          -- canonical encoding (docs/FORMAT.md §4.5)
                    hlc INTEGER NOT NULL, replica BLOB NOT NULL,
                    PRIMARY KEY (collection, id, field, element, hlc, replica)
                ) STRICT;
                CREATE TABLE concord_dots (
                    collection TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL,
                    hlc INTEGER NOT NULL, replica BLOB NOT NULL,
                    PRIMARY KEY (collection, id, kind, hlc, replica)
                ) STRICT;
                CREATE TABLE concord_outbox (
                    collection TEXT NOT NULL, id TEXT NOT NULL, kind INTEGER NOT NULL,
                    field TEXT NOT NULL, element BLOB NOT NULL, hlc INTEGER NOT NULL,
                    PRIMARY KEY (collection, id, kind, field, element)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE concord_sealed (seq INTEGER PRIMARY KEY NOT NULL, bytes BLOB NOT NULL) STRICT;
                CREATE TABLE concord_history (
                    collection TEXT NOT NULL, id TEXT NOT NULL, field TEXT NOT NULL,
                    hash BLOB NOT NULL, file_size INTEGER NOT NULL, media_type TEXT,
                    hlc INTEGER NOT NULL, replica BLOB NOT NULL,
                    superseded_at INTEGER NOT NULL, -- local milliseconds since the epoch
                    PRIMARY KEY (collection, id, field, hlc, replica)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE concord_origins (replica BLOB PRIMARY KEY NOT NULL, seq INTEGER NOT NULL) STRICT, WITHOUT ROWID;
                CREATE TABLE concord_sync (key TEXT PRIMARY KEY NOT NULL, value ANY) STRICT, WITHOUT ROWID;
                CREATE VIEW concord_records AS
                    SELECT DISTINCT collection, id FROM concord_dots WHERE kind = 0;
                """)
        }
        migrator.registerMigration("v2") { db in
            try migrateToOrderedStamps(db)
        }
        migrator.registerMigration("v3") { db in
            try migrateToOutboxIndexedDirtyFields(db)
        }
        migrator.registerMigration("v4") { db in
            try migrateToOutboxLows(db)
        }
        migrator.registerMigration("v5") { db in
            try migrateToOwnBatchEnds(db)
        }
        migrator.registerMigration("v6") { db in
            try migrateToTypedSyncState(db)
        }
        migrator.registerMigration("v7") { db in
            try migrateToDeclaredCollections(db)
        }
        migrator.registerMigration("v8-batch-fingerprints") { db in
            try db.execute(sql: """
                ALTER TABLE concord_origins ADD COLUMN batch_seq INTEGER;
                ALTER TABLE concord_origins ADD COLUMN batch_up_to INTEGER;
                ALTER TABLE concord_origins ADD COLUMN batch_fingerprint INTEGER;
                ALTER TABLE concord_origins ADD COLUMN batch_size INTEGER;
                """)
        }
        migrator.registerMigration("v9-declared-whole-rows") { db in
            try migrateToWholeDeclaredRows(db)
        }
        migrator.registerMigration("v10-files-on-demand") { db in
            try migrateToFilesOnDemand(db)
        }
        migrator.registerMigration("v11-declared-write-path") { db in
            try migrateToDeclaredWritePath(db)
        }
        migrator.registerMigration("v12-file-prefetch-and-scopes") { db in
            try migrateToFilePrefetchAndScopes(db)
        }
        migrator.registerMigration("v13-key-generations") { db in
            try db.execute(sql: """
                ALTER TABLE concord_sync_state ADD COLUMN key_objects BLOB;
                ALTER TABLE concord_sync_state ADD COLUMN removed_from_store TEXT;
                """)
        }
        migrator.registerMigration("v14-history-forks") { db in
            // Forks of a replica's history this store knows of (docs/ARCHITECTURE.md §4,
            // "Merging a fork"), and which side other replicas held when they merged one.
            try db.execute(sql: """
                CREATE TABLE concord_forks (
                    replica BLOB NOT NULL, seq INTEGER NOT NULL, after INTEGER NOT NULL,
                    side1 INTEGER NOT NULL, side2 INTEGER, held INTEGER, through INTEGER,
                    merged INTEGER NOT NULL DEFAULT 0, remote_side INTEGER,
                    PRIMARY KEY (replica, seq)
                ) STRICT, WITHOUT ROWID;
                CREATE TABLE concord_fork_holders (
                    replica BLOB NOT NULL, seq INTEGER NOT NULL, holder BLOB NOT NULL,
                    held INTEGER NOT NULL, through INTEGER NOT NULL,
                    PRIMARY KEY (replica, seq, holder)
                ) STRICT, WITHOUT ROWID;
                """)
        }
        return migrator
    }
}

extension Schema {
    /// Migration "v2": rewrites every stored stamp from its plain bit pattern to the ordered
    /// form (top bit flipped), and the outbox index to the new form of "clean".
    ///
    /// Tables whose primary key holds the stamp are copied out and back, so that a store
    /// already holding a stamp on each side of 2^63 cannot collide with itself halfway.
    fileprivate static func migrateToOrderedStamps(_ db: Database) throws {
        func flipped(_ column: String) -> String {
            "(CASE WHEN \(column) >= 0 THEN \(column) - 9223372036854775807 - 1 ELSE \(column) + 9223372036854775807 + 1 END)"
        }
        try db.execute(sql: """
            UPDATE concord_fields SET hlc = \(flipped("hlc")), dirty = \(flipped("dirty"));
            UPDATE concord_context SET hlc = \(flipped("hlc"));
            UPDATE concord_outbox SET hlc = \(flipped("hlc"));
            DROP INDEX concord_fields_dirty;
            CREATE INDEX concord_fields_dirty ON concord_fields (dirty) WHERE dirty > \(Rows.cleanSQL);
            """)
        for table in ["concord_field_versions", "concord_elements", "concord_dots", "concord_history"] {
            let columns = try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))").map { $0["name"] as String }
            let selected = columns.map { $0 == "hlc" ? flipped("hlc") : $0 }.joined(separator: ", ")
            try db.execute(sql: """
                CREATE TEMP TABLE concord_migrating AS SELECT \(selected) FROM \(table);
                DELETE FROM \(table);
                INSERT INTO \(table) (\(columns.joined(separator: ", "))) SELECT * FROM temp.concord_migrating;
                DROP TABLE temp.concord_migrating;
                """)
        }
    }

    /// Migration "v3": drops the partial index of dirty fields, which every field write had
    /// to keep up to date, and gives every record with a dirty field a liveness row in the
    /// outbox at least as late as its fields' marks, which the seal now finds them through.
    /// (Local writes always renewed the record's liveness, but a change of identity re-marked
    /// fields alone, so a row is added wherever one might be missing.)
    fileprivate static func migrateToOutboxIndexedDirtyFields(_ db: Database) throws {
        try db.execute(sql: """
            INSERT INTO concord_outbox (collection, id, kind, field, element, hlc)
                SELECT collection, id, \(Rows.slotLiveness), '', x'', max(dirty) FROM concord_fields
                    WHERE dirty > \(Rows.cleanSQL) GROUP BY collection, id
                ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc);
            DROP INDEX concord_fields_dirty;
            """)
    }

    /// Migration "v4": gives every outbox row its `low` — the earliest local write among the
    /// slots it stands for: its own hlc, and for a liveness row also its record's dirty
    /// fields' marks — and indexes it. A bounded seal reads the rows in `low` order and stops
    /// past its cut, where it read the whole outbox and every dirty field for each batch.
    fileprivate static func migrateToOutboxLows(_ db: Database) throws {
        try db.execute(sql: """
            ALTER TABLE concord_outbox ADD COLUMN low INTEGER NOT NULL DEFAULT \(Rows.cleanSQL);
            UPDATE concord_outbox SET low = CASE WHEN kind = \(Rows.slotLiveness) THEN min(hlc, coalesce(
                (SELECT min(f.dirty) FROM concord_fields f WHERE f.collection = concord_outbox.collection AND f.id = concord_outbox.id
                    AND f.dirty > \(Rows.cleanSQL)), hlc)) ELSE hlc END;
            CREATE INDEX concord_outbox_low ON concord_outbox (low);
            """)
    }

    /// Migration "v5": the table of where each own batch ended. What a store of version 4
    /// still knows goes in: the newest sealed batch's end, and the ends of the batches whose
    /// bytes it keeps, back to the first gap; `own_batches_from` says where the record is
    /// complete from. A new store's record is complete from seq 1.
    fileprivate static func migrateToOwnBatchEnds(_ db: Database) throws {
        try db.execute(sql: "CREATE TABLE concord_own_batches (seq INTEGER PRIMARY KEY NOT NULL, up_to INTEGER NOT NULL) STRICT")
        func meta(_ key: String) throws -> UInt64 {
            UInt64(bitPattern: try Int64.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = ?", arguments: [key]) ?? 0)
        }
        let sealed = try meta("sealed_seq")
        var from: UInt64 = 1
        if sealed > 0, let newest = Int64(exactly: sealed) {
            var ends: [Int64: UInt64] = [newest: try meta("sealed_up_to")]
            var seq = newest - 1
            // Each kept batch's end; its own bytes say so.
            while seq > 0, let bytes = try Data.fetchOne(db, sql: "SELECT bytes FROM concord_sealed WHERE seq = ?", arguments: [seq]),
                let delta = try? DeltaCodec.decode([UInt8](bytes)) {
                ends[seq] = delta.upTo
                seq -= 1
            }
            from = UInt64(seq + 1)
            for (seq, end) in ends {
                try db.execute(sql: "INSERT INTO concord_own_batches (seq, up_to) VALUES (?, ?)", arguments: [seq, Rows.hlc(end)])
            }
        }
        try db.execute(sql: "INSERT OR REPLACE INTO concord_meta (key, value) VALUES ('own_batches_from', ?)", arguments: [Int64(bitPattern: from)])
    }

    /// Migration "v6": the sync engine's state and the command line's settings leave the
    /// key-value table `concord_sync` (decimal strings, comma lists and JSON in text under
    /// string keys) for tables of one type per column. Every row is parsed as the release
    /// that wrote it read it; a row that does not parse (only damage could have written one)
    /// is dropped: that release read it as absent or 0 too, and most of this state only
    /// caches what the remote says, which the next sync reads again.
    fileprivate static func migrateToTypedSyncState(_ db: Database) throws {
        try db.execute(sql: """
            CREATE TABLE concord_sync_state (
                id INTEGER PRIMARY KEY NOT NULL CHECK (id = 0),
                remote_store_id BLOB, manifest BLOB,
                pushed_seq INTEGER NOT NULL DEFAULT 0, own_loss INTEGER,
                snapshot_seq INTEGER, snapshot_digest BLOB, snapshot_attempt INTEGER,
                snapshot_covered INTEGER NOT NULL DEFAULT 0,
                head_advertised TEXT, head_written_at INTEGER NOT NULL DEFAULT 0,
                republish_pending INTEGER NOT NULL DEFAULT 0,  -- 0 or 1
                loss_checked_at INTEGER NOT NULL DEFAULT 0,
                orphans_of BLOB
            ) STRICT;
            INSERT INTO concord_sync_state (id) VALUES (0);
            CREATE TABLE concord_replica_state (
                replica BLOB PRIMARY KEY NOT NULL, seen_at INTEGER, retired_at INTEGER, clock_skew INTEGER
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_uploaded_files (hash BLOB PRIMARY KEY NOT NULL, uploaded_at INTEGER NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_pending_reuploads (hash BLOB PRIMARY KEY NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_object_references (path TEXT PRIMARY KEY NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_object_reference_names (
                path TEXT NOT NULL, name TEXT NOT NULL, PRIMARY KEY (path, name)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_snapshot_covers (path TEXT PRIMARY KEY NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_snapshot_cover_seqs (
                path TEXT NOT NULL, replica BLOB NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (path, replica)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_unopened_heads (path TEXT PRIMARY KEY NOT NULL, size INTEGER, modified INTEGER) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_unreferenced_files (name TEXT PRIMARY KEY NOT NULL, since INTEGER NOT NULL) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_stable_since (
                collection TEXT NOT NULL, id TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (collection, id)
            ) STRICT, WITHOUT ROWID;
            CREATE TABLE concord_sealed_to_forget (seq INTEGER PRIMARY KEY NOT NULL) STRICT;
            CREATE TABLE concord_settings (key TEXT PRIMARY KEY NOT NULL, value TEXT NOT NULL) STRICT, WITHOUT ROWID;
            """)
        for row in try Row.fetchAll(db, sql: "SELECT key, value FROM concord_sync") {
            let key: String = row[0]
            let value: DatabaseValue = row[1]
            let text: String
            switch value.storage {
            case let .string(string): text = string
            case let .int64(number): text = String(number)
            case let .blob(data): text = String(decoding: data, as: UTF8.self)
            case .double, .null: continue
            }
            try moveSyncValue(db, key: key, text: text)
        }
        try db.execute(sql: "DROP TABLE concord_sync")
    }

    /// Moves one row of the old key-value table to its typed place, if it parses.
    private static func moveSyncValue(_ db: Database, key: String, text: String) throws {
        func number(_ text: some StringProtocol) -> Int64? { UInt64(text).map { Int64(bitPattern: $0) } }
        func single(_ column: String, _ value: (any DatabaseValueConvertible)?) throws {
            guard let value else { return }
            try db.execute(sql: "UPDATE concord_sync_state SET \(column) = ? WHERE id = 0", arguments: [value])
        }
        func suffix(_ prefix: String) -> String? { key.hasPrefix(prefix) ? String(key.dropFirst(prefix.count)) : nil }
        switch key {
        case "remote.storeID": try single("remote_store_id", text.utf8.count == 32 ? Hex.decode(text).map { Data($0) } : nil)
        case "remote.manifest": try single("manifest", Data(text.utf8))
        case "push.seq": try single("pushed_seq", number(text))
        case "ownLoss.seq": try single("own_loss", number(text))
        case "snapshot.seq": try single("snapshot_seq", number(text))
        case "snapshot.digest": try single("snapshot_digest", ContentHash(hex: text).map { Data($0.bytes) })
        case "snapshot.attempt": try single("snapshot_attempt", number(text))
        case "snapshot.covered": try single("snapshot_covered", number(text))
        case "head.advertised": try single("head_advertised", text)
        case "head.writtenAt": try single("head_written_at", number(text))
        case "republish.pending": try single("republish_pending", 1 as Int64)
        case "loss.checkedAt": try single("loss_checked_at", number(text))
        case "restored.orphansOf": try single("orphans_of", ReplicaID(hex: text).map(Rows.replicaBlob))
        case "sealed.forget":
            for seq in text.split(separator: ",").compactMap({ number($0) }) {
                try db.execute(sql: "INSERT OR IGNORE INTO concord_sealed_to_forget (seq) VALUES (?)", arguments: [seq])
            }
        default:
            if let (column, hex) = suffix("seen.").map({ ("seen_at", $0) }) ?? suffix("retired.").map({ ("retired_at", $0) })
                ?? suffix("skew.").map({ ("clock_skew", $0) }) {
                guard let replica = ReplicaID(hex: hex), let value = number(text) else { return }
                try db.execute(
                    sql: "INSERT INTO concord_replica_state (replica, \(column)) VALUES (?, ?) ON CONFLICT (replica) DO UPDATE SET \(column) = excluded.\(column)",
                    arguments: [Rows.replicaBlob(replica), value])
            } else if let hex = suffix("uploaded.") {
                guard let hash = ContentHash(hex: hex), let at = number(text) else { return }
                try db.execute(sql: "INSERT INTO concord_uploaded_files (hash, uploaded_at) VALUES (?, ?)", arguments: [Data(hash.bytes), at])
            } else if let hex = suffix("reupload.") {
                guard let hash = ContentHash(hex: hex) else { return }
                try db.execute(sql: "INSERT INTO concord_pending_reuploads (hash) VALUES (?)", arguments: [Data(hash.bytes)])
            } else if let path = suffix("references.") {
                // A comma list of keyed names (which hold no comma); empty for none.
                try db.execute(sql: "INSERT INTO concord_object_references (path) VALUES (?)", arguments: [path])
                for name in Set(text.split(separator: ",").map(String.init)) {
                    try db.execute(sql: "INSERT INTO concord_object_reference_names (path, name) VALUES (?, ?)", arguments: [path, name])
                }
            } else if let path = suffix("covers.") {
                // JSON: an object of replica ids (hex) to seqs.
                guard let covers = try? JSONDecoder().decode([String: UInt64].self, from: Data(text.utf8)) else { return }
                try db.execute(sql: "INSERT INTO concord_snapshot_covers (path) VALUES (?)", arguments: [path])
                for (hex, seq) in covers {
                    guard let replica = ReplicaID(hex: hex) else { continue }
                    try db.execute(sql: "INSERT OR REPLACE INTO concord_snapshot_cover_seqs (path, replica, seq) VALUES (?, ?, ?)",
                                   arguments: [path, Rows.replicaBlob(replica), Int64(bitPattern: seq)])
                }
            } else if let path = suffix("unopened.") {
                // "<size> <time>", either `-` when the listing gave none.
                let parts = text.split(separator: " ", omittingEmptySubsequences: false)
                guard parts.count == 2 else { return }
                let size = parts[0] == "-" ? nil : number(parts[0])
                let modified = parts[1] == "-" ? nil : number(parts[1])
                guard (size != nil || parts[0] == "-"), (modified != nil || parts[1] == "-"), size != nil || modified != nil else { return }
                try db.execute(sql: "INSERT INTO concord_unopened_heads (path, size, modified) VALUES (?, ?, ?)", arguments: [path, size, modified])
            } else if let name = suffix("unreferenced.") {
                guard let since = number(text) else { return }
                try db.execute(sql: "INSERT INTO concord_unreferenced_files (name, since) VALUES (?, ?)", arguments: [name, since])
            } else if let keyed = suffix("stable.") {
                // "<collection's length in UTF-8 bytes>:<collection><id>".
                guard let colon = keyed.firstIndex(of: ":"), let length = Int(keyed[..<colon]), let since = number(text) else { return }
                let rest = Array(keyed[keyed.index(after: colon)...].utf8)
                guard length <= rest.count, let collection = String(validating: rest[..<length], as: UTF8.self),
                      let id = String(validating: rest[length...], as: UTF8.self) else { return }
                try db.execute(sql: "INSERT OR REPLACE INTO concord_stable_since (collection, id, since) VALUES (?, ?, ?)", arguments: [collection, id, since])
            } else if let setting = suffix("cli.") {
                try db.execute(sql: "INSERT OR REPLACE INTO concord_settings (key, value) VALUES (?, ?)", arguments: [setting, text])
            }
        }
    }
}
