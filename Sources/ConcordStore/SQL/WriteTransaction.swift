import ConcordCodec
import ConcordCore
import Foundation
import GRDB

/// The writes of one ``Store/write(_:)`` call: one SQLite transaction and one stamp.
///
/// The mutations mean exactly what ``/ConcordCore/Replica``'s do (docs/ARCHITECTURE.md §2): the store's
/// tests run the same operations through both and compare their deltas and dumps. All the
/// writes of one transaction share its stamp, so they are one write: they become visible
/// together, locally and on every replica.
///
/// This file holds the transaction's state and the slot updates its writes run in SQL; the
/// writes themselves are in `Store/`: of records and set elements in
/// `WriteTransaction+Records.swift`, of files in `WriteTransaction+Files.swift`.
public final class WriteTransaction {
    let db: Database
    let store: Store
    let now: UInt64
    private var stamp: Stamp?
    /// Records whose liveness this transaction already set to its stamp, each with whether
    /// it has no set elements: none when this transaction first wrote it (a new record
    /// among them), and none added since. A scalar write to one without has no elements of
    /// its name to clear.
    var begun: [RecordRef: Bool] = [:] { didSet { lastBegun = nil } }
    /// The record last found in `begun`, with its answer: a transaction writes a record's
    /// fields one after another, and this spares hashing its collection and id for each.
    private var lastBegun: (ref: RecordRef, withoutElements: Bool)?
    /// What changed, for change events: every record written, with the fields written.
    var changed = ChangedFields()
    /// This replica's id, and as stored (its stamp's replica column).
    private lazy var ownID = store.replicaID
    private lazy var ownReplica = Rows.replicaBlob(ownID)
    /// Register writes not yet run: the common write is buffered and run as one multi-row
    /// upsert of up to ``BatchedUpsert/limit`` registers, of one record or of several
    /// (``flushRegisters()``). One statement per field cost SQLite a third more than one per
    /// record; and while a collection is declared, every statement that fires the triggers
    /// noting changed records opens a statement journal, so one per record cost more again.
    var pending = RegisterBuffer()
    /// The record whose next scalar writes take the short way in ``set(_:_:_:)``, known by
    /// one comparison: a `set` wrote it last and left it begun in this transaction, without
    /// set elements, the last in the register buffer and last noted as changed. Every other
    /// change clears it first (``run(_:)``).
    var shortcut: RecordRef?
    /// The first error of a change that failed to be stored: it fails the whole transaction
    /// (every later call, and ``Store/write(_:)``), even if the caller caught it. The change
    /// may have been half written, or, buffered, run by a later call than the one that made
    /// it; either way no other change of the transaction may commit without it.
    private var failure: ConcordError?
    /// The upsert of up to ``BatchedUpsert/limit`` registers, all written with this
    /// transaction's stamp: parameter 1 the hlc, 2 the replica, 3 the dirty mark, then per
    /// register its record's collection and id, its name, kind, value, file size and media type.
    private static let registerWrites = BatchedUpsert.Shape(into: BatchedUpsert.Shape.fields, sharedParameters: 3, parametersPerRow: 7, row: { first in
        "(?\(first), ?\(first + 1), ?\(first + 2), ?\(first + 3), ?\(first + 4), ?\(first + 5), ?\(first + 6), ?1, ?2, 1, ?3)"
    }, onConflict: """
        ON CONFLICT (collection, id, field) DO UPDATE SET
            kind = excluded.kind, value = excluded.value, file_size = excluded.file_size, media_type = excluded.media_type,
            hlc = excluded.hlc, replica = excluded.replica, dirty = excluded.dirty
        WHERE concord_fields.versions = 1 AND concord_fields.kind != 6
        """)
    private var registerUpserts = BatchedUpsert(registerWrites)
    /// Records of declared collections this transaction created and wrote scalar values to,
    /// with those values: the pivot makes their declared rows from these.
    var written = WrittenRecords()
    /// The declarations as this transaction first wrote (none: no record is kept in `written`),
    /// and the collection last looked up there.
    private lazy var declared: [[UInt8]: CollectionDeclaration] = (try? store.declarationCache.all(db)) ?? [:]
    private var lastDeclared: (collection: String, isDeclared: Bool)?

