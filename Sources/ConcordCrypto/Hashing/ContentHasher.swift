import CSodium
import ConcordCore

/// A streaming BLAKE2b-256 hasher (`crypto_generichash_init/update/final`, unkeyed, 32-byte
/// output) producing a file's ``/ConcordCore/ContentHash`` — the identity of a file everywhere in
/// Concord (docs/ARCHITECTURE.md §3). Feed it the content in pieces of any size; memory stays
/// constant. Non-copyable: a hasher is consumed by ``finalize()``.
public struct ContentHasher: ~Copyable {
    /// The digest length in bytes.
    public static let digestByteCount = 32

    private let state: UnsafeMutableRawPointer
    private let stateByteCount: Int

    /// A hasher that has seen no bytes yet.
    public init() {
        Sodium.ensureInitialized()
        stateByteCount = crypto_generichash_statebytes()
        // libsodium declares its BLAKE2b state 64-byte aligned.
        state = .allocate(byteCount: stateByteCount, alignment: 64)
        _ = crypto_generichash_init(
            OpaquePointer(state), nil, 0, Self.digestByteCount)
    }

    deinit {
        sodium_memzero(state, stateByteCount)
        state.deallocate()
    }

    /// Adds `bytes` to the hashed content.
    public mutating func update(_ bytes: some Collection<UInt8>) {
        bytes.withNonNullBytes { pointer, count in
            _ = crypto_generichash_update(
                OpaquePointer(state), pointer, UInt64(count))
        }
    }

    /// Adds the bytes in `buffer` to the hashed content.
    public mutating func update(_ buffer: UnsafeRawBufferPointer) {
        update(UnsafeBufferPointer(start: buffer.baseAddress?.assumingMemoryBound(to: UInt8.self), count: buffer.count))
    }

    /// The hash of everything added; ends the hasher.
    public consuming func finalize() -> ContentHash {
        var out = [UInt8](repeating: 0, count: Self.digestByteCount)
        _ = crypto_generichash_final(
            OpaquePointer(state), &out, Self.digestByteCount)
        return ContentHash(bytes: out)!
    }

    /// The BLAKE2b-256 of `bytes` in one call.
    public static func hash(_ bytes: some Collection<UInt8>) -> ContentHash {
        var hasher = ContentHasher()
        hasher.update(bytes)
        return hasher.finalize()
    }
}
