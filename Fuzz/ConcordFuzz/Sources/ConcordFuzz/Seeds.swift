import Concord
import Foundation

/// The seed corpus (`ConcordFuzz seeds FOLDER`, one folder per target), from the real
/// encoders: two stores edit, sync through a folder remote under the fixed key and write
/// snapshots; every object the remote then holds is opened and becomes a seed of the
/// targets that read its kind (resealed at the fixed names, which the targets open them
/// under). The XML targets' seeds are answers recorded from the test servers, kept in the
/// corpus as they are (README.md here).
enum Seeds {
    static func write(to folder: URL) async throws {
        let work = FileManager.default.temporaryDirectory.appendingPathComponent("ConcordFuzz-seeds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        var corpus = Corpus(folder: folder)

        let remoteRoot = work.appendingPathComponent("remote").path
        let remote = try FolderRemote(root: remoteRoot, createIfMissing: true)
        let manifest = StoreManifest.createForKeyFile(storeKey: Fixed.storeKey)
        try await remote.put(RemoteLayout.manifestPath, manifest.jsonBytes())
        try await sync(remote: remote, storeID: manifest.storeID, work: work)

        // Every object the sync wrote, by kind.
        for object in try await remote.list(prefix: "") {
            let path = object.path
            corpus.add("remote-layout", name: kindName(path), Array(path.utf8))
            guard let sealed = try await remote.get(path) else { continue }
            switch RemoteLayout.parse(path) {
            case .manifest?:
                corpus.add("manifest", name: "keyfile", sealed)
            case .batch?:
                // As written (format version 2), and the same delta in version 1, which
                // this release still reads.
                let delta = try EncryptedObject.open(sealed, path: path, key: Fixed.batches)
                let version1 = DeltaCodec.encode(try DeltaCodec.decode(delta), version: 1)
                corpus.add("delta", name: "batch", delta)
                corpus.add("delta", name: "batch-version1", version1)
                corpus.addSealed(.batch, delta)
                corpus.addSealed(.batch, version1, name: "batch-version1")
            case .snapshot?:
                let object = try EncryptedObject.open(sealed, path: path, key: Fixed.snapshots)
                corpus.add("snapshot-object", name: "snapshot", object)
                let count = Int(object[0..<4].reduce(0) { $0 << 8 | UInt32($1) })
                corpus.add("snapshot", name: "snapshot", Array(object[(4 + 24 * count)...]))
                corpus.addSealed(.snapshot, object)
            case .head?:
                let head = try EncryptedObject.open(sealed, path: path, key: Fixed.manifests)
                corpus.add("head", name: "head", head)
                corpus.addSealed(.head, head)
            case .blob?:
                // Decrypted at its own name, encrypted again at the name the target reads.
                var contents: [UInt8] = []
                var input = sealed[...]
                try BlobStream.decrypt(
                    key: Fixed.blobContents, name: path,
                    read: { buffer, maxCount in
                        let count = min(maxCount, input.count)
                        buffer.replaceSubrange(0..<count, with: input.prefix(count))
                        input = input.dropFirst(count)
                        return count
                    },
                    write: { contents += $0 })
                corpus.add("blob", name: "blob", try sealBlob(contents))
            case nil:
                break
            }
        }

        // The smallest and an empty snapshot and delta the encoders write.
        corpus.add("snapshot", name: "empty", try SnapshotCodec.encode(StoreState()))
        corpus.add("snapshot-object", name: "empty", try SnapshotObjectCodec.encode(SnapshotContents(state: StoreState(), appliedSeqs: [:])))
        corpus.add("blob", name: "empty", try sealBlob([]))
        corpus.add("blob", name: "one-byte", try sealBlob([0x2a]))

        // concord.json protected by a passphrase, at the minimum limits (unlocked by the
        // target) and at the default ones (only parsed).
        for (name, limits) in [("passphrase-minimum", PasswordHashLimits.minimum), ("passphrase-interactive", .interactive)] {
            let protected = try StoreManifest.create(storeKey: Fixed.storeKey, passphrase: Fixed.passphrase, limits: limits)
            corpus.add("manifest", name: name, protected.jsonBytes())
        }

        // Names a shared folder holds that are not the store's: each must parse as nil.
        let replica = Fixed.replica.description
        for foreign in [
            "heads/\(replica)-0000000000000001 (conflicted copy 2026-11-21)",
            "heads/\(replica.uppercased())-0000000000000001",
            "replicas/\(replica)/deltas/.sync-conflict-20261121-000000-ABCDEFG.0000000000000001",
            "snapshots/~$\(replica)-0000000000000001", "blobs/ab/.DS_Store", "blobs/cd/" + String(repeating: "ab", count: 32),
            "concord.json.tmp", "replicas/\(replica)/deltas", "heads/../concord.json",
        ] {
            corpus.add("remote-layout", name: "foreign", Array(foreign.utf8))
        }

        // What people type after FIELD= (README, "Command line"), and what get --json prints.
        for typed in [
            "level=3", "title=Zelda", "title=\"Zelda\"", "score=9.5", "delta=-4", "big=1e3", "tiny=5e-324",
            "raw={\"$bytes\": \"00ff\"}", "nan={\"$double\": \"NaN\"}", "inf={\"$double\": \"-Infinity\"}",
            "tags=[\"rpg\", 7, null, true, 2.5]", "empty=[]", "note=null", "done=false", "zero=-0.0",
            "text=\"caf\\u00e9 \\ud83d\\ude00\\n\\\"\"", "max=9223372036854775807", "over=9223372036854775808",
        ] {
            corpus.add("cli-value", name: "typed", Array(typed.utf8))
        }
        try corpus.flush()
    }

    /// Two stores edit and sync: every value kind, set elements, a file, a delete, concurrent
    /// edits of one record, and a snapshot of each.
    static func sync(remote: FolderRemote, storeID: StoreID, work: URL) async throws {
        let a = try Store(path: work.appendingPathComponent("a.db").path)
        let b = try Store(path: work.appendingPathComponent("b.db").path)
        let syncA = SyncEngine(store: a, remote: remote, key: Fixed.storeKey, storeID: storeID, snapshotEvery: nil)
        let syncB = SyncEngine(store: b, remote: remote, key: Fixed.storeKey, storeID: storeID, snapshotEvery: nil)
        let zelda = RecordRef(collection: "games", id: "zelda")
        try a.put(zelda, [
            "title": .scalar(.string("Zelda")), "level": .scalar(.int(3)), "score": .scalar(.double(9.5)),
            "done": .scalar(.bool(true)), "note": .scalar(.null), "raw": .scalar(.bytes([0, 1, 0xff])),
            "tags": .set([.string("rpg"), .int(7), .double(-0.0)]),
        ])
        _ = try a.attachFile(zelda, "cover", bytes: Array("not really a png".utf8), mediaType: "image/png")
        try a.put(RecordRef(collection: "games", id: "zork"), ["title": .scalar(.string("Zork"))])
        try await syncA.sync()
        try await syncB.sync()
        try a.delete(RecordRef(collection: "games", id: "zork"))
        try a.set(zelda, "level", .int(4))
        try b.set(zelda, "level", .int(-5))
        try b.remove(zelda, "tags", .int(7))
        try b.put(RecordRef(collection: "notes", id: "caf\u{e9}"), ["text": .scalar(.string("a\u{0}b")), "nan": .scalar(.double(.nan))])
        try await syncA.sync()
        try await syncB.sync()
        try await syncA.sync()
        try await syncA.writeSnapshot()
        try await syncB.writeSnapshot()
    }

    /// A blob stream of `contents` at the fixed name, by the real encryptor.
    static func sealBlob(_ contents: [UInt8]) throws -> [UInt8] {
        var sealed: [UInt8] = []
        var input = contents[...]
        try BlobStream.encrypt(
            key: Fixed.blobContents, name: Fixed.blobPath,
            read: { buffer, maxCount in
                let count = min(maxCount, input.count)
                buffer.replaceSubrange(0..<count, with: input.prefix(count))
                input = input.dropFirst(count)
                return count
            },
            write: { sealed += $0 })
        return sealed
    }

    static func kindName(_ path: String) -> String {
        switch RemoteLayout.parse(path) {
        case .manifest?: "manifest"
        case .batch?: "batch"
        case .snapshot?: "snapshot"
        case .head?: "head"
        case .blob?: "blob"
        case nil: "other"
        }
    }

    /// Seeds by target, written as `<target>/<name>-<n>`.
    struct Corpus {
        let folder: URL
        var files: [(target: String, name: String, bytes: [UInt8])] = []

        mutating func add(_ target: String, name: String, _ bytes: [UInt8]) {
            precondition(Target.named(target) != nil, "no target \(target)")
            files.append((target, name, bytes))
        }

        /// A plaintext for `sealed-plaintext`, and the object sealed at the fixed name for
        /// `sealed-raw`, each after the byte that picks the kind.
        mutating func addSealed(_ kind: Target.Kind, _ plaintext: [UInt8], name: String? = nil) {
            add("sealed-plaintext", name: name ?? "\(kind)", [kind.selector] + plaintext)
            add("sealed-raw", name: name ?? "\(kind)", [kind.selector] + EncryptedObject.encryptDeterministically(plaintext, path: kind.path, key: kind.key))
        }

        func flush() throws {
            var counts: [String: Int] = [:]
            for file in files {
                let directory = folder.appendingPathComponent(file.target)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                let key = "\(file.target)/\(file.name)"
                counts[key, default: 0] += 1
                let url = directory.appendingPathComponent("\(file.name)-\(counts[key]!)")
                try Data(file.bytes).write(to: url)
            }
        }
    }
}
