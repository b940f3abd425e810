import ConcordCore

/// A named store's name and creation time (README, "Several stores on one remote").
///
/// A remote root can hold several stores, each below `stores/<store id>/` with its own
/// `concord.json`. The folder is named by the store's random id, never by its name; the
/// name is sealed in `concord.json` under the store's own key (``KeyPurpose/storeName``),
/// so the list of a remote's stores shows each name only to who can unlock that store, and
/// the storage never sees one.
extension StoreManifest {
    /// The longest name a store may have, in UTF-8 bytes.
    public static let maxNameByteCount = 200

    /// Checks a store name a person gave: 1 to ``maxNameByteCount`` UTF-8 bytes, no control
    /// characters. Throws `invalidParameter` saying what to change.
    public static func validateName(_ name: String) throws(ConcordError) {
        guard !name.isEmpty else {
            throw ConcordError(.invalidParameter, "a store name cannot be empty: give a name such as \"personal\"")
        }
        guard name.utf8.count <= maxNameByteCount else {
            throw ConcordError(.invalidParameter, "a store name is at most \(maxNameByteCount) bytes of UTF-8; this one has \(name.utf8.count)")
        }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7f }) else {
            throw ConcordError(.invalidParameter, "a store name cannot contain control characters (a newline, a tab, NUL)")
        }
    }

    /// The same manifest as a named store's: `name` sealed under `storeKey`, with the time
    /// it was created (ms since the epoch). Throws `wrongKey` unless `storeKey` is this
    /// store's key, `invalidParameter` for a name ``validateName(_:)`` refuses.
    public func naming(_ name: String, storeKey: StoreKey, created: UInt64) throws(ConcordError) -> StoreManifest {
        try Self.validateName(name)
        try verify(storeKey)
        let sealed = EncryptedObject.encrypt(Array(name.utf8), path: nameAssociatedPath, key: storeKey.subkey(for: .storeName))
        return keeping(created: created, sealedName: sealed)
    }

    /// The store's name, opened with `storeKey`; nil for a store without one (at a remote's
    /// root). Throws `wrongKey` unless `storeKey` is this store's key, and
    /// `authenticationFailed` when the sealed name was modified or copied from another store.
    public func name(with storeKey: StoreKey) throws(ConcordError) -> String? {
        guard let sealedName else { return nil }
        try verify(storeKey)
        let bytes = try EncryptedObject.open(sealedName, path: nameAssociatedPath, key: storeKey.subkey(for: .storeName))
        guard let name = String(validating: bytes, as: UTF8.self) else {
            throw ConcordError(.malformed, "concord.json of store \(storeID): its name is not UTF-8; it was modified; run `concord doctor`")
        }
        return name
    }

    /// What the sealed name is bound to: this store's id, so a name copied into another
    /// store's `concord.json` does not open even under the same key.
    var nameAssociatedPath: String { "concord.json#name/\(storeID.hex)" }

    /// This manifest with `created` and `sealedName` set as given (a rewrapped key keeps them).
    func keeping(created: UInt64?, sealedName: [UInt8]?) -> StoreManifest {
        // The other fields were checked when this manifest was made.
        try! StoreManifest(
            formatVersion: formatVersion, storeID: storeID, kdf: kdf, salt: salt, limits: limits,
            wrappedKey: wrappedKey, keyCheck: keyCheck, created: created, sealedName: sealedName)
    }
}
