import ConcordCore
import ConcordCrypto
import ConcordTesting
import Foundation
import Testing

/// Hex for test fixtures (ConcordCore's hex helper is internal).
enum TestHex {
    static func decode(_ text: String) -> [UInt8] {
        let chars = Array(text.utf8)
        precondition(chars.count % 2 == 0, "odd hex length in fixture")
        func nibble(_ c: UInt8) -> UInt8 {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: preconditionFailure("bad hex digit in fixture")
            }
        }
        return stride(from: 0, to: chars.count, by: 2).map { nibble(chars[$0]) << 4 | nibble(chars[$0 + 1]) }
    }

    static func encode(_ bytes: some Sequence<UInt8>) -> String {
        bytes.map { String(format: "%02x", $0) }.joined()
    }
}

/// Seeded random bytes, so every randomized test replays from the seed it names.
func seededBytes(_ count: Int, seed: UInt64) -> [UInt8] {
    var random = SeededGenerator(seed: seed)
    var out = [UInt8](repeating: 0, count: count)
    var index = 0
    while index < count {
        var word = random.next()
        for _ in 0..<8 where index < count {
            out[index] = UInt8(truncatingIfNeeded: word)
            word >>= 8
            index += 1
        }
    }
    return out
}

/// Runs `body` and returns the `ConcordError` it threw, or nil when it returned or threw
/// something else (recorded as an issue by the caller's `#expect`).
func concordError(_ body: () throws -> Void) -> ConcordError? {
    do {
        try body()
        return nil
    } catch let error as ConcordError {
        return error
    } catch {
        return nil
    }
}

/// Expects `body` to throw a `ConcordError` with `code`; returns it for further checks.
@discardableResult
func expectConcordError(
    _ code: ConcordError.Code, _ comment: Comment? = nil,
    sourceLocation: SourceLocation = #_sourceLocation, _ body: () throws -> Void
) -> ConcordError? {
    let error = #expect(throws: ConcordError.self, comment, sourceLocation: sourceLocation) { try body() }
    #expect(error?.code == code, "expected \(code), got \(String(describing: error))", sourceLocation: sourceLocation)
    return error
}

/// Where the public test vectors live: `$CONCORD_VECTORS`, else `Tests/Vectors` in this
/// repository (found from this file's path).
enum Vectors {
    static var directory: URL {
        if let path = ProcessInfo.processInfo.environment["CONCORD_VECTORS"], !path.isEmpty {
            return URL(fileURLWithPath: path, isDirectory: true)
        }
        return URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent()  // Support
            .deletingLastPathComponent()  // ConcordCryptoTests
            .deletingLastPathComponent()  // Tests
            .appendingPathComponent("Vectors", isDirectory: true)
    }

    static var wycheproofXChaCha: URL {
        directory.appendingPathComponent("wycheproof/xchacha20_poly1305_test.json")
    }
}

/// A store key with fixed bytes 0, 1, …, 31, for fixtures that must not change.
func fixedStoreKey(offset: UInt8 = 0) -> StoreKey {
    try! StoreKey(bytes: (0..<32).map { UInt8($0) &+ offset })
}
