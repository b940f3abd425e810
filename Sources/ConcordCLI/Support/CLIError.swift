import ArgumentParser
import Concord

/// An operation that failed (exit 1): what happened and what to do, on one line.
///
/// Bad usage is reported with ArgumentParser's `ValidationError` instead (exit 2); errors
/// of the library (`ConcordError`) carry their own actionable messages and also exit 1.
struct CLIError: Error, CustomStringConvertible {
    /// A short machine-readable name, shown in `--json` error documents.
    let code: String
    let message: String

    init(_ code: String, _ message: String) {
        self.code = code
        self.message = message
    }

    var description: String { message }

    /// The store file is missing.
    static func noStore(_ path: String) -> CLIError {
        CLIError("noStore", "no Concord store at \(path): create one with `concord init --store \(path)`, or point --store (or $CONCORD_STORE) at an existing store")
    }

    /// The store has no remote yet.
    static let noRemote = CLIError("noRemote", "this store has no remote: set one with `concord remote set file:///path/to/folder`")

    /// An operation the library does not offer yet.
    static func notAvailable(_ what: String) -> CLIError {
        CLIError("notAvailable", what)
    }
}

/// Exit codes (README, "Exit codes").
enum ExitStatus {
    static let success: Int32 = 0
    static let failure: Int32 = 1
    static let usage: Int32 = 2
}
