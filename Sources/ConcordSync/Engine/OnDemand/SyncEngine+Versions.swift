import ConcordCore
import ConcordStore

/// Resolving a fork or restoring a version whose content is not on this device (README,
/// "Large files and small devices"): the content is fetched on demand first, then written.
/// A replica writes only contents it holds, so its push never lacks one.
extension SyncEngine {
    /// `Store.keepVersion(_:_:hash:)`, fetching the kept version's content
    /// first when it is not local.
    ///
    /// - Throws: `notFound` when the field has no version with content `hash`;
    ///   `fileUnavailable` when its content is not local and the remote lacks it (nothing is
    ///   written).
    public func keepVersion(_ ref: RecordRef, _ field: String, hash: ContentHash) async throws(ConcordError) {
        if !store.blobs.contains(hash) {
            let version = try store.conflicts().first { $0.ref == ref && $0.field == field }?.versions.first { $0.file.hash == hash }
            guard let version else {
                throw ConcordError(.notFound, "\(ref) has no version of \(field) with content \(hash.hex); `concord conflicts` lists the versions")
            }
            _ = try await localFile(version.file)
        }
        try store.keepVersion(ref, field, hash: hash)
    }

    /// `Store.restore(_:_:hash:)`, fetching the version's content first when
    /// it is not local.
    ///
    /// - Throws: `notFound` when the field retains no version `hash`; `fileUnavailable` when
    ///   its content is not local and the remote lacks it (nothing is written).
    public func restore(_ ref: RecordRef, _ field: String, hash: ContentHash) async throws(ConcordError) {
        if !store.blobs.contains(hash) {
            guard let version = try store.versions(ref, field).first(where: { $0.file.hash == hash }) else {
                throw ConcordError(.notFound, "\(ref) \(field) has no retained version \(hash.hex); `concord versions` lists them")
            }
            _ = try await localFile(version.file)
        }
        try store.restore(ref, field, hash: hash)
    }
}
