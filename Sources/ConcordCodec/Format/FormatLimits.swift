import ConcordCore

/// The limits of format versions 1 and 2 (docs/FORMAT.md §5). A decoder refuses anything larger
/// with ``/ConcordCore/ConcordError/Code/limitExceeded`` before allocating for it.
public enum FormatLimits {
    /// Bytes of a collection or field name.
    public static let nameBytes = 1_024
    /// Bytes of a record id.
    public static let idBytes = 1_024
    /// Bytes of a string or bytes scalar value.
    public static let valueBytes = 16 << 20
    /// Bytes of a file's media type.
    public static let mediaTypeBytes = 255
    /// Distinct replicas named in one object.
    public static let replicas = 65_536
    /// Distinct names (collections and fields) in one object.
    public static let names = 65_536
    /// Records in one object.
    public static let records = 16 << 20
    /// Slots in one record.
    public static let slotsPerRecord = 1 << 20
    /// Entries in one slot.
    public static let entriesPerSlot = 65_536
    /// Ranges of one replica in a snapshot's context.
    public static let rangesPerReplica = 1 << 20
}

/// The first bytes of every encoded object: magic, format version, kind (docs/FORMAT.md §3).
public enum ObjectHeader {
    /// "CNCD".
    public static let magic: [UInt8] = [0x43, 0x4e, 0x43, 0x44]
    /// The format version of snapshots, the only one this release writes and reads for them.
    public static let version: UInt8 = 1

    /// What an object holds.
    public enum Kind: UInt8, Sendable {
        case delta = 1
        case snapshot = 2
    }

    static func write(_ kind: Kind, version: UInt8 = version, to writer: inout ByteWriter) {
        writer.raw(magic)
        writer.byte(version)
        writer.byte(kind.rawValue)
    }

    /// Reads the header of an object of kind `expected` in one of the `versions` this
    /// release reads, and returns its version.
    @discardableResult
    static func read(_ expected: Kind, versions: ClosedRange<UInt8> = version...version, from reader: inout ByteReader) throws(ConcordError) -> UInt8 {
        let magic = try reader.raw(4, "magic")
        guard magic.elementsEqual(Self.magic) else {
            throw reader.error(.malformed, "not a Concord object (bad magic)")
        }
        let version = try reader.byte("format version")
        guard versions.contains(version) else {
            let readable = versions.count == 1 ? "version \(versions.lowerBound)" : "versions \(versions.lowerBound) to \(versions.upperBound)"
            throw reader.error(
                .unsupportedVersion,
                "format version \(version) is not supported (this release reads \(readable)); upgrade Concord to read it")
        }
        let kind = try reader.byte("object kind")
        guard kind == expected.rawValue else {
            throw reader.error(.malformed, "object kind \(kind) where \(expected) (\(expected.rawValue)) was expected")
        }
        return version
    }
}
