import CSodium
import ConcordCore

/// Argon2id cost limits (`crypto_pwhash` `opslimit` and `memlimit`), stored in
/// `concord.json` next to the salt so every device derives the same key.
///
/// Higher limits make guessing a passphrase slower for an attacker who copied
/// `concord.json`, and unlocking slower for the user (INTERACTIVE: about 0.1 s and 64 MiB).
public struct PasswordHashLimits: Hashable, Sendable, CustomStringConvertible {
    /// Argon2id passes over memory (`opslimit`).
    public let opsLimit: UInt64
    /// Argon2id memory in bytes (`memlimit`).
    public let memLimit: UInt64

    /// Limits as given. They are checked against the accepted range (``validate()``) when
    /// used, not here.
    public init(opsLimit: UInt64, memLimit: UInt64) {
        self.opsLimit = opsLimit
        self.memLimit = memLimit
    }

    /// libsodium's INTERACTIVE limits (2 passes, 64 MiB): the default.
    public static var interactive: PasswordHashLimits {
        PasswordHashLimits(opsLimit: UInt64(crypto_pwhash_opslimit_interactive()), memLimit: UInt64(crypto_pwhash_memlimit_interactive()))
    }
    /// libsodium's MODERATE limits (3 passes, 256 MiB).
    public static var moderate: PasswordHashLimits {
        PasswordHashLimits(opsLimit: UInt64(crypto_pwhash_opslimit_moderate()), memLimit: UInt64(crypto_pwhash_memlimit_moderate()))
    }
    /// libsodium's SENSITIVE limits (4 passes, 1 GiB).
    public static var sensitive: PasswordHashLimits {
        PasswordHashLimits(opsLimit: UInt64(crypto_pwhash_opslimit_sensitive()), memLimit: UInt64(crypto_pwhash_memlimit_sensitive()))
    }
    /// Argon2id's minimum limits (1 pass, 8 KiB). Offers no protection: for tests only.
    public static var minimum: PasswordHashLimits {
        PasswordHashLimits(opsLimit: UInt64(crypto_pwhash_argon2id_opslimit_min()), memLimit: UInt64(crypto_pwhash_argon2id_memlimit_min()))
    }

    /// The largest limits this release accepts from `concord.json`: libsodium's SENSITIVE
    /// limits, 4 passes and 1 GiB (the costliest a person can choose here).
    ///
    /// *Why*: `concord.json` is read, and its limits used, before anything authenticates it
    /// — whoever can write the storage could demand 32 passes over 4 GiB from every device
    /// before "wrong passphrase" comes back. More than this is refused before Argon2id runs.
    public static var maximumAccepted: PasswordHashLimits { sensitive }

    /// Throws `invalidParameter` unless the limits are within Argon2id's minimum and
    /// ``maximumAccepted``.
    public func validate() throws(ConcordError) {
        let minimum = Self.minimum
        guard (minimum.opsLimit...Self.maximumAccepted.opsLimit).contains(opsLimit),
              (minimum.memLimit...Self.maximumAccepted.memLimit).contains(memLimit) else {
            throw ConcordError(.invalidParameter, "Argon2id limits \(self) are outside the accepted range \(minimum.opsLimit)…\(Self.maximumAccepted.opsLimit) passes and \(minimum.memLimit)…\(Self.maximumAccepted.memLimit) bytes: if concord.json was not edited by hand, it was modified; run `concord doctor`")
        }
    }

    /// Both limits, for messages.
    public var description: String { "(ops \(opsLimit), mem \(memLimit) B)" }
}