    /// Records whose liveness this transaction renewed and whose liveness dot (its stamp)
    /// and outbox row are not written yet: they are written together, up to
    /// ``BatchedUpsert/limit`` in one statement per table (``flushLiveness()``), before
    /// any statement that reads or writes a record's slots otherwise, and before the
    /// commit. Every record here is in `begun`.
    private var pendingLiveness: [RecordRef] = []
    /// The inserts of pending liveness dots and upserts of their outbox rows: parameter 1
    /// the hlc (and 2 this replica, for the dots), then each record's collection and id. A
    /// new outbox row's `low` is the hlc too; a row already there keeps its own, which is
    /// no later (``SlotIO/markOutboxSQL``).
    private static let livenessDotInserts = BatchedUpsert.Shape(
        into: "concord_dots (collection, id, kind, hlc, replica)", sharedParameters: 2, parametersPerRow: 2,
        row: { first in "(?\(first), ?\(first + 1), \(Rows.slotLiveness), ?1, ?2)" })
    private static let livenessMarkUpserts = BatchedUpsert.Shape(
        into: "concord_outbox (collection, id, kind, field, element, hlc, low)", sharedParameters: 1, parametersPerRow: 2,
        row: { first in "(?\(first), ?\(first + 1), \(Rows.slotLiveness), '', x'', ?1, ?1)" },
        onConflict: "ON CONFLICT (collection, id, kind, field, element) DO UPDATE SET hlc = max(hlc, excluded.hlc)")
    private var livenessDots = BatchedUpsert(livenessDotInserts)
    private var livenessMarks = BatchedUpsert(livenessMarkUpserts)

    /// The statements of a record's first write in a transaction, taken from the
    /// connection's statement cache once per transaction (looking them up there hashes
    /// their SQL every time).
    private lazy var livenessQuery: Statement? = try? db.cachedStatement(sql: SlotIO.livenessAndExistenceSQL)
    private lazy var ownDotsRemoval: BoundStatement? = try? BoundStatement.cached(db, sql: """
        DELETE FROM concord_dots WHERE collection = ?1 AND id = ?2 AND kind = \(Rows.slotLiveness) AND replica = ?3
        """)

    init(db: Database, store: Store) {
        self.db = db
        self.store = store
        self.now = store.configuration.clock.millisecondsSinceEpoch()
    }

    /// This transaction's stamp, taken from the clock at its first write.
    func dot() throws -> Stamp {
        if let stamp { return stamp }
        let next = try store.tick(db)
        stamp = next
        return next
    }

    // MARK: Slot updates (as Replica's)

    /// Whether `ref` is begun and has no set elements.
    func hasNoElements(_ ref: RecordRef) -> Bool {
        if let lastBegun, lastBegun.ref == ref { return lastBegun.withoutElements }
        guard let answer = begun[ref] else { return false }
        lastBegun = (ref, answer)
        return answer
    }

    /// Runs what is still buffered, before the transaction commits (and before a read of
    /// what it wrote, ``fields(of:)``). Throws the error of a
    /// change that failed earlier even if it was caught: the transaction then rolls back whole.
    func finish() throws(ConcordError) {
        try run {
            try flushRegisters()
            try flushLiveness()
        }
    }

    /// Notes that `names` of `ref` changed (no names: the record itself, its liveness or
    /// tombstones).
    private func noteChanged(_ ref: RecordRef, _ names: some Collection<String>) {
        changed.note(names, of: ref)
    }

    /// Runs one change's reads and writes. Checks that can fail before anything is written
    /// (names, a file's presence) come before it; whatever fails in here fails the
    /// transaction (`failure`).
    func run<T>(_ body: () throws -> T) throws(ConcordError) -> T {
        shortcut = nil
        if let failure { throw failure }
        do {
            return try body()
        } catch {
            let typed = error as? ConcordError ?? Store.storageError(error, doing: "write to \(store.path)")
            failure = typed
            throw typed
        }
    }

    func beginWrite(_ ref: RecordRef) throws -> Stamp {
        let dot = try dot()
        if let lastBegun, lastBegun.ref == ref { return dot }
        if let answer = begun[ref] {
            lastBegun = (ref, answer)
            return dot
        }
        // No register of `ref` is buffered: its writes are buffered only once it is begun, and
        // it stops being begun (a delete) only through ``replace(_:_:with:)``, which runs the
        // buffer. Other records' buffered writes wait, to run with its own.
        guard let livenessQuery else { throw ConcordError(.storage, "could not prepare the query of a record's liveness") }
        let (liveness, exists, hasElements) = try SlotIO.livenessAndExistence(livenessQuery, ref)
        // Without elements: a new record, one that had none, or one that was not visible
        // and is cleared below.
        let withoutElements = !exists || liveness.isEmpty || !hasElements
        begun[ref] = withoutElements
        lastBegun = (ref, withoutElements)
        // A record that is not visible is cleared first; a new one has nothing to clear.
        if exists && liveness.isEmpty { try clearRecord(ref, keepingLiveness: true) }
        if !exists && isDeclared(ref.collection) { written.begin(ref) }
        try renewLiveness(ref, removingOwn: liveness.contains { $0.dot.replica == ownID })
        return dot
    }

