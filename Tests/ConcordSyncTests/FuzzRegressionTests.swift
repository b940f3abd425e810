import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
@testable import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// The decoders of remote bytes on what `make fuzz` keeps: every fixture in
/// `Tests/Vectors/fuzz/<target>/` (each input a fuzz run once crashed on, once fixed,
/// named `fuzz-<target>-<what>`) decodes or fails with a typed damage error; and every seed
/// of `Fuzz/Corpus/<target>/` — the real encoders' output — truncated anywhere or with any
/// byte changed, fails with one (or, changed, still decodes to the value it encodes).
///
/// Targets, fixed key and names as in Fuzz/ConcordFuzz/Sources/ConcordFuzz (Targets.swift,
/// Fixed.swift). The CLI's and the XML targets' fixtures are checked in ConcordCLITests
/// and ConcordHTTPTests.
@Suite struct FuzzRegressionTests {
    static let targets = ["delta", "snapshot", "snapshot-object", "sealed-plaintext", "sealed-raw", "head", "manifest", "blob", "remote-layout"]

    // The fuzz targets' fixed key (bytes 0…31) and names.
    static let storeKey = try! StoreKey(bytes: (0..<32).map { UInt8($0) })
    static let replica = ReplicaID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
    static let blobPath = RemoteLayout.blob(keyedName: String(repeating: "ab", count: 32))
    static let damage: [ConcordError.Code] = [.authenticationFailed, .unsupportedVersion, .malformed, .truncated, .limitExceeded, .unreadableObject]

    static func files(_ folder: String) -> [(name: String, bytes: [UInt8])] { FuzzCorpus.files(folder) }

    /// What target `target` reads `bytes` as, as the fuzz target does; true when the bytes
    /// are the canonical encoding of what they decode to (false: they decode, but only as
    /// a value with another encoding, which the format allows only where it is not
    /// canonical: the seq table of a snapshot object, a manifest's JSON spelling, a head's).
    @discardableResult
    static func decode(_ target: String, _ bytes: [UInt8]) throws(ConcordError) -> Bool {
        switch target {
        case "delta":
            return DeltaCodec.encode(try DeltaCodec.decode(bytes), version: DeltaCodec.version(of: bytes)!) == bytes
        case "snapshot":
            return try SnapshotCodec.encode(try SnapshotCodec.decode(bytes)) == bytes
        case "snapshot-object":
            return try SnapshotObjectCodec.encode(try SnapshotObjectCodec.decode(bytes, path: RemoteLayout.snapshot(replica, seq: 1))) == bytes
        case "sealed-plaintext", "sealed-raw":
            let (path, purpose): (String, KeyPurpose) = switch (bytes.first ?? 0) % 3 {
            case 0: (RemoteLayout.batch(replica, seq: 1), .batches)
            case 1: (RemoteLayout.snapshot(replica, seq: 1), .snapshots)
            default: (RemoteLayout.head(replica, seq: 1), .heads)
            }
            let key = storeKey.subkey(for: purpose)
            let body = Array(bytes.dropFirst())
            let sealed = target == "sealed-raw" ? body : EncryptedObject.encryptDeterministically(body, path: path, key: key)
            let plaintext = try EncryptedObject.open(sealed, path: path, key: key)
            switch purpose {
            case .batches: _ = try DeltaCodec.decode(plaintext)
            case .snapshots: _ = try SnapshotObjectCodec.decode(plaintext, path: path)
            default: _ = try Head.decode(plaintext, path: path)
            }
            return false
        case "head":
            _ = try Head.decode(bytes, path: RemoteLayout.head(replica, seq: 1))
            return false
        case "manifest":
            return try StoreManifest(json: bytes).jsonBytes() == bytes
        case "blob":
            var decryptor = try BlobDecryptor(header: bytes.prefix(BlobStream.headerByteCount), key: storeKey.subkey(for: .blobContents), name: blobPath)
            var rest = bytes.dropFirst(BlobStream.headerByteCount)
            while !decryptor.isFinished {
                let frame = rest.prefix(BlobStream.frameByteCount)
                rest = rest.dropFirst(frame.count)
                if frame.isEmpty { try decryptor.finish() }
                _ = try decryptor.open(frame: frame)
            }
            guard rest.isEmpty else { throw ConcordError(.authenticationFailed, "blob: data after the final chunk") }
            return true
        case "remote-layout":
            let path = String(decoding: bytes, as: UTF8.self)
            try RemoteLayout.validateObjectPath(path)
            return RemoteLayout.parse(path)?.path == path
        default:
            Issue.record("no decoder for target \(target)")
            return false
        }
    }

    /// Decodes, or fails with a code sync counts as damage (or, for a name, as an invalid path).
    static func expectDecodesOrDamage(_ target: String, _ name: String, _ bytes: [UInt8]) {
        do throws(ConcordError) {
            try decode(target, bytes)
        } catch {
            let allowed = target == "remote-layout" ? [.invalidRemotePath] : damage
            #expect(allowed.contains(error.code), "\(target)/\(name): \(error)")
        }
    }

    /// The targets whose seeds other modules replay: `FuzzRegressionCLITests`
    /// (ConcordCLITests) and `FuzzRegressionXMLTests` (ConcordHTTPTests).
    static let targetsReplayedElsewhere = ["cli-value", "propfind", "s3xml"]

