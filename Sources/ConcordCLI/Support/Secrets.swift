import Concord
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The terminal settings to restore if Ctrl-C interrupts a passphrase prompt (read only by
/// the signal handler, written before it is installed).
nonisolated(unsafe) private var terminalToRestore = termios()

/// Where passphrases, keys and key-derivation limits come from. The passphrase is never
/// stored: it comes from `$CONCORD_PASSPHRASE`, or a prompt on a terminal (no echo).
enum Secrets {
    static let passphraseVariable = "CONCORD_PASSPHRASE"
    static let newPassphraseVariable = "CONCORD_NEW_PASSPHRASE"
    static let limitsVariable = "CONCORD_KDF_LIMITS"

    /// How to unlock a remote store.
    enum Credential {
        case passphrase(String)
        case key(StoreKey, file: String)
    }

    /// The passphrase from the environment, or typed at a prompt. Fails (exit 1) with a
    /// one-line "how to provide it" when neither is possible.
    static func passphrase(
        for what: String, prompt label: String = "Passphrase", confirm: Bool = false, variable: String = passphraseVariable
    ) throws -> String {
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty { return value }
        guard isatty(STDIN_FILENO) == 1 else {
            let keyFileHint = variable == passphraseVariable ? ", pass --key-file FILE" : ""
            throw ConcordError(.noPassphrase, "no \(label.lowercased()) for \(what): set $\(variable)\(keyFileHint), or run on a terminal to be prompted")
        }
        let first = try prompt("\(label) for \(what): ")
        guard !first.isEmpty else { throw ConcordError(.noPassphrase, "the passphrase is empty: an empty passphrase protects nothing") }
        if confirm {
            let second = try prompt("Repeat the passphrase: ")
            guard first == second else { throw ConcordError(.noPassphrase, "the two passphrases differ; nothing was changed — run the command again") }
        }
        return first
    }

    /// Reads one line from the terminal with echo turned off.
    static func prompt(_ text: String) throws -> String {
        FileHandle.standardError.write(Data(text.utf8))
        var saved = termios()
        let isTerminal = tcgetattr(STDIN_FILENO, &saved) == 0
        if isTerminal {
            var silent = saved
            silent.c_lflag &= ~tcflag_t(ECHO)
            // Ctrl-C at the prompt must not leave the terminal without echo.
            terminalToRestore = saved
            signal(SIGINT) { _ in
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &terminalToRestore)
                _exit(130)
            }
            tcsetattr(STDIN_FILENO, TCSAFLUSH, &silent)
        }
        defer {
            if isTerminal {
                tcsetattr(STDIN_FILENO, TCSAFLUSH, &saved)
                signal(SIGINT, SIG_DFL)
            }
            FileHandle.standardError.write(Data("\n".utf8))
        }
        guard let line = readLine(strippingNewline: true) else {
            throw ConcordError(.noPassphrase, "no passphrase was typed (end of input)")
        }
        return line
    }

    /// The key in the key file at `path`.
    static func key(file path: String) throws -> StoreKey {
        try StoreKey(contentsOfKeyFile: Paths.absolute(path))
    }

    /// Writes a new random key to `path` (mode 0600; refuses to overwrite).
    static func writeNewKey(to path: String) throws -> StoreKey {
        let key = StoreKey.random()
        try writeKey(key, to: path)
        return key
    }

    /// Writes `key` to a new key file at `path` (mode 0600; refuses to overwrite).
    static func writeKey(_ key: StoreKey, to path: String) throws {
        let absolute = Paths.absolute(path)
        let descriptor = open(absolute, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard descriptor >= 0 else {
            throw ConcordError(.keyFile, "could not create key file \(absolute): \(String(cString: strerror(errno))); choose a path in a folder you can write")
        }
        defer { close(descriptor) }
        let bytes = key.keyFileContents
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(descriptor) == 0 else {
            unlink(absolute)
            throw ConcordError(.keyFile, "could not write key file \(absolute): \(String(cString: strerror(errno)))")
        }
    }

    /// The Argon2id limits for new passphrases: `$CONCORD_KDF_LIMITS` (`interactive`, the
    /// default; `moderate`; `sensitive`; or `minimum`, which protects nothing and exists
    /// only to make tests and the demo fast).
    static func limits() throws -> PasswordHashLimits {
        switch ProcessInfo.processInfo.environment[limitsVariable]?.lowercased() ?? "" {
        case "", "interactive": return .interactive
        case "moderate": return .moderate
        case "sensitive": return .sensitive
        case "minimum", "min": return .minimum
        case let other:
            throw ConcordError(.badEnvironment, "$\(limitsVariable) is '\(other)'; use interactive (the default), moderate, sensitive or minimum (tests only)")
        }
    }
}