    /// Whether `collection` is declared (by its UTF-8 bytes).
    private func isDeclared(_ collection: String) -> Bool {
        if declared.isEmpty { return false }
        if let lastDeclared, Bytewise.equal(lastDeclared.collection, collection) { return lastDeclared.isDeclared }
        let answer = declared[Array(collection.utf8)] != nil
        lastDeclared = (collection, answer)
        return answer
    }

    /// Replaces the record's liveness as `replace(ref, .liveness, …)` would with the other
    /// replicas' dots and this write's (rule 5): this replica's earlier dots go now
    /// (`removingOwn`: there are some), the others stay, and this write's dot and the
    /// slot's outbox row are written with other records' (``flushLiveness()``).
    private func renewLiveness(_ ref: RecordRef, removingOwn: Bool) throws {
        if removingOwn {
            guard let ownDotsRemoval else { throw ConcordError(.storage, "could not prepare the removal of a record's liveness dots") }
            try ownDotsRemoval.execute { binder in
                binder.bind(ref)
                binder.bind(ownReplica, at: 3)
            }
        }
        if pendingLiveness.count == BatchedUpsert.limit { try flushLiveness() }
        pendingLiveness.append(ref)
        noteChanged(ref, [])
    }

    /// Writes the pending liveness dots and outbox rows (``pendingLiveness``).
    private func flushLiveness() throws {
        guard !pendingLiveness.isEmpty else { return }
        let refs = pendingLiveness
        pendingLiveness.removeAll(keepingCapacity: true)
        let hlc = Rows.hlc(try dot().hlc)
        let replica = ownReplica
        try livenessDots.execute(db, refs, shared: { binder in
            binder.bind(hlc, at: 1)
            binder.bind(replica, at: 2)
        }, row: { binder, first, ref in binder.bind(ref, at: first) })
        try livenessMarks.execute(db, refs, shared: { binder in binder.bind(hlc, at: 1) }, row: { binder, first, ref in
            binder.bind(ref, at: first)
        })
    }

    func apply(_ write: FieldWrite, to name: String, of ref: RecordRef, dot: Stamp) throws {
        switch write {
        case let .scalar(value):
            try clearElements(name, of: ref)
            try setRegister(ref, name, .scalar(value))
        case let .file(file):
            try clearElements(name, of: ref)
            try setRegister(ref, name, .file(file))
        case let .set(elements):
            try clearRegister(name, of: ref)
            try clearElements(name, of: ref)
            for element in Set(elements) {
                try replace(ref, .element(name, element), with: [Entry(dot: dot, payload: .marker)])
            }
            begun[ref] = false
        }
    }

    /// Replaces a register with one entry of this transaction's stamp. The common case, a
    /// register holding at most one entry and no file, is one upsert, buffered with the
    /// record's other register writes; a register the upsert cannot replace (concurrent
    /// entries, or a file whose superseded version history must keep) is replaced slot-wise
    /// when the buffer runs.
    private func setRegister(_ ref: RecordRef, _ name: String, _ payload: Payload) throws {
        noteChanged(ref, CollectionOfOne(name))
        if !pending.appendIfRoom(ref, name, payload) {
            // A second write of a field in one buffer runs after the first, as it was made.
            try flushRegisters()
            _ = pending.appendIfRoom(ref, name, payload)
        }
    }

