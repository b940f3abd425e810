extension ContentHash: Codable {
    /// Encoded as 64 lowercase hexadecimal digits.
    public init(from decoder: any Decoder) throws {
        let text = try decoder.singleValueContainer().decode(String.self)
        guard let hash = ContentHash(hex: text) else {
            throw DecodingError.dataCorrupted(.init(codingPath: decoder.codingPath, debugDescription: "not 64 hex digits: \(text)"))
        }
        self = hash
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(hex)
    }
}

extension FileRef: Codable {
    enum CodingKeys: String, CodingKey {
        case hash, size, type
    }

    /// Encoded as `{"hash": H, "size": N, "type": T}` (the canonical dump's file shape).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            hash: try container.decode(ContentHash.self, forKey: .hash),
            size: try container.decode(UInt64.self, forKey: .size),
            mediaType: try container.decodeIfPresent(String.self, forKey: .type))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(hash, forKey: .hash)
        try container.encode(size, forKey: .size)
        try container.encodeIfPresent(mediaType, forKey: .type)
    }
}
