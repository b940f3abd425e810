import CSodium

/// Secret bytes (a key) in a heap buffer that is wiped with `sodium_memzero` when the last
/// reference goes away.
///
/// Why a class: a Swift array may be copied or moved by the runtime and its old storage is
/// never wiped; one stable buffer with a wiping `deinit` keeps exactly one copy of the key
/// in memory for as long as it is used. The buffer is written only in `init` and read-only
/// afterwards, so sharing it between threads is safe (hence `@unchecked Sendable`).
final class SecretBytes: @unchecked Sendable {
    private let buffer: UnsafeMutableRawBufferPointer

    /// The number of secret bytes.
    var count: Int { buffer.count }

    /// Copies `bytes` into a new buffer.
    init(copying bytes: some Collection<UInt8>) {
        buffer = .allocate(byteCount: bytes.count, alignment: 16)
        buffer.copyBytes(from: bytes)
    }

    /// A new buffer of `count` bytes, filled by `fill`.
    init(count: Int, fill: (UnsafeMutableRawBufferPointer) -> Void) {
        buffer = .allocate(byteCount: count, alignment: 16)
        buffer.initializeMemory(as: UInt8.self, repeating: 0)
        fill(buffer)
    }

    deinit {
        if let base = buffer.baseAddress { sodium_memzero(base, buffer.count) }
        buffer.deallocate()
    }

    /// Calls `body` with a read-only view of the secret bytes. Do not let the pointer escape.
    func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(buffer))
    }

    /// The typed base pointer, for libsodium's `const unsigned char *` key parameters.
    func withKeyPointer<R, E: Error>(_ body: (UnsafePointer<UInt8>) throws(E) -> R) throws(E) -> R {
        try body(UnsafePointer(buffer.baseAddress!.assumingMemoryBound(to: UInt8.self)))
    }

    /// Compares with another secret in constant time.
    func constantTimeEquals(_ other: SecretBytes) -> Bool {
        guard count == other.count else { return false }
        if count == 0 { return true }
        return sodium_memcmp(buffer.baseAddress!, other.buffer.baseAddress!, count) == 0
    }

    /// A copy of the bytes as an array, for the few places that must hand them out (key
    /// file export, tests). The copy is not wiped; keep such uses rare.
    var copiedBytes: [UInt8] { Array(buffer) }
}
