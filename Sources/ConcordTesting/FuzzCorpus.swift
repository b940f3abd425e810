import Foundation

/// The inputs `make fuzz` keeps, for the regression tests that replay them: the seed corpus
/// (`Fuzz/Corpus/<target>/`) and the fixtures of inputs a fuzz run once crashed on
/// (`Tests/Vectors/fuzz/<target>/`), read from this checkout.
public enum FuzzCorpus {
    /// The package root of this checkout.
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// The files of `folder` (relative to the package root), sorted by name, without
    /// hidden files and READMEs; none if the folder is missing.
    public static func files(_ folder: String) -> [(name: String, bytes: [UInt8])] {
        let url = root.appendingPathComponent(folder)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
        return names.filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted().compactMap { name in
            (try? Data(contentsOf: url.appendingPathComponent(name))).map { (name, Array($0)) }
        }
    }
}
