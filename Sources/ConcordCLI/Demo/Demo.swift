import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import ConcordWebDAV
import Foundation

/// `concord demo` (`make demo`): three real stores — laptop, phone, tablet — in a temporary
/// folder sync through a remote protected by a passphrase: a folder, or with `--remote` a
/// fresh corner of a WebDAV folder or an S3 bucket. They edit concurrently, converge to
/// byte-identical dumps, resolve the conflicts the merge kept for a person, and the remote
/// is shown to hold only ciphertext.
struct Demo: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Watch three replicas edit concurrently, sync through an encrypted folder and converge.",
        discussion: """
            Runs in a temporary folder, deleted afterwards unless --keep. With --remote URL (a \
            folder, https://host/path or s3://bucket/prefix, reached as `concord remote set` \
            reaches it) the replicas sync through a new folder concord-demo-<random> below it, \
            deleted afterwards unless --keep. $CONCORD_KDF_LIMITS=minimum makes the passphrase \
            step instant.
            """)

    @Flag(name: .long, help: "Keep the demo's folder (the three stores and the remote) instead of deleting it.") var keep = false
    @Flag(name: .long, help: "Print one JSON document with the outcome instead of the narration.") var json = false
    @Option(name: .long, help: ArgumentHelp("Sync through this remote instead of a local folder.", valueName: "url")) var remote: String?
    @OptionGroup var remoteOptions: RemoteOptions

    func validate() throws {
        if remote == nil, remoteOptions.user != nil || remoteOptions.endpoint != nil || remoteOptions.region != nil {
            throw ValidationError("--user, --endpoint and --region apply to --remote URL")
        }
        if let remote { _ = try remoteOptions.location(remote) }
    }

    func run() async throws {
        let base = try remote.map(remoteOptions.location)
        base?.warnIfInsecure()
        let demo = try DemoRun(narrate: !json, remote: base)
        let outcome: DemoRun.Outcome
        do {
            outcome = try await demo.run()
        } catch {
            if !keep { await demo.cleanUp() }
            throw error
        }
        if !keep { await demo.cleanUp() }
        if json {
            print(JSON.object([
                ("identical", .bool(outcome.identical)), ("conflictsFound", .int(Int64(outcome.conflictsFound))),
                ("conflictsLeft", .int(Int64(outcome.conflictsLeft))), ("remoteObjects", .int(Int64(outcome.remoteObjects))),
                ("remoteBytes", .uint(outcome.remoteBytes)), ("plaintextFound", .bool(false)),
                ("seconds", .double((outcome.seconds * 1000).rounded() / 1000)), ("folder", .string(keep ? demo.folder : nil)),
                ("remote", .string(demo.location.url)),
            ]).text)
        } else if keep {
            print("\nThe stores and the remote are kept in \(demo.folder); try `concord status --store \(demo.folder)/laptop.db`.")
        }
    }
}

/// One device of the demo: its store and its sync engine.
struct DemoDevice {
    let name: String
    let store: Store
    let engine: SyncEngine
}

final class DemoRun {
    let narrate: Bool
    let folder: String
    /// Where the replicas sync: the demo folder's `remote`, or a fresh corner of --remote.
    let location: RemoteLocation
    var remote: (any LeftoverSweeping)?
    let passphrase = "correct horse battery staple"
    var devices: [DemoDevice] = []
    let started = ContinuousClock.now

    let game = RecordRef(collection: "games", id: "zelda")
    let save = RecordRef(collection: "saves", id: "slot1")
    static let castle = Array("castle save: Hyrule Castle, 3 hearts, lantern".utf8)
    static let forest = Array("forest save: Lost Woods, 5 hearts, master sword".utf8)
    static let dungeon = Array("dungeon save: Water Temple, 4 hearts, hookshot".utf8)

    struct Outcome {
        var identical = false
        var conflictsFound = 0
        var conflictsLeft = 0
        var remoteObjects = 0
        var remoteBytes: UInt64 = 0
        var seconds = 0.0
    }

    init(narrate: Bool, remote given: RemoteLocation? = nil) throws {
        self.narrate = narrate
        let name = "concord-demo-\(String(UInt32.random(in: 0...UInt32.max), radix: 16))"
        let base = (NSTemporaryDirectory() as NSString).appendingPathComponent(name)
        folder = base
        location = given?.child(name) ?? RemoteLocation(FolderLocation(path: base + "/remote"))
        do {
            try FileManager.default.createDirectory(atPath: given == nil ? base + "/remote" : base, withIntermediateDirectories: true)
        } catch {
            throw ConcordError(.demo, "could not create the demo folder \(base): \(error.localizedDescription); check $TMPDIR", cause: error)
        }
    }

