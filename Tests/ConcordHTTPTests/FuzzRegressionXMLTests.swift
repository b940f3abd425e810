import ConcordHTTP
import ConcordS3
import ConcordWebDAV
import ConcordTesting
import Foundation
import Testing

/// The PROPFIND and S3 parsers on what `make fuzz` keeps: every fixture in
/// `Tests/Vectors/fuzz/{propfind,s3xml}/` (inputs a fuzz run once crashed on, once fixed),
/// and every seed of `Fuzz/Corpus/{propfind,s3xml}/`. The recorded answers — from Apache,
/// nginx, rclone and moto, `*.xml`, which parse, and an HTML page, which does not — are
/// also cut anywhere or changed at any byte: the parsers return a value or nil, and never
/// trap. The inputs fuzz runs found (`found-<sha1>.parses` or `.refused`, from the corpus
/// `-merge=1` left) parse, or do not, as their names say; and every seed reads the same
/// fed whole or a byte at a time.
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
            let parsed = Self.parse(target, seed.bytes)
            switch seed.name.split(separator: ".").last {
            case "xml", "parses": #expect(parsed, "\(target)/\(seed.name) parses")
            case "html", "refused": #expect(!parsed, "\(target)/\(seed.name) is refused")
            default: Issue.record("\(target)/\(seed.name): a seed's name ends in .xml or .html (recorded) or .parses or .refused (found)")
            }
            #expect(Self.events(seed.bytes, bytewise: true) == Self.events(seed.bytes, bytewise: false), "\(target)/\(seed.name) fed a byte at a time")
            guard seed.name.hasSuffix(".xml") || seed.name.hasSuffix(".html") else { continue }
            for length in 0..<seed.bytes.count { Self.parse(target, Array(seed.bytes.prefix(length))) }
            for index in seed.bytes.indices {
                var bytes = seed.bytes
                bytes[index] = replacements[index % replacements.count]
                Self.parse(target, bytes)
            }
        }
    }

    /// What the XML parser reads in `bytes`, fed whole or a byte at a time.
    static func events(_ bytes: [UInt8], bytewise: Bool) -> Result<[XMLEvent], XMLStreamError> {
        var parser = XMLStreamParser()
        var events: [XMLEvent] = []
        do throws(XMLStreamError) {
            if bytewise {
                for byte in bytes { try parser.feed([byte]) { events.append($0) } }
            } else {
                try parser.feed(bytes) { events.append($0) }
            }
            try parser.finish { events.append($0) }
            return .success(events)
        } catch {
            return .failure(error)
        }
    }
}
