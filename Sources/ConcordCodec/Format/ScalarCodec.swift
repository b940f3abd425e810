import ConcordCore

/// The canonical binary form of one scalar (docs/FORMAT.md §4.5): how the store keys set
/// elements. Equal values have equal bytes.
public enum ScalarCodec {
    public static func encode(_ value: ScalarValue) -> [UInt8] {
        var writer = ByteWriter()
        RecordsCodec.writeScalar(value, to: &writer)
        return writer.bytes
    }

    /// Decodes exactly one scalar.
    public static func decode(_ bytes: [UInt8]) throws(ConcordError) -> ScalarValue {
        var reader = ByteReader(bytes, what: "scalar")
        let tag = try reader.byte("value tag")
        let value = try RecordsCodec.readScalar(&reader, tag: tag)
        guard reader.isAtEnd else { throw reader.error(.malformed, "\(reader.remaining) bytes after the value") }
        return value
    }
}
