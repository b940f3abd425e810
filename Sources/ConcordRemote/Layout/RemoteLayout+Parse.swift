import ConcordCore

extension RemoteLayout {
    /// The object named by `path`, or nil if `path` is not a name the store writes.
    ///
    /// Accepts exactly the spellings the builders produce and nothing else: lowercase hex
    /// only, exact lengths, no extra characters anywhere, a blob's folder equal to its
    /// name's first two digits. So `heads/<r>-<s> (conflicted copy 2026-11-21)`,
    /// `.sync-conflict-…` files, `~$…`, `.DS_Store`, `*.tmp`, dot-files, uppercase hex and
    /// truncated names all yield nil. For every accepted path, `parse(path)!.path == path`.
    public static func parse(_ path: String) -> Name? {
        let bytes = Array(path.utf8)
        if path == manifestPath { return .manifest }
        if let rest = strip("heads/keys/", from: bytes) {
            guard rest.count == 32, Hex.isLowercase(rest) else { return nil }
            return .keyObject(id: String(decoding: rest, as: UTF8.self))
        }
        if let rest = strip("heads/peers/", from: bytes) {
            guard rest.count == 32, Hex.isLowercase(rest) else { return nil }
            return .announcement(tag: String(decoding: rest, as: UTF8.self))
        }
        if let rest = strip("heads/", from: bytes) {
            guard let (replica, seq) = replicaDashSeq(rest) else { return nil }
            return .head(replica: replica, seq: seq)
        }
        if let rest = strip("snapshots/", from: bytes) {
            guard let (replica, seq) = replicaDashSeq(rest) else { return nil }
            return .snapshot(replica: replica, seq: seq)
        }
        if let rest = strip("replicas/", from: bytes) {
            // <32 hex>/deltas/<16 hex>
            guard rest.count == 32 + 8 + 16,
                  let replica = ReplicaID(lowercaseHex: rest.prefix(32)),
                  Array(rest.dropFirst(32).prefix(8)) == Array("/deltas/".utf8),
                  let seq = Hex.lowercaseUInt64(rest.suffix(16))
            else { return nil }
            return .batch(replica: replica, seq: seq)
        }
        if let rest = strip("blobs/", from: bytes) {
            // <2 hex>/<64 hex>, the folder being the name's first two digits
            guard rest.count == 2 + 1 + 64,
                  rest[rest.startIndex + 2] == UInt8(ascii: "/"),
                  Hex.isLowercase(rest.suffix(64)),
                  Array(rest.prefix(2)) == Array(rest.suffix(64).prefix(2))
            else { return nil }
            return .blob(keyedName: String(decoding: rest.suffix(64), as: UTF8.self))
        }
        if let rest = strip("stores/", from: bytes) {
            // <32 hex>/concord.json
            let file = Array("/concord.json".utf8)
            guard rest.count == 32 + file.count, Hex.isLowercase(rest.prefix(32)),
                  Array(rest.suffix(file.count)) == file
            else { return nil }
            return .storeManifest(storeID: String(decoding: rest.prefix(32), as: UTF8.self))
        }
        if let rest = strip("members/", from: bytes) {
            guard rest.count == 32, Hex.isLowercase(rest) else { return nil }
            return .memberLog(tag: String(decoding: rest, as: UTF8.self))
        }
        if let rest = strip("grants/", from: bytes) {
            guard rest.count == 64, Hex.isLowercase(rest) else { return nil }
            return .grant(name: String(decoding: rest, as: UTF8.self))
        }
        return nil
    }

    /// Whether `path` (no trailing slash; "" is the root) is a folder the layout uses:
    /// the root, `heads` (and its `keys` and `peers`), `snapshots`, `replicas`, `replicas/<replica>`,
    /// `replicas/<replica>/deltas`, `blobs` or `blobs/<2 hex>`, and `stores` and
    /// `stores/<store id>` (where named stores' manifests are; a walk from this root never
    /// enters a named store's own folders, which a root of their own lists). Remotes that
    /// walk folders descend only into these, so foreign folders (`.stversions`,
    /// `.dropbox.cache`, a user's own files) are never read.
    public static func isStoreFolder(_ path: String) -> Bool {
        switch path {
        case "", "heads", "heads/keys", "heads/peers", "snapshots", "replicas", "blobs", storesFolder, "members", "grants": return true
        default: break
        }
        let bytes = Array(path.utf8)
        if let rest = strip("stores/", from: bytes) {
            return rest.count == 32 && Hex.isLowercase(rest)
        }
        if let rest = strip("replicas/", from: bytes) {
            if rest.count == 32 { return ReplicaID(lowercaseHex: rest) != nil }
            return rest.count == 32 + 7 && ReplicaID(lowercaseHex: rest.prefix(32)) != nil
                && Array(rest.suffix(7)) == Array("/deltas".utf8)
        }
        if let rest = strip("blobs/", from: bytes) {
            return rest.count == 2 && Hex.isLowercase(rest)
        }
        return false
    }

    private static func strip(_ prefix: StaticString, from bytes: [UInt8]) -> ArraySlice<UInt8>? {
        let head = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
        guard bytes.count >= head.count, bytes.prefix(head.count).elementsEqual(head) else { return nil }
        return bytes[head.count...]
    }

    /// `<32 hex>-<16 hex>`.
    private static func replicaDashSeq(_ rest: ArraySlice<UInt8>) -> (ReplicaID, UInt64)? {
        guard rest.count == 32 + 1 + 16,
              let replica = ReplicaID(lowercaseHex: rest.prefix(32)),
              rest[rest.startIndex + 32] == UInt8(ascii: "-"),
              let seq = Hex.lowercaseUInt64(rest.suffix(16))
        else { return nil }
        return (replica, seq)
    }
}
