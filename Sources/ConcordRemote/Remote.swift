import ConcordCore

/// One object in a listing.
public struct RemoteObject: Hashable, Sendable {
    /// The object's path below the store's root, e.g. `heads/<replica>-<seq>`.
    public let path: String
    /// Its size in bytes, or nil when the listing does not say (a WebDAV server may leave
    /// `getcontentlength` out): unknown, never 0 — a check that compares sizes passes an
    /// object of unknown size over rather than take it for torn.
    public let size: UInt64?
    /// When it was last written, in milliseconds since the epoch, if the remote knows.
    public let modified: UInt64?

    public init(path: String, size: UInt64?, modified: UInt64?) {
        self.path = path
        self.size = size
        self.modified = modified
    }
}

/// Dumb storage (docs/ARCHITECTURE.md §4): put a whole object, get it, list a prefix, delete.
///
/// What a remote promises, and what it may fail to promise:
/// - `put` replaces the whole object or fails; a reader never sees a mix of two writes
///   *that the remote acknowledged* — but a torn (partial) object may appear after a crash
///   or from a misbehaving sync client, and callers must authenticate what they read.
/// - `list` may be stale, incomplete or duplicated; names the store did not write are
///   ignored.
/// - Every failure is a `ConcordError`: code `remote` for transport failures (retry);
///   `unreadableObject` for one object that is there but cannot be read as an object (not a
///   file, or not readable; a put that cannot replace it, as a folder at its name) and `limitExceeded` for one over its size limit — whoever can
///   write the storage can plant either, so a caller reports that object and carries on.
public protocol Remote: Sendable {
    /// Stores `bytes` at `path`, replacing any object there.
    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError)
    /// The object at `path`, or nil if there is none.
    func get(_ path: String) async throws(ConcordError) -> [UInt8]?
    /// The object at `path`, or nil if there is none — unless it is larger than `limit`
    /// bytes: then it throws ``/ConcordCore/ConcordError/Code/limitExceeded``
    /// (``ConcordCore/ConcordError/objectTooLarge(_:size:atLeast:limit:)``) having read at
    /// most `limit + 1` bytes. Pass the limit of the object's kind,
    /// ``RemoteLayout/maxObjectSize(forPath:)``.
    ///
    /// *Why*: whoever can write the storage chooses object sizes; a sparse file of
    /// gigabytes costs nothing to plant and, read whole, exhausts memory. The default
    /// implementation calls ``get(_:)`` and checks the size afterwards (typed error, but no
    /// memory bound); backends that can learn the size first implement it themselves.
    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]?
    /// The objects whose path starts with `prefix`, in no particular order.
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject]
    /// Deletes the object at `path`; deleting a missing object succeeds.
    func delete(_ path: String) async throws(ConcordError)
    /// Stores an object streamed in chunks from `read` (which returns an empty array at the
    /// end), in constant memory.
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError)
    /// Streams the object at `path` to `write` in chunks; false if there is no object.
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool
    /// ``getStream(_:write:)`` of an object the reader expects to be at most `limit` bytes
    /// (a file's sealed size, known from its authenticated reference): a larger one throws
    /// ``/ConcordCore/ConcordError/Code/limitExceeded``
    /// (``ConcordCore/ConcordError/objectTooLarge(_:size:atLeast:limit:)``) before `write`
    /// gets a byte past the limit, and an HTTP remote also stops a read slower than its
    /// bounds allow for `limit` bytes. *Why*: whoever can write the storage or answer its
    /// requests chooses what is sent; a download must cost no more disk, and take no longer,
    /// than the object it expects. The default implementation counts the bytes `getStream`
    /// delivers.
    func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool
    /// What stands at layout names under `prefix` without being an object or a real folder —
    /// a symbolic link, a FIFO, a device, a folder where an object belongs — which listings
    /// skip. Concord writes none of these: whoever can write the storage planted them, and
    /// `doctor` names them. Remotes that cannot hold such things return none (the default).
    func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly]
}

/// An entry at a layout name that is not what the layout puts there (``Remote/anomalies(prefix:)``).
public struct RemoteAnomaly: Hashable, Sendable, CustomStringConvertible {
    /// Its path below the store's root (a folder's ends without a slash).
    public let path: String
    /// What it is, in words: "a symbolic link", "a FIFO (named pipe)", "a folder", …
    public let kind: String

    public init(path: String, kind: String) {
        self.path = path
        self.kind = kind
    }

    public var description: String { "\(path) (\(kind))" }
}

extension Remote {
    /// The store manifest `concord.json`, or nil when the remote holds none: read within its
    /// limit (``RemoteLayout/maxManifestSize``). Every reader of `concord.json` reads it
    /// through here.
    public func getManifest() async throws(ConcordError) -> [UInt8]? {
        try await get(RemoteLayout.manifestPath, limit: RemoteLayout.maxObjectSize(for: .manifest))
    }

    /// None: a remote that can only hold objects.
    public func anomalies(prefix: String) async throws(ConcordError) -> [RemoteAnomaly] { [] }

    /// ``getStream(_:write:)``, stopped by a typed error once more than `limit` bytes came:
    /// at most `limit` bytes reach `write`.
    public func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        var received: UInt64 = 0
        return try await getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
            received += UInt64(chunk.count)
            guard received <= limit else { throw ConcordError.objectTooLarge(path, size: received, atLeast: true, limit: limit) }
            try write(chunk)
        }
    }

    /// ``get(_:)``, then the size check: the typed error of a bounded get, without its memory
    /// bound. For remotes that cannot learn an object's size before reading it.
    public func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        guard let bytes = try await get(path) else { return nil }
        guard UInt64(bytes.count) <= limit else { throw ConcordError.objectTooLarge(path, size: UInt64(bytes.count), limit: limit) }
        return bytes
    }
}

/// A remote where an upload cut off by a crash or a lost connection can leave something
/// behind that listings never return: a folder's or a WebDAV collection's temporary files,
/// an S3 bucket's unfinished multipart uploads (whose parts are stored, and billed, until
/// aborted). `concord compact` sweeps them.
public protocol LeftoverSweeping: Remote {
    /// Removes the leftovers started or last modified more than `age` ms before `now` (ms
    /// since the epoch) and returns how many it removed. Choose an `age` far longer than
    /// any upload — an hour or more: a younger one may be another device's upload in progress.
    func sweepLeftovers(olderThan age: UInt64, now: UInt64) async throws(ConcordError) -> Int
}

extension FolderRemote: LeftoverSweeping {
    public func sweepLeftovers(olderThan age: UInt64, now: UInt64) async throws(ConcordError) -> Int {
        try sweepTemporaryFiles(olderThan: age, now: now)
    }
}
