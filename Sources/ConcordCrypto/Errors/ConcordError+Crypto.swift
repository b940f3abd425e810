import ConcordCore

extension ConcordError.Code {
    /// The passphrase or key does not open this store: it is not the key the store was
    /// created with (or `concord.json` was modified). Nothing was read or applied.
    public static let wrongKey = ConcordError.Code("wrongKey")

    /// A encrypted object or blob stream failed authentication: it was modified, truncated,
    /// reordered, or moved or replayed under another name. Treat it as not there (yet);
    /// never apply any of its bytes.
    public static let authenticationFailed = ConcordError.Code("authenticationFailed")

    /// Key material that cannot be a key: a key file of the wrong size or content, an
    /// unreadable key file, a key of the wrong length.
    public static let invalidKey = ConcordError.Code("invalidKey")

    /// The remote holds a different store (another store id): it was deleted and
    /// re-created, or the replica points at the wrong place. Never merge the two.
    public static let storeMismatch = ConcordError.Code("storeMismatch")

    /// An argument outside what the primitive accepts (a nonce of the wrong length, an
    /// empty passphrase, key-derivation limits out of range, a chunk of the wrong size).
    public static let invalidParameter = ConcordError.Code("invalidParameter")

    /// libsodium itself failed, typically because Argon2id could not allocate its memory.
    public static let cryptoFailure = ConcordError.Code("cryptoFailure")
}

extension ConcordError.Code {
    /// This device was removed from the shared store: the membership says so, or its
    /// identity opens no key of the store's current key generation (an owner rotated the
    /// store key without it). It keeps what it had, read-only; nothing more is synced.
    public static let removedFromStore = ConcordError.Code("removedFromStore")
}
