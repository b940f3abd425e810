import ConcordCodec
import ConcordCore
import Foundation
import GRDB

extension SlotIO {
    // MARK: Writing

    /// Replaces a slot's entries. A local write passes its hlc as `dirty`, marking the slot
    /// in the outbox; remote changes pass 0 and leave an existing mark as it is.
    static func replace(_ db: Database, _ ref: RecordRef, _ key: SlotKey, with entries: [Entry], dirty: UInt64) throws {
        switch key {
        case .liveness, .tombstones:
            let kind = key == .liveness ? Rows.slotLiveness : Rows.slotTombstones
            try db.cachedStatement(sql: "DELETE FROM concord_dots WHERE collection = ? AND id = ? AND kind = ?")
                .execute(arguments: [ref.collection, ref.id, kind])
            let insert = try db.cachedStatement(sql: "INSERT INTO concord_dots (collection, id, kind, hlc, replica) VALUES (?, ?, ?, ?, ?)")
            for entry in entries {
                try insert.execute(arguments: [ref.collection, ref.id, kind, Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica)])
            }
            if dirty > 0 { try markOutbox(db, ref, kind: kind, field: "", element: Data(), hlc: dirty) }
        case let .element(name, element):
            let encoded = Data(ScalarCodec.encode(element))
            try db.cachedStatement(sql: "DELETE FROM concord_elements WHERE collection = ? AND id = ? AND field = ? AND element = ?")
                .execute(arguments: [ref.collection, ref.id, name, encoded])
            let insert = try db.cachedStatement(sql: """
                INSERT INTO concord_elements (collection, id, field, element, hlc, replica) VALUES (?, ?, ?, ?, ?, ?)
                """)
            for entry in entries {
                try insert.execute(arguments: [ref.collection, ref.id, name, encoded, Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica)])
            }
            if dirty > 0 { try markOutbox(db, ref, kind: Rows.slotElement, field: name, element: encoded, hlc: dirty) }
        case let .field(name):
            try db.cachedStatement(sql: "DELETE FROM concord_field_versions WHERE collection = ? AND id = ? AND field = ?")
                .execute(arguments: [ref.collection, ref.id, name])
            guard let winner = entries.last else {
                try db.cachedStatement(sql: "DELETE FROM concord_fields WHERE collection = ? AND id = ? AND field = ?")
                    .execute(arguments: [ref.collection, ref.id, name])
                if dirty > 0 { try markOutbox(db, ref, kind: Rows.slotField, field: name, element: Data(), hlc: dirty) }
                return
            }
            // The seal finds dirty fields through their record's liveness row in the outbox.
            if dirty > 0 { try markOutbox(db, ref, kind: Rows.slotLiveness, field: "", element: Data(), hlc: dirty) }
            let columns = Rows.columns(winner.payload)
            try db.cachedStatement(sql: """
                INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                ON CONFLICT (collection, id, field) DO UPDATE SET
                    kind = ?4, value = ?5, file_size = ?6, media_type = ?7, hlc = ?8, replica = ?9, versions = ?10,
                    dirty = max(concord_fields.dirty, ?11)
                """).execute(arguments: [
                    ref.collection, ref.id, name, columns.kind, columns.value, columns.size, columns.type,
                    Rows.hlc(winner.dot.hlc), Rows.replicaBlob(winner.dot.replica), entries.count, Rows.hlc(dirty),
                ])
            let insert = try db.cachedStatement(sql: """
                INSERT INTO concord_field_versions (collection, id, field, hlc, replica, kind, value, file_size, media_type)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for entry in entries.dropLast() {
                let columns = Rows.columns(entry.payload)
                try insert.execute(arguments: [
                    ref.collection, ref.id, name, Rows.hlc(entry.dot.hlc), Rows.replicaBlob(entry.dot.replica),
                    columns.kind, columns.value, columns.size, columns.type,
                ])
            }
        }
    }

    /// Marks a slot in the outbox: parameters 1 to 5 the row's key, 6 the write's hlc. A new
    /// row's `low` is that hlc; an existing row keeps its own, which is no later (the clock
    /// only moves forward).
    static let markOutboxSQL = """
        INSERT INTO concord_outbox (collection, id, kind, field, element, hlc, low) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)
        ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc)
        """

    static func markOutbox(_ db: Database, _ ref: RecordRef, kind: Int64, field: String, element: Data, hlc: UInt64) throws {
        try db.cachedStatement(sql: markOutboxSQL).execute(arguments: [ref.collection, ref.id, kind, field, element, Rows.hlc(hlc)])
    }

    static func setContext(_ db: Database, _ replica: ReplicaID, _ hlc: UInt64) throws {
        try db.cachedStatement(sql: """
            INSERT INTO concord_context (replica, hlc) VALUES (?, ?)
            ON CONFLICT (replica) DO UPDATE SET hlc = max(hlc, excluded.hlc)
            """).execute(arguments: [Rows.replicaBlob(replica), Rows.hlc(hlc)])
    }
}

extension SlotIO {
    /// Writes `state` into a store whose record tables are empty — a new replica joining its
    /// first snapshot — and returns, per record, the fields written (``FreshInsert``).
    static func insertAll(_ db: Database, _ state: StoreState) throws -> [RecordRef: Set<String>] {
        var insert = try FreshInsert(db)
        var changes: [RecordRef: Set<String>] = [:]
        changes.reserveCapacity(state.records.count)
        // In key order: the tables' keys start with (collection, id), so each insert lands
        // beside the last instead of on a random page of a table larger than the page cache.
        for (ref, record) in state.records.sorted(by: { $0.key < $1.key }) {
            try insert.insert(ref, record.slots.map { (key: $0.key, entries: $0.value.entries) })
            changes[ref] = Set(record.slots.keys.compactMap(\.fieldName))
        }
        return changes
    }

    /// Inserts records, one at a time, into a store whose record tables hold none of them.
    /// The rows are those ``replace(_:_:_:with:dirty:)`` writes slot by slot from nothing
    /// (dirty 0), but inserted straight away: nothing to read, compare or delete first, and
    /// the arguments bound through SQLite's C API (``BoundStatement``). Fastest with the
    /// records in key order.
    struct FreshInsert {
        private let dots: BoundStatement
        private let elements: BoundStatement
        private let fields: BoundStatement
        private let versions: BoundStatement
        private var replicas: [ReplicaID: Data] = [:]
        private let clean = Rows.hlc(0)

        init(_ db: Database) throws {
            dots = try BoundStatement.cached(db, sql: "INSERT INTO concord_dots (collection, id, kind, hlc, replica) VALUES (?1, ?2, ?3, ?4, ?5)")
            elements = try BoundStatement.cached(db, sql: """
                INSERT INTO concord_elements (collection, id, field, element, hlc, replica) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                """)
            fields = try BoundStatement.cached(db, sql: """
                INSERT INTO concord_fields (collection, id, field, kind, value, file_size, media_type, hlc, replica, versions, dirty)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)
                """)
            versions = try BoundStatement.cached(db, sql: """
                INSERT INTO concord_field_versions (collection, id, field, hlc, replica, kind, value, file_size, media_type)
                VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)
                """)
        }

        private mutating func blob(_ replica: ReplicaID) -> Data {
            if let known = replicas[replica] { return known }
            let made = Rows.replicaBlob(replica)
            replicas[replica] = made
            return made
        }

        /// Inserts the record `ref` of `slots` (each key once).
        mutating func insert(_ ref: RecordRef, _ slots: [(key: SlotKey, entries: [Entry])]) throws {
            for (key, entries) in slots where !entries.isEmpty {
                switch key {
                case .liveness, .tombstones:
                    let kind = key == .liveness ? Rows.slotLiveness : Rows.slotTombstones
                    for entry in entries {
                        try dots.execute { binder in
                            binder.bind(ref)
                            binder.bind(kind, at: 3)
                            binder.bind(Rows.hlc(entry.dot.hlc), at: 4)
                            binder.bind(blob(entry.dot.replica), at: 5)
                        }
                    }
                case let .element(name, element):
                    let encoded = ScalarCodec.encode(element)
                    for entry in entries {
                        try elements.execute { binder in
                            binder.bind(ref)
                            binder.bind(name, at: 3)
                            binder.bind(encoded, at: 4)
                            binder.bind(Rows.hlc(entry.dot.hlc), at: 5)
                            binder.bind(blob(entry.dot.replica), at: 6)
                        }
                    }
                case let .field(name):
                    let winner = entries[entries.count - 1]
                    try fields.execute { binder in
                        binder.bind(ref)
                        binder.bind(name, at: 3)
                        binder.bind(winner.payload, at: 4)
                        binder.bind(Rows.hlc(winner.dot.hlc), at: 8)
                        binder.bind(blob(winner.dot.replica), at: 9)
                        binder.bind(Int64(entries.count), at: 10)
                        binder.bind(clean, at: 11)
                    }
                    for entry in entries.dropLast() {
                        try versions.execute { binder in
                            binder.bind(ref)
                            binder.bind(name, at: 3)
                            binder.bind(Rows.hlc(entry.dot.hlc), at: 4)
                            binder.bind(blob(entry.dot.replica), at: 5)
                            binder.bind(entry.payload, at: 6)
                        }
                    }
                }
            }
        }
    }
}
