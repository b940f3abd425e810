import ConcordCore
import ConcordCrypto
import ConcordRemote

extension RemoteStores {
    /// Creates a named store below the root, under a new random id: a new random store key
    /// wrapped by the passphrase (Argon2id with `limits`), or the given key (a key file's),
    /// and the name sealed under that key. Writes only `stores/<id>/concord.json`; the
    /// root's own store, if any, and every other store are not touched.
    ///
    /// - Throws: `invalidOperation` when a store of that name already unlocks with
    ///   `credential` (open it with ``find(named:credential:)`` instead), `invalidParameter`
    ///   for a name `StoreManifest.validateName(_:)` refuses, and what the
    ///   remote throws.
    public func create(
        named name: String, credential: Credential, limits: PasswordHashLimits = .interactive, now: UInt64
    ) async throws -> Unlocked {
        try StoreManifest.validateName(name)
        if try await find(named: name, credential: credential) != nil {
            throw ConcordError(.invalidOperation, "\(root.display) already holds a store named \"\(name)\" that this passphrase or key opens: open it instead of creating another")
        }
        let key: StoreKey
        let plain: StoreManifest
        switch credential {
        case let .passphrase(passphrase):
            key = StoreKey.random()
            plain = try StoreManifest.create(storeKey: key, passphrase: passphrase, limits: limits)
        case let .key(given):
            key = given
            plain = StoreManifest.createForKeyFile(storeKey: given)
        }
        let manifest = try plain.naming(name, storeKey: key, created: now)
        let rootRemote = try await root.open(root: .none, access: access)
        try await rootRemote.put(RemoteLayout.storeManifest(manifest.storeID.hex), manifest.jsonBytes())
        return Unlocked(manifest: manifest, key: key, name: name)
    }
}
