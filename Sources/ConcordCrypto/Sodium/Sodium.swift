import CSodium

/// The result of the one call to `sodium_init()`. A global `let` is initialized lazily,
/// exactly once, under the runtime's once-lock, so concurrent first uses are safe.
private let sodiumInitResult: Int32 = sodium_init()

/// Thin helpers over libsodium shared by every file of this module.
enum Sodium {
    /// Makes sure `sodium_init()` has run. Every entry point that touches libsodium calls
    /// this first: libsodium picks its CPU-specific implementations and seeds its random
    /// generator there. `sodium_init()` returns 0 on the first call and 1 on later calls;
    /// -1 means the library cannot work at all (no entropy source), and nothing sound
    /// can be done without it, so that traps.
    @inline(__always)
    static func ensureInitialized() {
        if sodiumInitResult < 0 {
            fatalError("libsodium failed to initialize (sodium_init() returned \(sodiumInitResult)): no usable random source")
        }
    }

    /// `count` bytes from libsodium's cryptographically secure random generator.
    static func randomBytes(_ count: Int) -> [UInt8] {
        ensureInitialized()
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { randombytes_buf(buffer.baseAddress!, count) }
            initialized = count
        }
    }

    /// Compares two byte strings in time that depends only on their lengths.
    static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in sodium_memcmp(pa.baseAddress!, pb.baseAddress!, a.count) == 0 }
        }
    }
}

extension Collection<UInt8> {
    /// Calls `body` with a pointer to the bytes and their count. The pointer is never nil,
    /// even for an empty collection: several libsodium functions are declared `nonnull`
    /// even for zero-length inputs, and an empty Swift array need not have a base address.
    func withNonNullBytes<R, E: Error>(_ body: (UnsafePointer<UInt8>, Int) throws(E) -> R) throws(E) -> R {
        let result: Result<R, E>? = withContiguousStorageIfAvailable { buffer in
            Result { () throws(E) -> R in
                if let base = buffer.baseAddress, !buffer.isEmpty { return try body(base, buffer.count) }
                let zero: UInt8 = 0
                return try withUnsafePointer(to: zero) { (pointer) throws(E) -> R in try body(pointer, 0) }
            }
        }
        if let result { return try result.get() }
        return try Array(self).withNonNullBytes(body)
    }
}
