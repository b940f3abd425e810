import ConcordCore

/// The store's error codes, beside the core's (``ConcordCore/ConcordError``).
extension ConcordError.Code {
    /// The database file is not a Concord store, or its contents break the store's rules.
    public static let corrupt = ConcordError.Code("corrupt")
    /// SQLite failed: the disk is full or read-only, the file is locked, … (see the message).
    public static let storage = ConcordError.Code("storage")
    /// A file's content does not match the hash it was announced with.
    public static let hashMismatch = ConcordError.Code("hashMismatch")
    /// A file the store needs is not in its blob directory.
    public static let missingBlob = ConcordError.Code("missingBlob")
    /// The store was written by a newer release.
    public static let newerSchema = ConcordError.Code("newerSchema")
    /// No such record, field or version.
    public static let notFound = ConcordError.Code("notFound")
}

