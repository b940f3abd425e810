import CFileIdentity
import ConcordCore
import Foundation
import GRDB

/// What tells the store's file from another file at its path: its inode number and, where
/// the file system keeps one, its birth time (statx on Linux, `st_birthtimespec` on Apple
/// platforms). SQLite writes a store's file in place for its whole life, so both stay the
/// same; a copy of the file — a restore from a backup (a file copy, SQLite's backup API,
/// `VACUUM INTO`), a store carried to another device — is a new file with a new birth time,
/// even where the file system hands it the inode number of a file just deleted.
public struct StoreFileIdentity: Hashable, Sendable, CustomStringConvertible {
    /// The file's inode number.
    public let inode: UInt64
    /// The file's birth time as seconds and nanoseconds since 1970, where the file system
    /// keeps one.
    public let birth: Birth?

    /// A birth time to the nanosecond.
    public struct Birth: Hashable, Sendable {
        public let seconds: Int64
        public let nanoseconds: Int64

        public init(seconds: Int64, nanoseconds: Int64) {
            self.seconds = seconds
            self.nanoseconds = nanoseconds
        }
    }

    /// The identity of the file at `path` now, or nil when it cannot be had.
    public static func of(path: String) -> StoreFileIdentity? {
        var raw = concord_file_identity()
        guard concord_file_identity_of(path, &raw) == 0 else { return nil }
        return StoreFileIdentity(inode: raw.inode, birth: raw.hasBirth != 0 ? Birth(seconds: raw.birthSeconds, nanoseconds: raw.birthNanoseconds) : nil)
    }

    /// Whether `other` is another file than this one: both carry a birth time, and the
    /// inode numbers or the birth times differ (a copy whose creation date was preserved, as
    /// some restores on Apple platforms do, still has a new inode). Where either has no birth
    /// time — network and FUSE file systems, some of which number inodes anew at each mount
    /// — nothing is concluded: a store there would otherwise take itself for a copy at
    /// every sync.
    public func isAnotherFile(than other: StoreFileIdentity) -> Bool {
        guard let birth, let otherBirth = other.birth else { return false }
        return inode != other.inode || birth != otherBirth
    }

    public var description: String {
        guard let birth else { return "inode \(inode)" }
        let date = Date(timeIntervalSince1970: Double(birth.seconds) + Double(birth.nanoseconds) / 1e9)
        return "inode \(inode), created \(date.formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true)))"
    }

    /// The form kept in the store: `inode:seconds.nanoseconds`, or `inode:-`.
    var stored: String {
        guard let birth else { return "\(inode):-" }
        return "\(inode):\(birth.seconds).\(birth.nanoseconds)"
    }

    public init(inode: UInt64, birth: Birth?) {
        self.inode = inode
        self.birth = birth
    }

    init?(stored: String) {
        let parts = stored.split(separator: ":", maxSplits: 1)
        guard parts.count == 2, let inode = UInt64(parts[0]) else { return nil }
        if parts[1] == "-" {
            self.init(inode: inode, birth: nil)
            return
        }
        let time = parts[1].split(separator: ".", maxSplits: 1)
        guard time.count == 2, let seconds = Int64(time[0]), let nanoseconds = Int64(time[1]) else { return nil }
        self.init(inode: inode, birth: Birth(seconds: seconds, nanoseconds: nanoseconds))
    }
}

/// The store's file was replaced by a copy since the store last recorded it: the file the
/// store recorded, and the file now at its path.
public struct StoreFileReplacement: Hashable, Sendable, CustomStringConvertible {
    public let recorded: StoreFileIdentity
    public let current: StoreFileIdentity

    public var description: String { "the store was recorded as the file with \(recorded), and its path now holds the file with \(current)" }
}

extension Store {
    /// Records the file's identity in a store that has none recorded (a new store, or one
    /// made by an older release). Runs in `db`'s transaction at open.
    static func recordFileIdentityIfMissing(_ db: Database, path: String) throws {
        guard try String.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'file'") == nil,
            let identity = StoreFileIdentity.of(path: path)
        else { return }
        try db.execute(sql: "INSERT INTO concord_meta (key, value) VALUES ('file', ?)", arguments: [identity.stored])
    }

    /// The file at the store's path is not the one the store recorded: the store is a copy —
    /// restored from a backup, or carried over from another device — and another copy of
    /// its replica may have written under its id since (``StoreFileReplacement``). Nil when
    /// it is the same file, or when that cannot be told (no birth time: see
    /// ``StoreFileIdentity/isAnotherFile(than:)``).
    ///
    /// The sync layer continues such a store under a new replica id before it seals
    /// anything, then records the new file (``recordFileIdentity()``).
    public func fileReplacement() throws(ConcordError) -> StoreFileReplacement? {
        let stored = try read { db in try String.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = 'file'") }
        guard let stored, let recorded = StoreFileIdentity(stored: stored), let current = StoreFileIdentity.of(path: path),
            current.isAnotherFile(than: recorded)
        else { return nil }
        return StoreFileReplacement(recorded: recorded, current: current)
    }

    /// Records the file now at the store's path as the store's own.
    public func recordFileIdentity() throws(ConcordError) {
        guard let identity = StoreFileIdentity.of(path: path) else { return }
        try writeDatabase { db in
            try db.execute(sql: "INSERT OR REPLACE INTO concord_meta (key, value) VALUES ('file', ?)", arguments: [identity.stored])
        }
    }
}
