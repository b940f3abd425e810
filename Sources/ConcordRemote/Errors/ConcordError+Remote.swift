import ConcordCore

/// The remote's error codes, beside the core's (``ConcordCore/ConcordError``).
extension ConcordError.Code {
    /// The storage failed: the folder is missing or unmounted, the disk is full or
    /// read-only, permission was refused, the network dropped, … The message names the
    /// object and says what to do. Nothing was half-done that a retry cannot repair: a put
    /// either replaced the whole object or left the old one, so retrying is always safe.
    public static let remote = ConcordError.Code("remote")

    /// The remote refused the credentials (HTTP 401/403: a wrong password or secret, or a
    /// key without the right permissions). Retrying with the same credentials will not help.
    public static let remoteAuth = ConcordError.Code("remoteAuth")
    /// The remote is out of space: HTTP 507, a quota, an upload over the server's size
    /// limit, or a store folder whose disk or quota is full. Free space, then sync again.
    public static let remoteFull = ConcordError.Code("remoteFull")
    /// The remote's root — a WebDAV collection, an S3 bucket — does not exist.
    public static let remoteMissing = ConcordError.Code("remoteMissing")

    /// A folder that does not exist: a remote's folder or WebDAV collection that a
    /// ``RemoteBackend`` opened with ``RootCheck/mustExist(advice:)`` (and the command
    /// line's own folders).
    public static let noFolder = ConcordError.Code("noFolder")
    /// A path given as a folder that is a file.
    public static let notAFolder = ConcordError.Code("notAFolder")
    /// An S3 bucket that does not exist, found by a ``RemoteBackend`` opened with
    /// ``RootCheck/mustExist(advice:)``.
    public static let noBucket = ConcordError.Code("noBucket")

    /// A caller passed a path or prefix that is not part of the store layout (docs/ARCHITECTURE.md §4)
    /// or that could escape the store's root (`..`, an absolute path, an empty component).
    /// This is a bug in the caller, not a problem with the storage: nothing was read or
    /// written, and retrying will not help.
    public static let invalidRemotePath = ConcordError.Code("invalidRemotePath")
}

extension ConcordError.Code {
    /// An object of the layout is there but is not something Concord can read as an
    /// object: a folder, a symbolic link, a FIFO, a device or a socket where a file belongs,
    /// a file this user may not read, or an object below a folder that is a link. Anyone who
    /// can write the storage can plant one. The message names the object and says what to
    /// do (remove it from the store folder). The object is unusable, nothing else is
    /// affected: a caller reports it and carries on with the other objects. A put that finds
    /// a folder at its object's name throws it too: that object cannot be replaced until a
    /// person removes the folder.
    public static let unreadableObject = ConcordError.Code("unreadableObject")
}

extension ConcordError {
    /// The ``/ConcordCore/ConcordError/Code/limitExceeded`` error of a
    /// ``Remote/get(_:limit:)`` whose object is larger than `limit`: it names the object,
    /// the size found (at least, when the remote stopped reading at `limit + 1` bytes) and
    /// the limit. One message for every remote, so callers and people see the same words.
    public static func objectTooLarge(_ path: String, size: UInt64, atLeast: Bool = false, limit: UInt64) -> ConcordError {
        ConcordError(
            .limitExceeded,
            "remote object \(path) is \(atLeast ? "more than " : "")\(size) bytes, over the limit of \(limit) bytes for its kind: "
                + "Concord never writes one that large, so it was planted or damaged; it was not read — remove it, or run `concord doctor`"
        )
    }
}

extension ConcordError {
    /// The ``Code/remote`` error of a listing stopped at a bound
    /// (``RemoteLayout/maxListingPages``, a continuation token given twice,
    /// ``RemoteLayout/maxListingFolders``): `remote` names the remote, `listing` what was
    /// listed, `why` what it did.
    public static func endlessListing(_ remote: String, _ listing: String, _ why: String) -> ConcordError {
        ConcordError(
            .remote,
            "\(remote) \(why) while listing \(listing): such a listing would never end, so it was stopped; "
                + "nothing local was lost — check the server, the next sync tries again"
        )
    }
}
