/// Byte-exact string identity.
///
/// Swift's `String ==` is Unicode canonical equivalence: "é" precomposed equals "e" plus a
/// combining accent. Concord's names, ids and string values are identified by their UTF-8
/// bytes instead — as SQLite's BINARY collation compares them — so two replicas never
/// disagree about which of two equivalent spellings a merged key kept, and dumps stay
/// byte-identical.
package enum Bytewise {
    /// Two values of one string (a record's id passed to every write of its fields) are
    /// equal at once. Otherwise Swift's `==` rules out most unequal pairs first, and cheaply
    /// (strings with the same bytes are canonically equivalent too; two short ASCII strings
    /// compare as two words), and only canonically equivalent strings have their bytes
    /// compared.
    @inlinable
    package static func equal(_ lhs: String, _ rhs: String) -> Bool {
        sameRepresentation(lhs, rhs) || (lhs.utf8.count == rhs.utf8.count && lhs == rhs && compare(lhs, rhs) == 0)
    }

    /// Whether two strings are represented by the same two words: the same bytes held inline
    /// (a string of up to 15 bytes is its bytes), or the same storage. Either way their
    /// bytes are the same; Swift's own `==` begins with this test. Where a string is not two
    /// words this answers false, and the bytes are compared.
    @inlinable
    package static func sameRepresentation(_ lhs: String, _ rhs: String) -> Bool {
        guard MemoryLayout<String>.size == MemoryLayout<(UInt64, UInt64)>.size else { return false }
        return unsafeBitCast(lhs, to: (UInt64, UInt64).self) == unsafeBitCast(rhs, to: (UInt64, UInt64).self)
    }

    @inlinable
    package static func hash(_ value: String, into hasher: inout Hasher) {
        var copy = value
        copy.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        hasher.combine(value.utf8.count)
    }

    @inlinable
    package static func less(_ lhs: String, _ rhs: String) -> Bool {
        compare(lhs, rhs) < 0
    }

    /// Negative, zero or positive as `lhs`'s UTF-8 bytes sort before, equal or after
    /// `rhs`'s (a shorter prefix first), compared over contiguous bytes: the names and ids of
    /// every read and write pass through here, and walking two `UTF8View`s index by index
    /// cost several times as much.
    @inlinable
    package static func compare(_ lhs: String, _ rhs: String) -> Int {
        var lhs = lhs
        var rhs = rhs
        return lhs.withUTF8 { left in
            rhs.withUTF8 { right in compare(UnsafeRawBufferPointer(left), UnsafeRawBufferPointer(right)) }
        }
    }

    /// The same order over two byte buffers, eight bytes at a time: a word read in big-endian
    /// order compares as its bytes do one by one.
    @inlinable
    package static func compare(_ left: UnsafeRawBufferPointer, _ right: UnsafeRawBufferPointer) -> Int {
        let common = min(left.count, right.count)
        var index = 0
        while index + 8 <= common {
            let a = UInt64(bigEndian: left.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            let b = UInt64(bigEndian: right.loadUnaligned(fromByteOffset: index, as: UInt64.self))
            if a != b { return a < b ? -1 : 1 }
            index += 8
        }
        while index < common {
            let a = left[index]
            let b = right[index]
            if a != b { return a < b ? -1 : 1 }
            index += 1
        }
        return left.count - right.count
    }

    /// A word of `value`'s first eight bytes and its length in bytes: strings with different
    /// keys differ, so a search for a string among a few compares one word for each and the
    /// bytes only of those with its key.
    @inlinable
    package static func key(_ value: String) -> UInt64 {
        var value = value
        return value.withUTF8 { bytes in
            var word = UInt64(truncatingIfNeeded: bytes.count) &* 0x9E37_79B9_7F4A_7C15
            for (index, byte) in bytes.prefix(8).enumerated() { word ^= UInt64(byte) << (8 * UInt64(index)) }
            return word
        }
    }

    /// Whether `value` holds a NUL byte, which SQLite's text ends at.
    @inlinable
    package static func containsNUL(_ value: String) -> Bool {
        var value = value
        return value.withUTF8 { $0.contains(0) }
    }
}

/// A string compared, hashed and ordered by its UTF-8 bytes: a dictionary key that never
/// merges canonically-equivalent spellings.
package struct ExactString: Hashable, Comparable, Sendable {
    package let value: String

    package init(_ value: String) {
        self.value = value
    }

    package static func == (lhs: ExactString, rhs: ExactString) -> Bool { Bytewise.equal(lhs.value, rhs.value) }
    package func hash(into hasher: inout Hasher) { Bytewise.hash(value, into: &hasher) }
    package static func < (lhs: ExactString, rhs: ExactString) -> Bool { Bytewise.less(lhs.value, rhs.value) }
}