    /// Deletes the stores and the demo's remote objects (best effort).
    func cleanUp() async {
        try? FileManager.default.removeItem(atPath: folder)
        if let webDAV = remote as? WebDAVRemote {
            try? await webDAV.deleteRoot()
        } else if let remote, location.folder == nil {
            for object in (try? await remote.list(prefix: "")) ?? [] { try? await remote.delete(object.path) }
        } else if let other = location.folder, !other.hasPrefix(folder) {
            try? FileManager.default.removeItem(atPath: other)
        }
    }

    func say(_ text: String) {
        if narrate { print(text) }
    }

    func step(_ text: String) {
        say("\n== \(text)")
    }

    var laptop: DemoDevice { devices[0] }
    var phone: DemoDevice { devices[1] }
    var tablet: DemoDevice { devices[2] }

    func run() async throws -> Outcome {
        var outcome = Outcome()
        step("Three replicas, one encrypted folder")
        say("laptop, phone and tablet each hold a full replica: a SQLite store in \(folder).")
        if let remoteFolder = location.folder {
            say("They sync through the folder \(remoteFolder) — it could be Dropbox, Syncthing or a USB drive.")
        } else {
            say("They sync through \(location.display), a new folder the demo deletes afterwards.")
        }
        try await setUp()

        step("The laptop creates two records and syncs; the others pull them")
        try laptop.store.create(game, [
            "title": .scalar(.string("Zelda")), "level": .scalar(.int(1)), "tags": .set([.string("adventure")]),
        ])
        let castleFile = try laptop.store.write { tx throws(ConcordError) in
            try tx.put(save, ["label": .scalar(.string("Hyrule Castle"))])
            return try tx.attachFile(save, "data", bytes: Self.castle, mediaType: "text/plain")
        }
        act(laptop, "creates games/zelda {title: \"Zelda\", level: 1, tags: [adventure]}")
        act(laptop, "creates saves/slot1 {label: \"Hyrule Castle\", data: «castle» \(short(castleFile.hash))}")
        for device in devices { try await sync(device) }

        step("Offline, all three edit at once")
        try laptop.store.set(game, "level", .int(2))
        act(laptop, "sets level = 2")
        try phone.store.set(game, "level", .int(3))
        act(phone, "sets level = 3")
        try phone.store.add(game, "tags", .string("classic"))
        act(phone, "adds tag \"classic\"")
        try tablet.store.remove(game, "tags", .string("adventure"))
        act(tablet, "removes tag \"adventure\"")
        try laptop.store.add(game, "tags", .string("adventure"))
        act(laptop, "adds tag \"adventure\" again, not having seen the tablet's remove")
        try tablet.store.delete(save)
        act(tablet, "deletes saves/slot1")
        let forestFile = try laptop.store.attachFile(save, "data", bytes: Self.forest, mediaType: "text/plain")
        act(laptop, "saves saves/slot1 data = «forest» \(short(forestFile.hash))")
        let dungeonFile = try phone.store.attachFile(save, "data", bytes: Self.dungeon, mediaType: "text/plain")
        act(phone, "saves saves/slot1 data = «dungeon» \(short(dungeonFile.hash))")

        step("Back online: each syncs (pull, then push) — laptop, phone, tablet, then laptop and phone again")
        for device in devices + [laptop, phone] { try await sync(device) }
        let dump = try showDumps("after syncing the concurrent edits")

        step("What the merge did (the same on every replica)")
        let fields = try laptop.store.record(game) ?? []
        let level = fields.first { $0.name == "level" }.map { Format.value($0.value) } ?? "?"
        let tags = fields.first { $0.name == "tags" }.map { Format.value($0.value) } ?? "?"
        let winner = level == "3" ? "the phone's 3" : "the laptop's 2"
        say("  level = \(level): the laptop's 2 and the phone's 3 were concurrent; \(winner) has the greater stamp (clock, then replica id) and wins everywhere.")
        say("  tags = \(tags): the phone's add holds, and the laptop's concurrent add of \"adventure\" beats the tablet's remove (add wins).")
        say("  saves/slot1 is still there with all its fields: the tablet's delete was concurrent with two saves, so nothing was lost.")
        let conflicts = try laptop.store.conflicts()
        for device in devices {
            guard try device.store.conflicts() == conflicts else { throw ConcordError(.demo, "the replicas list different conflicts") }
        }
        outcome.conflictsFound = conflicts.count
        say("\nOpen conflicts, identical on every replica (`concord conflicts`):")
        var names: [ReplicaID: String] = [:]
        for device in devices { names[device.store.replicaID] = device.name }
        for conflict in conflicts {
            for line in Format.conflict(conflict, names: names).split(separator: "\n") { say("  \(line)") }
        }
        guard conflicts.contains(where: { $0.kind == .fileFork }), conflicts.contains(where: { $0.kind == .deleteUpdate }) else {
            throw ConcordError(.demo, "the demo expected a file fork and a delete/update conflict; found \(conflicts)")
        }
        _ = dump

        step("The laptop resolves: keeps «forest» and keeps the record; everyone syncs")
        try laptop.store.keepVersion(save, "data", hash: forestFile.hash)
        act(laptop, "concord resolve saves slot1 data --keep \(short(forestFile.hash))")
        try laptop.store.keepRecord(save)
        act(laptop, "concord resolve saves slot1 --keep-record")
        for device in devices { try await sync(device) }
        _ = try showDumps("after resolving")
        for device in devices {
            guard try device.store.conflicts().isEmpty else { throw ConcordError(.demo, "\(device.name) still has conflicts after resolving") }
        }
        let exported = folder + "/slot1-from-phone.txt"
        try phone.store.blobs.export(forestFile.hash, to: exported)
        let content = try String(contentsOfFile: exported, encoding: .utf8)
        say("  no conflicts remain anywhere; the phone's saves/slot1 data reads \"\(content)\"")
        outcome.identical = true

        step("What the storage sees")
        let scan = try await scanRemote(extra: [Self.castle, Self.forest, Self.dungeon],
                                  hashes: [castleFile.hash, forestFile.hash, dungeonFile.hash])
        outcome.remoteObjects = scan.objects
        outcome.remoteBytes = scan.bytes
        outcome.seconds = seconds(ContinuousClock.now - started)
        say("\nDone in \(String(format: "%.1f", outcome.seconds)) s: three replicas converged to byte-identical dumps through a folder holding only ciphertext.")
        return outcome
    }

