import ConcordTesting
import Foundation
import Testing

/// The command line's `FIELD=VALUE` parser on what `make fuzz` keeps: every fixture in
/// `Tests/Vectors/fuzz/cli-value/` (inputs a fuzz run once crashed on, once fixed) and every
/// seed of `Fuzz/Corpus/cli-value/`, whole and cut short, given to `concord put`: stored
/// (exit 0), or refused with one line and exit 2 — never a crash.
@Suite struct FuzzRegressionCLITests {
    static func texts(_ folder: String) -> [(name: String, text: String)] {
        FuzzCorpus.files(folder).compactMap { file in
            // An argument is UTF-8 without NUL; other bytes cannot reach the parser.
            guard !file.bytes.contains(0), let text = String(validating: file.bytes, as: UTF8.self) else { return nil }
            return (file.name, text)
        }
    }

    @Test func typedValuesAreStoredOrRefusedInOneLine() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init", "--name", "a"])
        let seeds = Self.texts("Fuzz/Corpus/cli-value")
        try #require(!seeds.isEmpty, "no seeds in Fuzz/Corpus/cli-value")
        var inputs = Self.texts("Tests/Vectors/fuzz/cli-value")
        for seed in seeds {
            inputs.append(seed)
            inputs.append((seed.name + " cut", String(seed.text.dropLast())))
        }
        for input in inputs {
            let result = try cli.run(["put", "c", "r", input.text, "--store", cli.path("a.db")])
            if result.status != 0 {
                expectFailure(result, status: 2, mentioning: [])
            }
        }
    }
}
