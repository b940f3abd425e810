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

/// The error codes of declared collections and queries (`Declared/`).
extension ConcordError.Code {
    /// A collection declaration that cannot be kept: an unknown type, an index or search
    /// on a field that cannot have one, a malformed schema file.
    public static let invalidDeclaration = ConcordError.Code("invalidDeclaration")
    /// A query of a collection that is not declared, or naming a field its declaration
    /// does not have.
    public static let unknownField = ConcordError.Code("unknownField")
    /// A query that compares a field with a value of another type, or uses an operator
    /// the field's type does not have (`contains` on a scalar, `prefix` on a number, …).
    public static let typeMismatch = ConcordError.Code("typeMismatch")
    /// A full-text search (`matches`) that is not an FTS5 query SQLite reads.
    public static let invalidQuery = ConcordError.Code("invalidQuery")
}