    // MARK: Steps

    func setUp() async throws {
        let limits = try Secrets.limits()
        let remote = try await location.open(checkRoot: true, create: true)
        self.remote = remote
        var keys: [StoreKey] = []
        var storeID: StoreID?
        for name in ["laptop", "phone", "tablet"] {
            let store = try Store(path: "\(folder)/\(name).db")
            try store.setName(name)
            if storeID == nil {
                let created = try await SyncEngine.createRemote(remote, passphrase: passphrase, limits: limits)
                keys.append(created.key)
                storeID = created.storeID
                say("  \(pad(name)) concord init --name \(name); concord remote set \(location.url)")
                say("         → creates the remote store: a random store key, wrapped with Argon2id(\"\(passphrase)\")")
            } else {
                if name == "phone" {
                    do {
                        _ = try await SyncEngine.unlock(remote, passphrase: "hunter2")
                        throw ConcordError(.demo, "a wrong passphrase unlocked the remote")
                    } catch let error as ConcordError {
                        say("  \(pad(name)) tries the passphrase \"hunter2\": refused — \(error.message.prefix(60))…")
                    }
                }
                keys.append(try await SyncEngine.unlock(remote, passphrase: passphrase).key)
                say("  \(pad(name)) concord init --name \(name); concord remote set \(location.url)  → unlocked")
            }
            devices.append(DemoDevice(
                name: name, store: store,
                engine: SyncEngine(store: store, remote: remote, key: keys.last!, storeID: storeID!)))
        }
    }

    func act(_ device: DemoDevice, _ text: String) {
        say("  \(pad(device.name)) \(text)")
    }

    func sync(_ device: DemoDevice) async throws {
        let report = try await device.engine.sync()
        guard report.rejected.isEmpty else { throw ConcordError(.demo, "\(device.name) rejected objects: \(report.rejected)") }
        act(device, "concord sync → \(Sync.counts(report))")
    }

    /// Prints the three canonical dumps and checks they are byte-identical.
    func showDumps(_ moment: String) throws -> String {
        let dumps = try devices.map { try $0.store.canonicalDump() }
        say("\nCanonical dumps \(moment) (`concord dump`):")
        for (device, dump) in zip(devices, dumps) { say("  \(pad(device.name)) \(dump)") }
        guard Set(dumps).count == 1 else { throw ConcordError(.demo, "the replicas diverged \(moment)") }
        say("  ✓ the three dumps are byte-identical (\(dumps[0].utf8.count) bytes)")
        return dumps[0]
    }