    /// No regression test is vacuous: every fuzz target (as `Target.all` in
    /// Fuzz/ConcordFuzz lists them) has a seed folder that holds seeds, every seed folder
    /// belongs to a target, and each target's seeds are replayed here or in the module
    /// named above.
    @Test func everyTargetHasSeedsThatATestReplays() throws {
        let source = try String(contentsOf: FuzzCorpus.root.appendingPathComponent("Fuzz/ConcordFuzz/Sources/ConcordFuzz/Targets.swift"), encoding: .utf8)
        let declared = source.split(separator: "Target(name: \"").dropFirst().map { String($0.prefix { $0 != "\"" }) }.sorted()
        #expect(declared.count >= 12, "Targets.swift names \(declared)")
        let folders = try FileManager.default.contentsOfDirectory(atPath: FuzzCorpus.root.appendingPathComponent("Fuzz/Corpus").path)
            .filter { !$0.hasPrefix(".") && $0 != "README.md" }.sorted()
        #expect(folders == declared, "Fuzz/Corpus/ holds one folder per target")
        #expect((Self.targets + Self.targetsReplayedElsewhere).sorted() == declared, "each target's seeds are replayed by one test")
        for target in declared {
            #expect(!Self.files("Fuzz/Corpus/\(target)").isEmpty, "no seeds in Fuzz/Corpus/\(target)")
        }
    }

    @Test(arguments: targets) func everyFixtureDecodesOrFailsTyped(target: String) {
        for fixture in Self.files("Tests/Vectors/fuzz/\(target)") {
            Self.expectDecodesOrDamage(target, fixture.name, fixture.bytes)
        }
    }

    @Test(arguments: targets) func everySeedDecodes(target: String) throws {
        let seeds = Self.files("Fuzz/Corpus/\(target)")
        try #require(!seeds.isEmpty, "no seeds in Fuzz/Corpus/\(target)")
        for seed in seeds where !seed.name.hasPrefix("foreign") {
            #expect(throws: Never.self, "\(target)/\(seed.name)") { try Self.decode(target, seed.bytes) }
        }
    }

    /// Every proper prefix of a seed fails typed: `truncated` for the binary codecs (the
    /// decoder reads the prefix as it read the whole, until the bytes run out),
    /// `authenticationFailed` for what is encrypted.
    @Test(arguments: targets) func truncatedSeedsFailTyped(target: String) {
        for seed in Self.files("Fuzz/Corpus/\(target)") {
            for length in 0..<seed.bytes.count {
                let prefix = Array(seed.bytes.prefix(length))
                switch target {
                case "delta", "snapshot", "snapshot-object":
                    #expect(throws: ConcordError.self, "\(target)/\(seed.name) cut at \(length)") {
                        do throws(ConcordError) { try Self.decode(target, prefix) } catch {
                            #expect(error.code == .truncated, "\(target)/\(seed.name) cut at \(length): \(error)")
                            throw error
                        }
                    }
                case "sealed-raw", "blob":
                    #expect(throws: ConcordError.self, "\(target)/\(seed.name) cut at \(length)") {
                        do throws(ConcordError) { try Self.decode(target, prefix) } catch {
                            #expect(error.code == .authenticationFailed, "\(target)/\(seed.name) cut at \(length): \(error)")
                            throw error
                        }
                    }
                case "remote-layout", "manifest":
                    // A prefix may still be a name ("heads/…" of a conflicted copy's name),
                    // or the whole manifest without its final newline.
                    Self.expectDecodesOrDamage(target, "\(seed.name) cut at \(length)", prefix)
                default:
                    // sealed-plaintext (a cut plaintext, sealed), head: JSON cut short.
                    #expect(throws: ConcordError.self, "\(target)/\(seed.name) cut at \(length)") {
                        do throws(ConcordError) { try Self.decode(target, prefix) } catch {
                            #expect(Self.damage.contains(error.code), "\(target)/\(seed.name) cut at \(length): \(error)")
                            throw error
                        }
                    }
                }
            }
        }
    }

    /// Every byte of every seed changed three ways: the result fails with a damage error,
    /// or decodes — and then, for the canonical binary codecs, is the encoding of what it
    /// decodes to; encrypted bytes never decode once changed.
    @Test(arguments: targets) func mutatedSeedsFailTypedOrStayCanonical(target: String) {
        let mutations: [(UInt8) -> UInt8] = [{ $0 ^ 0x01 }, { $0 ^ 0x80 }, { _ in 0xff }]
        for seed in Self.files("Fuzz/Corpus/\(target)") {
            for index in seed.bytes.indices {
                for mutation in mutations {
                    var bytes = seed.bytes
                    bytes[index] = mutation(bytes[index])
                    guard bytes != seed.bytes else { continue }
                    // The kind byte of a sealed seed, changed to another byte of the same kind.
                    if target.hasPrefix("sealed"), index == 0, bytes[0] % 3 == seed.bytes[0] % 3 { continue }
                    let what = "\(target)/\(seed.name) with byte \(index) \(seed.bytes[index]) → \(bytes[index])"
                    do throws(ConcordError) {
                        let canonical = try Self.decode(target, bytes)
                        switch target {
                        case "delta", "snapshot": #expect(canonical, "\(what) decodes, but is not the encoding of what it decodes to")
                        case "sealed-raw", "blob": Issue.record("\(what) still opens")
                        default: break
                        }
                    } catch {
                        let allowed = target == "remote-layout" ? [.invalidRemotePath] : Self.damage
                        #expect(allowed.contains(error.code), "\(what): \(error)")
                    }
                }
            }
        }
    }
}
