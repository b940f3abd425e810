import ConcordCore
import ConcordTestServers
import Foundation
import Testing

/// Runs the built `concord` binary, found next to the test bundle, in a temporary folder.
///
/// Every run gets `CONCORD_KDF_LIMITS=minimum` (fast Argon2id), the folder's passphrase in
/// `CONCORD_PASSPHRASE`, no `CONCORD_STORE`, and stdin from /dev/null (so no run ever
/// waits at a passphrase prompt).
struct CLI {
    struct Result {
        let status: Int32
        let stdout: String
        let stderr: String

        /// The stdout as JSON.
        func json() throws -> Any {
            try JSONSerialization.jsonObject(with: Data(stdout.utf8), options: [.fragmentsAllowed])
        }

        func object() throws -> [String: Any] {
            try #require(try json() as? [String: Any], "not a JSON object: \(stdout)")
        }

        var stderrLines: [Substring] { stderr.split(separator: "\n") }
    }

    static let binary: URL = {
        if let path = ProcessInfo.processInfo.environment["CONCORD_BINARY"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("concord")
    }()

    let folder: URL
    var passphrase = "correct horse battery staple"
    /// Set (or, with nil, unset) for every run: a remote's password, S3 credentials.
    var environment: [String: String?] = [:]

    /// A fresh temporary folder; delete it with ``cleanUp()``.
    init() throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("concord-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    func cleanUp() {
        try? FileManager.default.removeItem(at: folder)
    }

    func path(_ name: String) -> String { folder.appendingPathComponent(name).path }

    /// The remote folder's URL.
    var remoteURL: String { "file://" + path("remote") }

    /// Runs a command with the system clock reading `epochSeconds` (libfaketime's
    /// `faketime`, which `make test` installs), on the store `name`.
    @discardableResult
    func faked(_ epochSeconds: UInt64, on name: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Result {
        let faketime = "/usr/bin/faketime"
        try #require(FileManager.default.isExecutableFile(atPath: faketime), "faketime is missing: `make test` installs it (Debian's faketime)", sourceLocation: sourceLocation)
        let result = try run(["@\(epochSeconds)", Self.binary.path] + arguments + ["--store", path("\(name).db")], executable: faketime)
        #expect(result.status == 0, "faketime concord \(arguments.joined(separator: " ")) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    @discardableResult
    func run(_ arguments: [String], environment: [String: String?] = [:], executable: String? = nil) throws -> Result {
        let (child, out, err) = try spawn(arguments, environment: environment, executable: executable)
        return try collect(child.wait(), out, err)
    }

    /// ``run(_:environment:executable:)`` for async tests: the child is waited for on a thread
    /// of its own (`Subprocess.finish()`), so a test that runs many commands holds none of the
    /// concurrency pool's few threads (two on a 2-core machine) while each runs — which would
    /// starve every other async test in the process meanwhile.
    @discardableResult
    func runAsync(_ arguments: [String], environment: [String: String?] = [:], executable: String? = nil) async throws -> Result {
        let (child, out, err) = try spawn(arguments, environment: environment, executable: executable)
        return try collect(await child.finish(), out, err)
    }

    private func spawn(_ arguments: [String], environment: [String: String?], executable: String?) throws -> (Subprocess, URL, URL) {
        #expect(FileManager.default.isExecutableFile(atPath: Self.binary.path), "build the concord product first: \(Self.binary.path)")
        var env = ProcessInfo.processInfo.environment
        env["CONCORD_STORE"] = nil
        env["CONCORD_NEW_PASSPHRASE"] = nil
        env["CONCORD_KDF_LIMITS"] = "minimum"
        env["CONCORD_PASSPHRASE"] = passphrase
        for (key, value) in self.environment.merging(environment, uniquingKeysWith: { $1 }) { env[key] = value }
        let id = UUID().uuidString
        let outURL = folder.appendingPathComponent(".out-\(id)")
        let errURL = folder.appendingPathComponent(".err-\(id)")
        let child = try Subprocess.start(
            executable ?? Self.binary.path, arguments, environment: env, directory: folder.path, stdout: .file(outURL.path), stderr: .file(errURL.path))
        return (child, outURL, errURL)
    }

    private func collect(_ termination: Subprocess.Termination, _ outURL: URL, _ errURL: URL) throws -> Result {
        defer {
            try? FileManager.default.removeItem(at: outURL)
            try? FileManager.default.removeItem(at: errURL)
        }
        return Result(
            status: termination.status,
            stdout: String(decoding: try Data(contentsOf: outURL), as: UTF8.self),
            stderr: String(decoding: try Data(contentsOf: errURL), as: UTF8.self))
    }

    /// Runs a command that must succeed.
    @discardableResult
    func ok(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Result {
        let result = try run(arguments)
        #expect(result.status == 0, "concord \(arguments.joined(separator: " ")) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// ``ok(_:sourceLocation:)`` for async tests (the child waited for off the pool).
    @discardableResult
    func okAsync(_ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> Result {
        let result = try await runAsync(arguments)
        #expect(result.status == 0, "concord \(arguments.joined(separator: " ")) failed: \(result.stderr)", sourceLocation: sourceLocation)
        return result
    }

    /// ``on(_:_:sourceLocation:)`` for async tests (the child waited for off the pool).
    @discardableResult
    func onAsync(_ name: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) async throws -> Result {
        try await okAsync(arguments + ["--store", path("\(name).db")], sourceLocation: sourceLocation)
    }

    /// Runs a command on the store `name` (`<name>.db` in the folder).
    @discardableResult
    func on(_ name: String, _ arguments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws -> Result {
        try ok(arguments + ["--store", path("\(name).db")], sourceLocation: sourceLocation)
    }

    /// Creates replicas `names`, the remote (by the first), and joins the others to it;
    /// `remote` is the `remote set` arguments (default: the folder `remote`).
    func replicas(_ names: [String], remote: [String]? = nil) throws {
        for (index, name) in names.enumerated() {
            try on(name, ["init", "--name", name])
            try on(name, ["remote", "set"] + (remote ?? [remoteURL]) + (index == 0 ? ["--create"] : []))
        }
    }

    /// Syncs every replica twice over, in order: enough for all to see every change.
    func syncAll(_ names: [String]) throws {
        for name in names + names { try on(name, ["sync"]) }
    }

    func dump(_ name: String) throws -> String {
        try on(name, ["dump"]).stdout
    }

    func dumpAsync(_ name: String) async throws -> String {
        try await onAsync(name, ["dump"]).stdout
    }
}

/// Expects a failure with `status` and exactly one line on stderr that mentions `words`.
func expectFailure(
    _ result: CLI.Result, status: Int32, mentioning words: [String], sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(result.status == status, "expected exit \(status), got \(result.status): \(result.stderr)", sourceLocation: sourceLocation)
    #expect(result.stderrLines.count == 1, "expected one line on stderr: \(result.stderr)", sourceLocation: sourceLocation)
    for word in words {
        #expect(result.stderr.contains(word), "stderr does not mention \(word): \(result.stderr)", sourceLocation: sourceLocation)
    }
    #expect(!result.stderr.contains("Fatal error") && !result.stderr.contains("Stack dump"), sourceLocation: sourceLocation)
}
