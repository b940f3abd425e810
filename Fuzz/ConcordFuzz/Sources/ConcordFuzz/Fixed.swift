import Concord

/// The fixed test key and names the targets open and decode under, so that a mutation
/// behind a valid tag (the sealed-plaintext target, the seeds) reaches the decoders.
/// Never a real store's key: its bytes are 0, 1, …, 31.
enum Fixed {
    static let storeKey = try! StoreKey(bytes: (0..<32).map { UInt8($0) })
    static let batches = storeKey.subkey(for: .batches)
    static let manifests = storeKey.subkey(for: .manifests)
    static let snapshots = storeKey.subkey(for: .snapshots)
    static let blobContents = storeKey.subkey(for: .blobContents)

    static let replica = ReplicaID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
    static let batchPath = RemoteLayout.batch(replica, seq: 1)
    static let snapshotPath = RemoteLayout.snapshot(replica, seq: 1)
    static let headPath = RemoteLayout.head(replica, seq: 1)
    static let blobPath = RemoteLayout.blob(keyedName: String(repeating: "ab", count: 32))
    /// The passphrase of the seed `concord.json` whose Argon2id limits are the minimum.
    static let passphrase = "fuzz"

    /// The codes that make the sync layer report an object as damaged and skip it
    /// (`SyncEngine.isDamage`): every decoder of remote bytes must fail with one of these,
    /// or sync would take a damaged object for a failing remote.
    static let damage: [ConcordError.Code] = [
        .authenticationFailed, .unsupportedVersion, .malformed, .truncated, .limitExceeded, .unreadableObject,
    ]
}

/// Stops the run with a message libFuzzer records as a crash (with its input) when an
/// oracle fails.
func require(_ condition: Bool, _ message: @autoclosure () -> String) {
    if !condition { fatalError(message()) }
}

/// An error from a decoder of remote bytes must be one of ``Fixed/damage``.
func requireDamage(_ error: ConcordError, _ what: String) {
    require(Fixed.damage.contains(error.code), "\(what): failed with \(error.code.name), which sync does not treat as damage: \(error.message)")
}
