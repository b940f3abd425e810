import ArgumentParser
import Concord

/// An operation that failed exits 1 with what happened and what to do, on one line; bad
/// usage is reported with ArgumentParser's `ValidationError` instead (exit 2).
///
/// The command line's failures are `ConcordError`s like the library's, with the library's
/// codes where the failure is the same (`notFound`, `invalidOperation`, `missingBlob`,
/// `wrongKey`, `storeMismatch`; a remote's root check: `noFolder`, `notAFolder`,
/// `noBucket`) and these where only the command line can fail. `--json` error documents
/// carry the code's name.
extension ConcordError.Code {
    /// No store file at the path `--store` (or `$CONCORD_STORE`) names.
    static let noStore = Self("noStore")
    /// The store has no remote yet.
    static let noRemote = Self("noRemote")
    /// `init` over an existing store.
    static let exists = Self("exists")
    /// No passphrase in the environment and no terminal to ask on, or an unusable one.
    static let noPassphrase = Self("noPassphrase")
    /// The remote store is unlocked with a key file and none was given.
    static let needKeyFile = Self("needKeyFile")
    /// A key file that cannot be written or read.
    static let keyFile = Self("keyFile")
    /// An environment variable with a value the command cannot use.
    static let badEnvironment = Self("badEnvironment")
    /// The remote holds no `concord.json`.
    static let noRemoteStore = Self("noRemoteStore")
    /// A file to attach or merge that does not exist.
    static let noFile = Self("noFile")
    /// A field that is not a file field where a file was meant.
    static let notAFile = Self("notAFile")
    /// The demo could not run, or its replicas disagreed.
    static let demo = Self("demo")
}

extension ConcordError {
    /// The store file is missing.
    static func noStore(_ path: String) -> ConcordError {
        ConcordError(.noStore, "no Concord store at \(path): create one with `concord init --store \(path)`, or point --store (or $CONCORD_STORE) at an existing store")
    }

    /// The store has no remote yet.
    static let noRemote = ConcordError(.noRemote, "this store has no remote: set one with `concord remote set file:///path/to/folder`")
}

/// Exit codes (README, "Exit codes").
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}
