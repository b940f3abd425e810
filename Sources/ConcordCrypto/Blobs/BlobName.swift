import CSodium
import ConcordCore

/// Remote blob names (docs/ARCHITECTURE.md §4, §5): a keyed BLAKE2b-256 of the blob's content hash,
/// so the storage — which sees only names — cannot test whether a known file is stored.
///
/// `name = hex(BLAKE2b-256(key: blobNames sub-key, message: contentHash.bytes))` and the
/// remote path is `blobs/<first 2 hex digits of name>/<name>`. Deterministic for one
/// store key (every replica names a blob the same way, so uploads are idempotent), and
/// unrelated across stores.
public enum BlobName {
    /// The keyed name of the blob with content hash `hash`: 64 lowercase hex digits.
    ///
    /// - Precondition: `key.purpose == .blobNames` (a programming error otherwise).
    public static func keyedName(for hash: ContentHash, key: SubKey) -> String {
        precondition(key.purpose == .blobNames, "blob names are keyed by the blobNames sub-key, not \(key.purpose)")
        Sodium.ensureInitialized()
        var out = [UInt8](repeating: 0, count: 32)
        key.secret.withKeyPointer { keyPointer in
            hash.bytes.withNonNullBytes { message, count in
                _ = crypto_generichash(&out, 32, message, UInt64(count), keyPointer, SubKey.byteCount)
            }
        }
        return Hex.encode(out)
    }

    /// The remote path of the blob with content hash `hash`: `blobs/<2 hex>/<keyed name>`.
    public static func remotePath(for hash: ContentHash, key: SubKey) -> String {
        remotePath(keyedName: keyedName(for: hash, key: key))
    }

    /// The remote path of a blob whose keyed name is already known.
    public static func remotePath(keyedName: String) -> String {
        "blobs/\(keyedName.prefix(2))/\(keyedName)"
    }
}
