import Foundation

/// libFuzzer's driver (`libclang_rt.fuzzer_no_main`): parses libFuzzer's flags from
/// `argv` and calls `callback` with each input.
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

/// The target the driver's callback runs; set once, before the driver starts.
nonisolated(unsafe) var selectedTarget: Target?

/// `ConcordFuzz <target> [libFuzzer flags] [corpus folders or input files]` runs a target
/// under libFuzzer; `ConcordFuzz seeds <folder>` writes the seed corpus, one folder per
/// target, from the real encoders; `ConcordFuzz list` names the targets, and
/// `ConcordFuzz flags TARGET` prints the libFuzzer flags a target needs.
@main
enum ConcordFuzz {
    static func main() async {
        let arguments = CommandLine.arguments
        switch arguments.dropFirst().first {
        case "list":
            for target in Target.all { print("\(target.name)\t\(target.summary)") }
        case "flags" where arguments.count == 3 && Target.named(arguments[2]) != nil:
            print(Target.named(arguments[2])!.flags.joined(separator: " "))
        case "seeds" where arguments.count == 3:
            do {
                try await Seeds.write(to: URL(fileURLWithPath: arguments[2]))
            } catch {
                FileHandle.standardError.write(Data("ConcordFuzz: seeds: \(error)\n".utf8))
                exit(1)
            }
        case let name? where Target.named(name) != nil:
            selectedTarget = Target.named(name)
            // libFuzzer runs this binary again for `-merge=1` (and `-fork`, `-minimize_crash`)
            // with its own flags but not the target's name: the environment carries it.
            setenv(targetVariable, name, 1)
            var driverArguments = [arguments[0]] + arguments.dropFirst(2)
            exit(runDriver(&driverArguments))
        case _ where ProcessInfo.processInfo.environment[targetVariable].flatMap(Target.named) != nil:
            selectedTarget = ProcessInfo.processInfo.environment[targetVariable].flatMap(Target.named)
            var driverArguments = arguments
            exit(runDriver(&driverArguments))
        default:
            FileHandle.standardError.write(Data("usage: ConcordFuzz list | flags TARGET | seeds FOLDER | TARGET [libFuzzer flags] [corpus…]\n".utf8))
            exit(2)
        }
    }

    /// The target a run of libFuzzer started, for the processes it starts in turn.
    static let targetVariable = "CONCORD_FUZZ_TARGET"

    static func runDriver(_ arguments: inout [String]) -> Int32 {
        var argc = Int32(arguments.count)
        var cArguments: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        return cArguments.withUnsafeMutableBufferPointer { buffer in
            var argv = buffer.baseAddress
            return LLVMFuzzerRunDriver(&argc, &argv) { data, size in
                let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
                selectedTarget!.run(bytes)
                return 0
            }
        }
    }
}
