/// Byte-exact string identity.
///
/// Swift's `String ==` is Unicode canonical equivalence: "é" precomposed equals "e" plus a
/// combining accent. Concord's names, ids and string values are identified by their UTF-8
/// bytes instead — as SQLite's BINARY collation compares them — so two replicas never
/// disagree about which of two equivalent spellings a merged key kept, and dumps stay
/// byte-identical.
package enum Bytewise {
    @inlinable
    package static func equal(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.count == rhs.utf8.count && compare(lhs, rhs) == 0
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
            rhs.withUTF8 { right in
                for index in 0..<min(left.count, right.count) where left[index] != right[index] {
                    return left[index] < right[index] ? -1 : 1
                }
                return left.count - right.count
            }
        }
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
