import ConcordCore
import Foundation
import GRDB

/// What the sync engine keeps locally about a shared store, in `concord_meta`: once a
/// replica has seen that its store is shared, it keeps every membership operation it
/// verified and, per replica, the identity that signs for it. They are never dropped, so a
/// remote whose membership logs were deleted cannot turn the store back into an unsigned one.
public struct SharingRecord: Sendable {
    let key: String

    /// Every membership operation this replica verified (a membership log's JSON).
    public static let operations = SharingRecord(key: "sharing.operations")
    /// Per replica id, the Ed25519 key (hex) of the identity that signs its objects (JSON).
    public static let bindings = SharingRecord(key: "sharing.bindings")
    /// The Ed25519 key (hex) of the owner who shared the store: the root of its membership
    /// (this replica's own key when it shared it, else the one its grant named).
    public static let root = SharingRecord(key: "sharing.root")
    /// Set ("1") by an owner before it removes a member (or adds one to a store whose key
    /// was rotated), cleared ("0") once the store key is rotated to the active members: a
    /// sync finishes a rotation a crash left undone.
    public static let rotationPending = SharingRecord(key: "sharing.rotationPending")
}

extension Store {
    /// The sharing record `record`, or nil.
    public func sharingRecord(_ record: SharingRecord) throws(ConcordError) -> String? {
        try read { db in try String.fetchOne(db, sql: "SELECT value FROM concord_meta WHERE key = ?", arguments: [record.key]) }
    }

    /// Sets the sharing record `record`.
    public func setSharingRecord(_ record: SharingRecord, _ value: String) throws(ConcordError) {
        try writeDatabase { db in
            try db.execute(sql: "INSERT OR REPLACE INTO concord_meta (key, value) VALUES (?, ?)", arguments: [record.key, value])
        }
    }
}
