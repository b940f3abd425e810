import ConcordCore
import ConcordCrypto
import GRDB

extension Store {
    /// Runs `body` as one write: one SQLite transaction, one stamp. Either every change in
    /// it is stored — values, metadata and outbox together — or none is.
    ///
    /// ```swift
    /// try store.write { (tx) throws(ConcordError) in
    ///     try tx.set(zelda, "level", .int(5))
    ///     try tx.delete(RecordRef(collection: "games", id: "tetris"))
    /// }
    /// ```
    ///
    /// The closure needs its `throws(ConcordError)`: Swift does not infer a closure's typed
    /// throws.
    ///
    /// Scalar writes are buffered and run together, up to 32 of them, of one record or
    /// several: by the call that finds the buffer full, by one that changes a record otherwise
    /// than by scalar writes or reads what they wrote, or before the commit. A change that fails
    /// to be stored throws from the call that ran it, from every call after it and from
    /// `write` itself, so the transaction rolls back whole even if that error was caught.
    @discardableResult
    public func write<T>(_ body: (WriteTransaction) throws(ConcordError) -> T) throws(ConcordError) -> T {
        var changes = ChangedFields()
        let result: T = try writeDatabase { (db: Database, written: inout WrittenRecords) in
            try Self.checkWritableSchema(db)
            try Self.checkNotRemoved(db)
            let transaction = WriteTransaction(db: db, store: self)
            let value = try body(transaction)
            try transaction.finish()
            changes = transaction.changed
            written = transaction.written
            return value
        }
        publishChanges(changes, origin: .local)
        return result
    }

    /// Sets fields of a record in one write.
    ///
    /// ```swift
    /// let zelda = RecordRef(collection: "games", id: "zelda")
    /// try store.put(zelda, ["title": .scalar(.string("Zelda")), "tags": .set([.string("adventure")])])
    /// ```
    ///
    /// Creates the record if it is not visible; fields not named keep their values. A
    /// `.set` write replaces the set's elements with exactly those given.
    public func put(_ ref: RecordRef, _ fields: [String: FieldWrite]) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.put(ref, fields) }
    }

    /// Sets one scalar field in one write.
    ///
    /// ```swift
    /// try store.set(zelda, "level", .int(4))
    /// ```
    public func set(_ ref: RecordRef, _ field: String, _ value: ScalarValue) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.set(ref, field, value) }
    }

    /// Adds a set element in one write.
    ///
    /// ```swift
    /// try store.add(zelda, "tags", .string("classic"))
    /// ```
    public func add(_ ref: RecordRef, _ field: String, _ element: ScalarValue) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.add(ref, field, element) }
    }

    /// Removes a set element in one write.
    public func remove(_ ref: RecordRef, _ field: String, _ element: ScalarValue) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.remove(ref, field, element) }
    }

    /// Creates or replaces a record in one write.
    public func create(_ ref: RecordRef, _ fields: [String: FieldWrite]) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.create(ref, fields) }
    }

    /// Deletes a record in one write.
    ///
    /// ```swift
    /// try store.delete(RecordRef(collection: "games", id: "tetris"))
    /// ```
    ///
    /// An update another replica made concurrently keeps the record, whole, and
    /// ``conflicts()`` lists it (`deleteUpdate`) until ``keepRecord(_:)`` or another delete
    /// settles it.
    public func delete(_ ref: RecordRef) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.delete(ref) }
    }

    /// Keeps a record whose delete was concurrent with an update, in one write.
    public func keepRecord(_ ref: RecordRef) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.keepRecord(ref) }
    }

    /// Attaches the file at `path` to a file field in one write.
    ///
    /// ```swift
    /// let cover = try store.attachFile(zelda, "cover", path: "cover.png", mediaType: "image/png")
    /// let bytes = try store.blobs.bytes(cover.hash)  // the content, from the store's files
    /// ```
    ///
    /// The content is copied into the store's files (``blobs``), named by its BLAKE2b-256
    /// hash; the returned ``/ConcordCore/FileRef`` is what the field now holds.
    @discardableResult
    public func attachFile(_ ref: RecordRef, _ field: String, path: String, mediaType: String? = nil) throws(ConcordError) -> FileRef {
        try write { tx throws(ConcordError) in try tx.attachFile(ref, field, path: path, mediaType: mediaType) }
    }

    /// Attaches `bytes` as a file to a file field in one write.
    ///
    /// ```swift
    /// let text = Array("Beat the first dungeon".utf8)
    /// let note = try store.attachFile(zelda, "notes", bytes: text, mediaType: "text/plain")
    /// ```
    @discardableResult
    public func attachFile(_ ref: RecordRef, _ field: String, bytes: [UInt8], mediaType: String? = nil) throws(ConcordError) -> FileRef {
        try write { tx throws(ConcordError) in try tx.attachFile(ref, field, bytes: bytes, mediaType: mediaType) }
    }

    /// Resolves a file fork by keeping one version, in one write.
    ///
    /// ```swift
    /// if let fork = try store.conflicts().first(where: { $0.kind == .fileFork }), let field = fork.field {
    ///     try store.keepVersion(fork.ref, field, hash: fork.versions[0].file.hash)
    /// }
    /// ```
    public func keepVersion(_ ref: RecordRef, _ field: String, hash: ContentHash) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.keepVersion(ref, field, hash: hash) }
    }
}

extension Store {
    /// Throws `removedFromStore` when this replica was
    /// removed from its store (``SyncStateValue/removedFromStore``): its copy is read-only.
    static func checkNotRemoved(_ db: Database) throws {
        guard let removed = try String.fetchOne(db.cachedStatement(sql: "SELECT removed_from_store FROM concord_sync_state WHERE id = 0")) else { return }
        throw ConcordError(.removedFromStore, "this store is read-only: \(removed); nothing was written, and everything it holds stays readable")
    }
}