    /// Reads every file in the remote folder and checks that no name or content holds any
    /// word the demo wrote, any file's content, or any content hash.
    func scanRemote(extra: [[UInt8]], hashes: [ContentHash]) async throws -> (objects: Int, bytes: UInt64) {
        let words = ["Zelda", "zelda", "games", "saves", "slot1", "title", "level", "tags", "label", "adventure", "classic",
                     "Hyrule", "laptop", "phone", "tablet", "castle", "forest", "dungeon"]
        let needles = words.map { Array($0.utf8) } + extra + hashes.map(\.bytes) + hashes.map { Array($0.hex.utf8) }
        var files: [(path: String, bytes: [UInt8])] = []
        for (path, bytes) in try await remoteContents() {
            for needle in needles where Self.contains(bytes, needle) || Self.contains(Array(path.utf8), needle) {
                throw ConcordError(.demo, "the remote object \(path) contains plaintext (\(String(decoding: needle, as: UTF8.self).prefix(20)))")
            }
            files.append((path, bytes))
        }
        files.sort { $0.path < $1.path }
        let total = files.reduce(UInt64(0)) { $0 + UInt64($1.bytes.count) }
        let kinds = Dictionary(grouping: files) { file -> String in
            switch RemoteLayout.parse(file.path) {
            case .manifest?: "concord.json"
            case .head?: "heads"
            case .batch?: "delta batches"
            case .snapshot?: "snapshots"
            case .blob?: "encrypted files"
            case .keyObject?: "key objects"
            case .storeManifest?, .memberLog?, .grant?, .announcement?, nil: "other"
            }
        }
        say("The remote holds \(files.count) objects, \(total) bytes: " + kinds.keys.sorted().map { "\(kinds[$0]!.count) \($0)" }.joined(separator: ", "))
        for file in files.filter({ RemoteLayout.parse($0.path) == .manifest }) + files.filter({ RemoteLayout.parse($0.path).map { if case .batch = $0 { true } else { false } } ?? false }).prefix(1)
            + files.filter({ RemoteLayout.parse($0.path).map { if case .blob = $0 { true } else { false } } ?? false }).prefix(1) {
            let preview = RemoteLayout.parse(file.path) == .manifest
                ? String(decoding: file.bytes, as: UTF8.self).split(whereSeparator: \.isWhitespace).joined(separator: " ").prefix(88) + "… (not secret: salt, limits, wrapped key)"
                : file.bytes.prefix(24).map { String(format: "%02x", $0) }.joined(separator: " ") + " …"
            say("  \(file.path)\n    \(preview)")
        }
        say("  ✓ no object's name or bytes contains any of the \(words.count) words written, the 3 files' contents, or their hashes:")
        say("    record ids, field names, values and file contents are all encrypted (XChaCha20-Poly1305, keyed blob names).")
        return (files.count, total)
    }

    /// Every file the remote holds, by path: a folder is walked whole (a stray file too);
    /// an HTTP remote's listing names every object the store wrote.
    func remoteContents() async throws -> [(String, [UInt8])] {
        guard let remoteFolder = location.folder else {
            guard let remote else { return [] }
            var contents: [(String, [UInt8])] = []
            for object in try await remote.list(prefix: "") {
                contents.append((object.path, try await remote.get(object.path, limit: RemoteLayout.maxObjectSize(forPath: object.path)) ?? []))
            }
            return contents
        }
        guard let walker = FileManager.default.enumerator(atPath: remoteFolder) else {
            throw ConcordError(.demo, "could not read \(remoteFolder)")
        }
        var contents: [(String, [UInt8])] = []
        while let path = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: remoteFolder + "/" + path, isDirectory: &isFolder), !isFolder.boolValue else { continue }
            contents.append((path, [UInt8](FileManager.default.contents(atPath: remoteFolder + "/" + path) ?? Data())))
        }
        return contents
    }

    static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
        guard !needle.isEmpty, haystack.count >= needle.count else { return false }
        let first = needle[0]
        var index = 0
        while index <= haystack.count - needle.count {
            if haystack[index] == first && haystack[index..<index + needle.count].elementsEqual(needle) { return true }
            index += 1
        }
        return false
    }

    func short(_ hash: ContentHash) -> String {
        String(hash.hex.prefix(12)) + "…"
    }

    func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

func pad(_ text: String, to width: Int = 6) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}
