import ArgumentParser
import Concord
import Foundation
import Logging

/// The program's entry point: runs the command and turns every failure into a one-line
/// message on stderr and an exit code — 0 success, 1 the operation failed, 2 bad usage —
/// instead of ArgumentParser's defaults (64 for usage) or a stack trace.
@main
enum Entry {
    static func main() async {
        // Swift decodes arguments lossily (invalid UTF-8 becomes U+FFFD), which would make
        // `a\xff` and `a\xfe` the same record id: such an argument is refused instead.
        for index in 1..<max(1, Int(CommandLine.argc)) {
            guard let raw = CommandLine.unsafeArgv[index], String(validatingCString: raw) == nil else { continue }
            let shown = String(decoding: UnsafeBufferPointer(start: UnsafeRawPointer(raw).assumingMemoryBound(to: UInt8.self), count: strlen(raw)), as: UTF8.self)
            fail(ValidationError("argument \(index) ('\(clip(shown))') is not valid UTF-8; ids, names and values must be UTF-8 text (bytes go in as {\"$bytes\": \"hex\"})"), arguments: [])
        }
        let arguments = Array(CommandLine.arguments.dropFirst())
        // The library logs through swift-log (`ConcordLogLabel`): with --verbose every entry
        // goes to stderr, one line each; otherwise nowhere (stdout stays the command's own).
        let verbose = arguments.prefix { $0 != "--" }.contains("--verbose")
        LoggingSystem.bootstrap { label in
            guard verbose else { return SwiftLogNoOpLogHandler() }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = .debug
            return handler
        }
        do {
            // `put`'s FIELD=VALUE list is not ArgumentParser's to collect: it would take
            // quadratic time (``Put/splitAssignments(_:)``).
            let split = arguments.first == "put" ? Put.splitAssignments(arguments) : nil
            var command = try ConcordCommand.parseAsRoot(split?.parsed ?? arguments)
            if var put = command as? Put, let split {
                put.assignments = split.assignments
                try put.validate()
                command = put
            }
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            fail(error, arguments: arguments)
        }
    }

    /// `text` cut to a length a one-line message can echo.
    static func clip(_ text: String, to limit: Int = 80) -> String {
        text.count <= limit ? text : String(text.prefix(limit)) + "… (\(text.utf8.count) bytes)"
    }

    /// Reports `error` and exits with its status.
    static func fail(_ error: any Error, arguments: [String]) -> Never {
        let json = arguments.contains("--json")
        let status: Int32
        let code: String
        let message: String
        switch error {
        case let error as ConcordError:
            // A schema or query that cannot be used is bad input, as a malformed argument is.
            let badInput: [ConcordError.Code] = [.invalidDeclaration, .unknownField, .typeMismatch, .invalidQuery, .incompatibleSchema]
            (status, code, message) = (badInput.contains(error.code) ? ExitStatus.usage : ExitStatus.failure, error.code.name, error.message)
        case let error as ExitCode:
            exit(error.rawValue)
        default:
            let parserStatus = ConcordCommand.exitCode(for: error)
            if parserStatus == .success {
                // --help, --version: ArgumentParser's text on stdout.
                print(ConcordCommand.fullMessage(for: error))
                exit(ExitStatus.success)
            }
            let text = ConcordCommand.message(for: error)
            if parserStatus == .validationFailure {
                (status, code, message) = (ExitStatus.usage, "usage", usageLine(text, arguments: arguments))
            } else {
                (status, code, message) = (ExitStatus.failure, "failed", text)
            }
        }
        let line = oneLine(message)
        FileHandle.standardError.write(Data("concord: error: \(line)\n".utf8))
        if json {
            let document = JSON.object([
                ("error", .object([("code", .string(code)), ("exitCode", .int(Int64(status))), ("message", .string(line))])),
            ])
            print(document.text)
        }
        exit(status)
    }

    /// ArgumentParser's message, pointed at the help of the command that was meant.
    static func usageLine(_ text: String, arguments: [String]) -> String {
        var message = text
        if message.hasPrefix("Error: ") { message.removeFirst("Error: ".count) }
        var path = ["concord"]
        var command: any ParsableCommand.Type = ConcordCommand.self
        for argument in arguments {
            guard let sub = command.configuration.subcommands.first(where: { $0._commandName == argument }) else { break }
            path.append(argument)
            command = sub
        }
        return "\(message) (see `\(path.joined(separator: " ")) --help`)"
    }

    /// Messages are one line: newlines become spaces.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.joined(separator: " ")
    }
}
