import ConcordS3
import ConcordWebDAV
import ConcordTesting
import Foundation
import Testing

/// The PROPFIND and S3 parsers on what `make fuzz` keeps: every fixture in
/// `Tests/Vectors/fuzz/{propfind,s3xml}/` (inputs a fuzz run once crashed on, once fixed),
/// and every seed of `Fuzz/Corpus/{propfind,s3xml}/` — answers recorded from Apache, nginx,
/// rclone and moto — cut anywhere or with a byte changed: the parsers return a value or
/// nil, and never trap. The seeds themselves parse.
@Suite struct FuzzRegressionXMLTests {
    static func files(_ folder: String) -> [(name: String, bytes: [UInt8])] { FuzzCorpus.files(folder) }

    /// What the fuzz target does with the bytes; whether the answer parsed.
    @discardableResult
    static func parse(_ target: String, _ bytes: [UInt8]) -> Bool {
        if target == "propfind" {
            _ = PropfindParser.path(ofHref: String(decoding: bytes.prefix(512), as: UTF8.self))
            return PropfindParser.parse(bytes) != nil
        }
        return ["Contents", "Upload", "Part", "-"].map { S3XML.parse(bytes, record: $0) != nil }.allSatisfy { $0 }
    }

    @Test(arguments: ["propfind", "s3xml"]) func fixturesAndSeedVariantsNeverTrap(target: String) throws {
        for fixture in Self.files("Tests/Vectors/fuzz/\(target)") { Self.parse(target, fixture.bytes) }
        let seeds = Self.files("Fuzz/Corpus/\(target)")
        try #require(!seeds.isEmpty, "no seeds in Fuzz/Corpus/\(target)")
        let replacements = Array("<>&/\"=x \u{0}".utf8)
        for seed in seeds {
            #expect(Self.parse(target, seed.bytes) == seed.name.hasSuffix(".xml"), "\(target)/\(seed.name)")
            for length in 0..<seed.bytes.count { Self.parse(target, Array(seed.bytes.prefix(length))) }
            for index in seed.bytes.indices {
                var bytes = seed.bytes
                bytes[index] = replacements[index % replacements.count]
                Self.parse(target, bytes)
            }
        }
    }
}
