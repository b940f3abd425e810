import ConcordCore
import ConcordCrypto
import ConcordRemote
import ConcordStore
import ConcordSync
import ConcordTesting
import Foundation
import Testing

/// Files after a rotation, over a real folder remote: a file uploaded once carol was removed
/// is sealed under the current generation (its stream's header names it) and opens with no
/// key carol holds, while the members left read it; files from before stay as they were and
/// read everywhere; a tampered generation header is named, never installed, and repaired by
/// a member that holds the file.
@Suite struct RotatedFilesTests {
    let note = RecordRef(collection: "notes", id: "with-file")

    /// The blob at `path` decrypted with `key`; nil when it does not open.
    static func open(_ bytes: [UInt8], path: String, key: SubKey) -> [UInt8]? {
        var offset = 0
        var output: [UInt8] = []
        do {
            try BlobStream.decrypt(key: key, name: path, read: { buffer, max in
                let count = min(max, bytes.count - offset)
                buffer.replaceSubrange(0..<count, with: bytes[offset..<(offset + count)])
                offset += count
                return count
            }, write: { output += $0 })
        } catch {
            return nil
        }
        return output
    }

    static func contents(_ store: Store, _ file: FileRef) -> [UInt8]? {
        FileManager.default.contents(atPath: store.blobs.path(for: file.hash)).map { [UInt8]($0) }
    }

    @Test func aFileUploadedAfterARemovalIsSealedUnderTheNewGenerationAndOpensForNoKeyTheRemovedMemberHolds() async throws {
        // 0 (alice) owns the store; 1 (bob) and 2 (carol) write.
        let members = try await KeyRotationTests.Members(count: 3)
        let alice = members.engines[0]
        try await alice.addMember(members.identities[1].publicIdentity, name: "bob", role: .writer)
        try await alice.addMember(members.identities[2].publicIdentity, name: "carol", role: .writer)
        let oldBytes = Array("a file from before the removal".utf8)
        let old = try members.stores[0].attachFile(note, "before", bytes: oldBytes)
        try await members.sync([0, 1, 2])
        let oldPath = BlobName.remotePath(for: old.hash, key: members.key.subkey(for: .blobNames))
        let oldSealed = try #require(try await members.folder.get(oldPath))
        #expect(try BlobStream.generation(ofHeader: oldSealed.prefix(BlobStream.headerByteCount), name: oldPath).isZero)
        #expect(Self.contents(members.stores[2], old) == oldBytes)

        try await alice.removeMember(named: "carol")
        let generation = await alice.keyGeneration()
        #expect(!generation.isZero)
        // Bob picks the new key up, then puts a file (larger than a chunk: several frames).
        try await members.engines[1].sync()
        #expect(await members.engines[1].keyGeneration() == generation)
        let newBytes = (0..<(BlobStream.chunkByteCount * 2 + 1_000)).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let new = try members.stores[1].attachFile(RecordRef(collection: "notes", id: "by-bob"), "after", bytes: newBytes)
        try await members.engines[1].sync()

        // Its stream names the current generation and is the size a stream of it has.
        let newPath = BlobName.remotePath(for: new.hash, key: members.key.subkey(for: .blobNames))
        let sealed = try #require(try await members.folder.get(newPath))
        let length = BlobStream.headerByteCount(startingWith: sealed)
        #expect(length == BlobStream.headerByteCount(for: generation))
        #expect(try BlobStream.generation(ofHeader: sealed.prefix(length), name: newPath) == generation)
        #expect(UInt64(sealed.count) == BlobStream.sealedByteCount(plaintextByteCount: new.size, generation: generation))
        // Carol: removed; no key she holds (generation 0's, and every one her identity and
        // the key objects give) opens it, whatever generation it is tried as.
        await KeyRotationTests().expectRemoved(members.engines[2])
        let ring = try Keyring(base: members.key, objects: try members.sealedKeyObjects(), identity: members.identities[2])
        #expect(ring.current == nil)
        for key in [members.key] + Array(ring.keys.values) {
            for claimed in [KeyGeneration.zero, generation] {
                #expect(Self.open(sealed, path: newPath, key: key.of(claimed).subkey(for: .blobContents)) == nil)
            }
        }

        // A tampered generation header (one bit of the id) is named by the replica fetching
        // it, never installed; doctor calls it damaged; bob's repair seals it anew.
        var tampered = sealed
        tampered[5] ^= 0x01
        try await members.folder.put(newPath, tampered)
        let refused = try await alice.sync()
        #expect(refused.rejected.contains { $0.hasPrefix(newPath) && $0.contains("generation") }, "\(refused.rejected)")
        #expect(!members.stores[0].blobs.contains(new.hash))
        let found = try await alice.doctor()
        #expect(found.findings.contains { $0.path == newPath && $0.kind == .damaged }, "\(found.findings)")
        let repaired = try await members.engines[1].doctor(repair: true)
        #expect(repaired.findings.contains { $0.path == newPath && $0.repaired }, "\(repaired.findings)")
        let resealed = try #require(try await members.folder.get(newPath))
        #expect(try BlobStream.generation(ofHeader: resealed.prefix(length), name: newPath) == generation)

        // Alice (a member left) fetches and reads it; bob wrote it.
        try await members.sync([0, 1])
        #expect(Self.contents(members.stores[0], new) == newBytes)
        #expect(Self.contents(members.stores[1], new) == newBytes)
        #expect(try members.stores[0].canonicalDump() == members.stores[1].canonicalDump())
        // The file from before: byte for byte what it was (format 1); it still opens with
        // generation 0's key, which every member holds, and every member left has it.
        #expect(try await members.folder.get(oldPath) == oldSealed)
        #expect(Self.open(oldSealed, path: oldPath, key: members.key.subkey(for: .blobContents)) == oldBytes)
        #expect(Self.contents(members.stores[0], old) == oldBytes && Self.contents(members.stores[1], old) == oldBytes)
        // Doctor finds both files intact, each under the generation that sealed it.
        let report = try await alice.doctor()
        #expect(!report.findings.contains { $0.path == newPath || $0.path == oldPath }, "\(report.findings)")
    }
}
