import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// `kill(2)`, named apart from the members called `kill`.
private func systemKill(_ pid: pid_t, _ signal: Int32) -> Int32 {
    kill(pid, signal)
}
import Synchronization

/// A child process started with `posix_spawn`, for the tests, benchmarks and loopback
/// servers that run other programs.
///
/// Foundation's `Process.run()` on Linux reads `/proc/self/fd` to close the descriptors a
/// child must not inherit, copying each directory entry's whole 256-byte name field; an entry
/// at the end of glibc's buffer, before an unmapped page, crashes the process (SIGSEGV in
/// `memcpy`) — now and then in a test run that starts hundreds of children. This spawns
/// with `posix_spawn_file_actions_addclosefrom_np` instead, which closes them in the child.
public final class Subprocess: Sendable {
    /// Where one of the child's standard streams goes.
    public enum Stream: Sendable {
        /// `/dev/null`.
        case null
        /// This process's own stream.
        case inherit
        /// A file, created or truncated (appended to with `append`).
        case file(String, append: Bool = false)
    }

    /// How the child ended.
    public enum Termination: Equatable, Sendable, CustomStringConvertible {
        case exited(Int32)
        case signalled(Int32)

        /// The exit code, or the signal's number.
        public var status: Int32 {
            switch self {
            case let .exited(code): code
            case let .signalled(signal): signal
            }
        }

        public var description: String {
            switch self {
            case let .exited(code): "exited \(code)"
            case let .signalled(signal): "killed by signal \(signal)"
            }
        }
    }

    /// A failure to start the child.
    public struct SpawnError: Error, CustomStringConvertible {
        public let executable: String
        public let errno: Int32
        public var description: String { "cannot start \(executable): \(String(cString: strerror(errno)))" }
    }

    /// The child's process identifier.
    public let pid: pid_t
    private let ended = Mutex<Termination?>(nil)

    private init(pid: pid_t) {
        self.pid = pid
    }

    /// Starts `executable` with `arguments` (without the program name), in `directory`, with
    /// `environment` (this process's own when `nil`).
    public static func start(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null
    ) throws(SpawnError) -> Subprocess {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        for (fd, stream) in [(STDIN_FILENO, stdin), (STDOUT_FILENO, stdout), (STDERR_FILENO, stderr)] {
            switch stream {
            case .inherit:
                break
            case .null:
                posix_spawn_file_actions_addopen(&actions, fd, "/dev/null", fd == STDIN_FILENO ? O_RDONLY : O_WRONLY, 0)
            case let .file(path, append):
                posix_spawn_file_actions_addopen(&actions, fd, path, O_WRONLY | O_CREAT | (append ? O_APPEND : O_TRUNC), 0o644)
            }
        }
        if let directory { _ = GNU.addChdir(&actions, directory) }
        _ = GNU.addCloseFrom(&actions, 3)

        let argv = ([executable] + arguments).map { strdup($0) } + [nil]
        let env = environment.map { $0.map { strdup("\($0.key)=\($0.value)") } + [nil] }
        defer {
            argv.forEach { free($0) }
            env?.forEach { free($0) }
        }
        var pid: pid_t = 0
        let result = argv.withUnsafeBufferPointer { argv in
            if let env {
                env.withUnsafeBufferPointer { posix_spawn(&pid, executable, &actions, nil, argv.baseAddress!, $0.baseAddress!) }
            } else {
                posix_spawn(&pid, executable, &actions, nil, argv.baseAddress!, environ)
            }
        }
        guard result == 0 else { throw SpawnError(executable: executable, errno: result) }
        return Subprocess(pid: pid)
    }

    /// Runs `executable` to its end; returns how it ended.
    @discardableResult
    public static func run(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil,
        stdin: Stream = .null, stdout: Stream = .null, stderr: Stream = .null
    ) throws(SpawnError) -> Termination {
        try start(executable, arguments, environment: environment, directory: directory, stdin: stdin, stdout: stdout, stderr: stderr).wait()
    }

    /// Sends `signal` to the child (nothing once it has been waited for).
    public func kill(_ signal: Int32 = SIGKILL) {
        ended.withLock { ended in
            if ended == nil { _ = systemKill(pid, signal) }
        }
    }

    /// Waits for the child to end, blocking the calling thread; returns how it ended.
    @discardableResult
    public func wait() -> Termination {
        if let termination = ended.withLock({ $0 }) { return termination }
        var status: Int32 = 0
        var result: pid_t
        repeat { result = waitpid(pid, &status, 0) } while result == -1 && errno == EINTR
        precondition(result == pid, "waitpid(\(pid)): \(String(cString: strerror(errno))); a child is waited for by one thread")
        let termination: Termination = status & 0x7f == 0 ? .exited((status >> 8) & 0xff) : .signalled(status & 0x7f)
        return ended.withLock { ended in
            if ended == nil { ended = termination }
            return ended!
        }
    }

    /// Waits for the child to end on a thread of its own, so that a test running hundreds of
    /// children does not hold one of the concurrency pool's few threads while each runs.
    public func finish() async -> Termination {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: self.wait()) }
        }
    }
}

/// glibc's spawn actions that Swift's Glibc module leaves out (they are declared only under
/// `_GNU_SOURCE`), looked up by name (glibc 2.29 and 2.34).
private enum GNU {
    typealias Actions = UnsafeMutablePointer<posix_spawn_file_actions_t>
    nonisolated(unsafe) static let addChdir = unsafeBitCast(
        symbol("posix_spawn_file_actions_addchdir_np"), to: (@convention(c) (Actions, UnsafePointer<CChar>) -> Int32).self)
    nonisolated(unsafe) static let addCloseFrom = unsafeBitCast(
        symbol("posix_spawn_file_actions_addclosefrom_np"), to: (@convention(c) (Actions, Int32) -> Int32).self)

    static func symbol(_ name: String) -> UnsafeMutableRawPointer {
        guard let address = dlsym(UnsafeMutableRawPointer(bitPattern: 0), name) else { fatalError("\(name) is missing: glibc 2.34 or later is needed") }
        return address
    }
}
