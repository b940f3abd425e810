import ConcordCodec
import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import Foundation

extension SyncEngine {
    // MARK: Helpers

    /// What to do about a damaged head, batch or snapshot.
    func damagedAction(_ name: RemoteLayout.Name, _ scan: DoctorScan) -> String {
        let me = store.replicaID
        switch name {
        case let .batch(replica, _):
            return replica == me
                ? "`concord doctor --repair` here re-uploads the bytes this replica sealed"
                : "only \(scan.who(replica)) holds the bytes it sealed: run `concord doctor --repair` there; replicas that have not applied it wait, everything else syncs"
        case let .head(replica, _):
            return replica == me
                ? "`concord doctor --repair` here rewrites this replica's head"
                : "\(scan.who(replica)) rewrites it with its next push, or run `concord doctor --repair` there; if it is gone for good, `concord replicas forget \(replica)` stops compaction and the purge waiting for it"
        case let .snapshot(replica, _):
            return "replicas ignore it and catch up from batches; \(replica == me ? "this replica's" : scan.who(replica) + "'s") next snapshot (`concord compact`) supersedes it"
        default:
            return "only its writer can replace it"
        }
    }

    /// `millis` for a person: whole days, hours, minutes or seconds.
    static func duration(_ millis: UInt64) -> String {
        for (unit, name) in [(Self.day, "day"), (3_600_000, "hour"), (60_000, "minute")] where millis >= unit && millis % unit == 0 {
            return "\(millis / unit) \(name)\(millis / unit == 1 ? "" : "s")"
        }
        return millis % 1000 == 0 ? "\(millis / 1000) s" : "\(millis) ms"
    }

    static func kind(of error: ConcordError) -> DoctorFinding.Kind {
        switch error.code {
        case .authenticationFailed: .damaged
        case .unsupportedVersion: .newerFormat
        case .unreadableObject, .limitExceeded: .unreadable
        case .unauthentic: .unauthentic
        default: .malformed
        }
    }

    /// An error message without its advice to run doctor (this is doctor).
    static func clean(_ message: String) -> String {
        message.replacingOccurrences(of: "; run `concord doctor`", with: "").replacingOccurrences(of: ", run `concord doctor`", with: "")
    }

    /// Each file of `references` once, by hash, with the writer of its earliest reference.
    static func distinctFiles(_ references: [FileReference]) -> [(hash: ContentHash, writer: ReplicaID)] {
        var earliest: [ContentHash: Stamp] = [:]
        for reference in references where earliest[reference.file.hash].map({ reference.stamp < $0 }) ?? true {
            earliest[reference.file.hash] = reference.stamp
        }
        return earliest.sorted { $0.key < $1.key }.map { ($0.key, $0.value.replica) }
    }

    enum BlobCheck {
        case absent
        case intact
        case damaged(ConcordError)
    }

    /// Streams the blob `keyedName`, decrypting it and checking that its content hashes to
    /// the file its name stands for, in constant memory; one that goes on past `limit`
    /// bytes (its listed size) is damaged.
    static func checkBlob(_ remote: any Remote, keyedName: String, keys: Keys, limit: UInt64 = .max) async throws(ConcordError) -> BlobCheck {
        let path = RemoteLayout.blob(keyedName: keyedName)
        let verifier = BlobVerifier(keys: keys, name: path)
        do throws(ConcordError) {
            guard try await remote.getStream(path, limit: limit, write: { (chunk) throws(ConcordError) in try verifier.feed(chunk) }) else { return .absent }
        } catch where verifier.failed != nil || error.code == .limitExceeded || error.code == .unreadableObject {
            // It failed to authenticate (the read stopped there), is too large, or is not a
            // file (a folder, FIFO or link planted at its name).
            return .damaged(verifier.failed ?? error)
        }
        do throws(ConcordError) {
            let hash = try verifier.finish()
            guard BlobName.keyedName(for: hash, key: keys.blobNames) == keyedName else {
                throw ConcordError(.authenticationFailed, "remote blob \(path) decrypts, but its content (\(hash.hex)) is not the file its name stands for: it was moved or swapped")
            }
            return .intact
        } catch {
            return .damaged(error)
        }
    }

    /// Reads the key objects `listing` shows as a sync does (the membership already read):
    /// one that does not authenticate is a finding, and so is one left aside — torn, not a key
    /// object, or unauthentic (in a shared store, not made by an owner).
    func examineKeyObjects(_ listing: [RemoteLayout.Name], _ scan: inout DoctorScan) async throws(ConcordError) {
        let ids = listing.compactMap { name -> KeyGenerationID? in
            guard case let .keyObject(id) = name else { return nil }
            return KeyGenerationID(hex: id)
        }
        guard !ids.isEmpty else { return }
        do throws(ConcordError) {
            try await readKeyObjects(ids)
        } catch where Self.isDamage(error) {
            let path = ids.map(Keyring.path).first { error.message.contains($0) } ?? RemoteLayout.keyObjectsPrefix
            scan.add(Self.kind(of: error), path, nil, Self.clean(error.message), "put back the key object as its owner wrote it, from a backup; until then nothing is sealed under it and syncs stop")
        }
        for (path, error) in keyObjectsRejected {
            let action = error.code == .unauthentic
                ? "remove \(path) by hand: only an owner of a shared store rotates its key, so no replica adopts it"
                : "if a rotation was cut short, the owner rotates again; otherwise remove \(path) by hand: no replica adopts it"
            scan.add(Self.kind(of: error), path, nil, Self.clean(error.message), action)
        }
    }
}