    /// Runs the buffered register writes: one upsert for all of them, and, if it replaced
    /// fewer rows than it was given, each again on its own so that those it could not
    /// replace are replaced slot-wise. (A replaced row takes the same values again.) Every
    /// statement that reads or writes a buffered record's registers runs after this.
    func flushRegisters() throws {
        guard !pending.rows.isEmpty else { return }
        let rows = pending.take()
        let dot = try dot()
        let hlc = Rows.hlc(dot.hlc)
        let replica = ownReplica
        let unchanged = try registerUpserts.upsert(db, rows, shared: { binder in
            binder.bind(hlc, at: 1)
            binder.bind(replica, at: 2)
            binder.bind(hlc, at: 3)
        }, row: { binder, first, row in
            binder.bind(row.ref, at: first)
            binder.bind(row.name, at: first + 2)
            binder.bind(row.payload, at: first + 3)
        })
        written.wrote(rows)
        for row in unchanged { try replace(row.ref, .field(row.name), with: [Entry(dot: dot, payload: row.payload)]) }
    }

    /// Clears a register before its name becomes a set. Not skipped for a record new in this
    /// transaction: the transaction may have written the register itself.
    func clearRegister(_ name: String, of ref: RecordRef) throws {
        try flushRegisters()
        let exists = try Bool.fetchOne(db, sql: """
            SELECT EXISTS (SELECT 1 FROM concord_fields WHERE collection = ? AND id = ? AND field = ?)
            """, arguments: [ref.collection, ref.id, name]) ?? false
        if exists { try replace(ref, .field(name), with: []) }
    }

    private func clearElements(_ name: String, of ref: RecordRef) throws {
        if hasNoElements(ref) { return }
        let removed = try Data.fetchAll(db.cachedStatement(sql: """
            DELETE FROM concord_elements WHERE collection = ? AND id = ? AND field = ? RETURNING element
            """), arguments: [ref.collection, ref.id, name])
        if !removed.isEmpty { written.forget(ref) }
        for element in Set(removed) {
            try SlotIO.markOutbox(db, ref, kind: Rows.slotElement, field: name, element: element, hlc: try dot().hlc)
            noteChanged(ref, CollectionOfOne(name))
        }
    }

    func clearRecord(_ ref: RecordRef, keepingLiveness: Bool) throws {
        try flushRegisters()
        try flushLiveness()
        for key in try SlotIO.slotKeys(db, ref) where !(keepingLiveness && key == .liveness) {
            try replace(ref, key, with: [])
        }
    }

    /// Replaces a slot's entries (every current entry was observed), keeping superseded
    /// file versions in history, and marks the slot in the outbox.
    func replace(_ ref: RecordRef, _ key: SlotKey, with entries: [Entry]) throws {
        try flushRegisters()
        try flushLiveness()
        written.forget(ref)
        if case let .field(name) = key {
            let old = try SlotIO.entries(db, ref, key)
            try FileHistory.record(db, ref, name, superseded: old, by: entries, at: now)
        }
        try SlotIO.replace(db, ref, key, with: entries, dirty: try dot().hlc)
        // Liveness and tombstone changes register the record with no field names.
        noteChanged(ref, key.fieldName.map { [$0] } ?? [])
    }
}


/// The buffered register writes (``WriteTransaction``'s `pending`): of one record or several,
/// each record's rows together, no register twice.
struct RegisterBuffer {
    private(set) var rows: [(ref: RecordRef, name: String, payload: Payload)] = []
    /// Each row's name as ``Bytewise/key(_:)``.
    private var keys: [UInt64] = []
    /// The records of the rows, in order, and where the last one's rows start.
    private var refs: [RecordRef] = []
    private var lastStart = 0

    /// The record whose rows were appended last.
    var lastRef: RecordRef? { refs.last }

    /// Appends a write of `name` of `ref` unless the buffer is full (one statement's rows),
    /// holds a write of that register already (the next one runs after it), or holds rows of
    /// `ref` before another record's (so that each record's rows stay together).
    mutating func appendIfRoom(_ ref: RecordRef, _ name: String, _ payload: Payload) -> Bool {
        guard rows.count < BatchedUpsert.limit else { return false }
        let key = Bytewise.key(name)
        if let last = refs.last, last == ref {
            for index in lastStart..<rows.count where keys[index] == key && Bytewise.equal(rows[index].name, name) { return false }
        } else {
            if refs.contains(ref) { return false }
            refs.append(ref)
            lastStart = rows.count
        }
        rows.append((ref, name, payload))
        keys.append(key)
        return true
    }

    /// The rows, leaving the buffer empty.
    mutating func take() -> [(ref: RecordRef, name: String, payload: Payload)] {
        defer {
            rows.removeAll(keepingCapacity: true)
            keys.removeAll(keepingCapacity: true)
            refs.removeAll(keepingCapacity: true)
            lastStart = 0
        }
        return rows
    }
}
