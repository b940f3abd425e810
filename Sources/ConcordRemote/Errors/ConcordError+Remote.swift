import ConcordCore

/// The remote's error codes, beside the core's (``ConcordCore/ConcordError``).
extension ConcordError.Code {
    /// The storage failed: the folder is missing or unmounted, the disk is full or
    /// read-only, permission was refused, the network dropped, … The message names the
    /// object and says what to do. Nothing was half-done that a retry cannot repair: a put
    /// either replaced the whole object or left the old one, so retrying is always safe.
    public static let remote = ConcordError.Code("remote")

    /// A caller passed a path or prefix that is not part of the store layout (DESIGN.md §4)
    /// or that could escape the store's root (`..`, an absolute path, an empty component).
    /// This is a bug in the caller, not a problem with the storage: nothing was read or
    /// written, and retrying will not help.
    public static let invalidRemotePath = ConcordError.Code("invalidRemotePath")
}
