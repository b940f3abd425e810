import ConcordCore

extension Store {
    /// Runs `body` as one write: one SQLite transaction, one stamp. Either every change in
    /// it is stored — values, metadata and outbox together — or none is.
    ///
    /// A record's scalar writes are buffered and run together, by the next call that writes
    /// another record or reads what they wrote, or before the commit. A change that fails
    /// to be stored throws from the call that ran it, from every call after it and from
    /// `write` itself, so the transaction rolls back whole even if that error was caught.
    @discardableResult
    public func write<T>(_ body: (WriteTransaction) throws(ConcordError) -> T) throws(ConcordError) -> T {
        var changes = ChangedFields()
        let result: T = try writeDatabase { db in
            let transaction = WriteTransaction(db: db, store: self)
            let value = try body(transaction)
            try transaction.finish()
            changes = transaction.changed
            return value
        }
        publishChanges(changes, origin: .local)
        return result
    }

    /// Sets fields of a record in one write.
    public func put(_ ref: RecordRef, _ fields: [String: FieldWrite]) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.put(ref, fields) }
    }

    /// Sets one scalar field in one write.
    public func set(_ ref: RecordRef, _ field: String, _ value: ScalarValue) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.set(ref, field, value) }
    }

    /// Adds a set element in one write.
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
    public func delete(_ ref: RecordRef) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.delete(ref) }
    }

    /// Keeps a record whose delete was concurrent with an update, in one write.
    public func keepRecord(_ ref: RecordRef) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.keepRecord(ref) }
    }

    /// Attaches the file at `path` to a file field in one write.
    @discardableResult
    public func attachFile(_ ref: RecordRef, _ field: String, path: String, mediaType: String? = nil) throws(ConcordError) -> FileRef {
        try write { tx throws(ConcordError) in try tx.attachFile(ref, field, path: path, mediaType: mediaType) }
    }

    /// Attaches `bytes` as a file to a file field in one write.
    @discardableResult
    public func attachFile(_ ref: RecordRef, _ field: String, bytes: [UInt8], mediaType: String? = nil) throws(ConcordError) -> FileRef {
        try write { tx throws(ConcordError) in try tx.attachFile(ref, field, bytes: bytes, mediaType: mediaType) }
    }

    /// Resolves a file fork by keeping one version, in one write.
    public func keepVersion(_ ref: RecordRef, _ field: String, hash: ContentHash) throws(ConcordError) {
        try write { tx throws(ConcordError) in try tx.keepVersion(ref, field, hash: hash) }
    }
}
