import ConcordCore
import Foundation

extension StoreManifest: Codable {
    enum CodingKeys: String, CodingKey {
        case formatVersion, storeID, kdf, salt, opsLimit, memLimit, wrappedKey, keyCheck, created, name
    }

    /// Decodes `concord.json`. Reads `formatVersion` first and throws `unsupportedVersion`
    /// (a ``ConcordCore/ConcordError``) for any version but ``currentFormatVersion`` before looking at
    /// other fields, whose meaning may differ in other versions.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let version = try container.decode(Int.self, forKey: .formatVersion)
        guard version == Self.currentFormatVersion else {
            throw ConcordError(.unsupportedVersion, "concord.json has format version \(version); this release reads version \(Self.currentFormatVersion): upgrade Concord to use this store")
        }
        func hex(_ key: CodingKeys) throws -> [UInt8]? {
            guard let text = try container.decodeIfPresent(String.self, forKey: key) else { return nil }
            guard let bytes = Hex.decode(text) else {
                throw ConcordError(.malformed, "concord.json: \(key.stringValue) is not hexadecimal; it was modified; run `concord doctor`")
            }
            return bytes
        }
        let ops = try container.decodeIfPresent(UInt64.self, forKey: .opsLimit)
        let mem = try container.decodeIfPresent(UInt64.self, forKey: .memLimit)
        guard (ops == nil) == (mem == nil) else {
            throw ConcordError(.malformed, "concord.json: opsLimit and memLimit come together; it was modified; run `concord doctor`")
        }
        guard let keyCheck = try hex(.keyCheck) else {
            throw ConcordError(.malformed, "concord.json has no keyCheck; it was modified; run `concord doctor`")
        }
        try self.init(
            formatVersion: version,
            storeID: container.decode(StoreID.self, forKey: .storeID),
            kdf: KeyDerivationAlgorithm(name: container.decode(String.self, forKey: .kdf)),
            salt: hex(.salt),
            limits: ops.map { PasswordHashLimits(opsLimit: $0, memLimit: mem!) },
            wrappedKey: hex(.wrappedKey),
            keyCheck: keyCheck,
            created: container.decodeIfPresent(UInt64.self, forKey: .created),
            sealedName: hex(.name))
    }

    /// Encodes `concord.json`; byte strings as lowercase hex, absent fields omitted.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(formatVersion, forKey: .formatVersion)
        try container.encode(storeID, forKey: .storeID)
        try container.encode(kdf.name, forKey: .kdf)
        try container.encodeIfPresent(salt.map(Hex.encode), forKey: .salt)
        try container.encodeIfPresent(limits?.opsLimit, forKey: .opsLimit)
        try container.encodeIfPresent(limits?.memLimit, forKey: .memLimit)
        try container.encodeIfPresent(wrappedKey.map(Hex.encode), forKey: .wrappedKey)
        try container.encode(Hex.encode(keyCheck), forKey: .keyCheck)
        try container.encodeIfPresent(created, forKey: .created)
        try container.encodeIfPresent(sealedName.map(Hex.encode), forKey: .name)
    }

    /// `concord.json` as UTF-8: pretty-printed with sorted keys, so the same manifest
    /// always gives the same bytes.
    public func jsonBytes() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        // Encoding fixed-shape strings and integers cannot fail.
        return Array(try! encoder.encode(self)) + [0x0a]
    }

    /// Reads `concord.json`.
    ///
    /// - Throws: `unsupportedVersion` for another format version or an unknown key
    ///   derivation algorithm; `malformed`, saying what is wrong, for anything that is not
    ///   a valid version-1 manifest.
    public init(json: some Collection<UInt8>) throws(ConcordError) {
        do {
            self = try JSONDecoder().decode(StoreManifest.self, from: Data(json))
        } catch let error as ConcordError {
            throw error
        } catch let DecodingError.keyNotFound(key, _) {
            throw ConcordError(.malformed, "concord.json has no \(key.stringValue); it was modified or truncated; run `concord doctor`")
        } catch let DecodingError.typeMismatch(_, context), let DecodingError.valueNotFound(_, context) {
            let path = context.codingPath.map(\.stringValue).joined(separator: ".")
            throw ConcordError(.malformed, "concord.json: \(path.isEmpty ? "the document" : path) has the wrong type; it was modified; run `concord doctor`")
        } catch {
            throw ConcordError(.malformed, "concord.json is not valid JSON (\(error)); it was modified or truncated; run `concord doctor`", cause: error)
        }
    }
}
