import ConcordCore
import Foundation

extension StoreKey {
    /// Reads a key file's contents: either exactly 32 raw bytes, or 64 hexadecimal digits
    /// (either case) with optional surrounding whitespace — the form ``keyFileContents``
    /// writes. Throws `invalidKey`, saying which form was expected, for anything else.
    public init(keyFileContents contents: some Collection<UInt8>) throws(ConcordError) {
        let bytes = Array(contents)
        if bytes.count == Self.byteCount {
            try self.init(bytes: bytes)
            return
        }
        let isSpace: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 || $0 == 0x0a || $0 == 0x0d }
        let trimmed = Array(bytes.drop(while: isSpace).reversed().drop(while: isSpace).reversed())
        guard trimmed.count == Self.byteCount * 2, let decoded = Hex.decode(utf8: trimmed) else {
            throw ConcordError(.invalidKey, "a key file holds exactly \(Self.byteCount) raw bytes or \(Self.byteCount * 2) hexadecimal digits; this one holds \(bytes.count) bytes that are neither: check that it is the key file `concord` wrote for this store")
        }
        try self.init(bytes: decoded)
    }

    /// Reads the key file at `path` (see ``init(keyFileContents:)``). Throws `invalidKey`
    /// naming the path when the file cannot be read or does not hold a key.
    public init(contentsOfKeyFile path: String) throws(ConcordError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConcordError(.invalidKey, "cannot read key file \(path): check that it exists and is readable")
        }
        do {
            try self.init(keyFileContents: [UInt8](data))
        } catch {
            throw ConcordError(.invalidKey, "key file \(path): \(error.message)")
        }
    }

    /// The key as a key file: 64 lowercase hexadecimal digits and a newline. Whoever holds
    /// these bytes can read the whole store: write them only to a file only the user can
    /// read.
    public var keyFileContents: [UInt8] {
        Array((Hex.encode(secret.copiedBytes) + "\n").utf8)
    }
}
