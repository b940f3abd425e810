import ConcordCore
import ConcordRemote
import ConcordTesting
import Testing

@Suite struct RemoteLayoutTests {
    let r = Sample.a
    let rHex = "0123456789abcdeffedcba9876543210"

    @Test func buildersSpellTheDocumentedNames() {
        #expect(RemoteLayout.manifestPath == "concord.json")
        #expect(RemoteLayout.head(r, seq: 42) == "heads/\(rHex)-000000000000002a")
        #expect(RemoteLayout.batch(r, seq: 0) == "replicas/\(rHex)/deltas/0000000000000000")
        #expect(RemoteLayout.batchesPrefix(r) == "replicas/\(rHex)/deltas/")
        #expect(RemoteLayout.snapshot(r, seq: .max) == "snapshots/\(rHex)-ffffffffffffffff")
        #expect(RemoteLayout.blob(keyedName: Sample.keyedName) == "blobs/3f/\(Sample.keyedName)")
        #expect(RemoteLayout.hex(0x1234_abcd) == "000000001234abcd")
    }

    @Test func parseReadsBackEveryName() {
        #expect(RemoteLayout.parse("concord.json") == .manifest)
        #expect(RemoteLayout.parse("heads/\(rHex)-000000000000002a") == .head(replica: r, seq: 42))
        #expect(RemoteLayout.parse("replicas/\(rHex)/deltas/0000000000000007") == .batch(replica: r, seq: 7))
        #expect(RemoteLayout.parse("snapshots/\(rHex)-ffffffffffffffff") == .snapshot(replica: r, seq: .max))
        #expect(RemoteLayout.parse("blobs/3f/\(Sample.keyedName)") == .blob(keyedName: Sample.keyedName))
    }

    /// Seeded: every built name parses back to itself, and the name's path is the path.
    @Test(arguments: [UInt64(1), 2, 3])
    func randomNamesRoundTrip(seed: UInt64) {
        var generator = SeededGenerator(seed: seed)
        for _ in 0..<300 {
            let replica = ReplicaID.random(using: &generator)
            let seq = generator.chance(0.1) ? generator.pick([0, 1, UInt64.max]) : generator.next() >> UInt64(generator.int(0...63))
            let keyed = (0..<32).map { _ in RemoteLayout.hex(generator.next() & 0xff).suffix(2) }.joined()
            let names: [RemoteLayout.Name] = [
                .manifest, .head(replica: replica, seq: seq), .batch(replica: replica, seq: seq),
                .snapshot(replica: replica, seq: seq), .blob(keyedName: keyed),
            ]
            for name in names {
                #expect(RemoteLayout.parse(name.path) == name, "seed \(seed): \(name.path)")
                #expect(name.description == name.path)
                let folder = name.path.split(separator: "/").dropLast().joined(separator: "/")
                #expect(RemoteLayout.isStoreFolder(folder), "seed \(seed): \(name.path) lies in a folder listings skip")
            }
        }
    }

    /// Names sync clients, editors and people leave in a shared folder — never the store's.
    @Test(arguments: [
        // Dropbox, Google Drive, OneDrive conflict copies
        "heads/0123456789abcdeffedcba9876543210-000000000000002a (conflicted copy 2026-11-21).x",
        "heads/0123456789abcdeffedcba9876543210-000000000000002a (Alice's conflicted copy 2026-11-21)",
        "heads/0123456789abcdeffedcba9876543210-000000000000002a (1)",
        "concord (conflicted copy 2026-11-21).json",
        "concord-DESKTOP-1A2B3C.json",
        // Syncthing
        "heads/0123456789abcdeffedcba9876543210-000000000000002a.sync-conflict-20261121-101010-ABCDEFG",
        "replicas/0123456789abcdeffedcba9876543210/deltas/.syncthing.000000000000002a.tmp",
        ".stversions/heads/0123456789abcdeffedcba9876543210-000000000000002a",
        ".stfolder",
        // editors, Finder, Windows, temporaries
        "~$file", "~$concord.json", ".DS_Store", "heads/.DS_Store", "desktop.ini", "Thumbs.db",
        "heads/0123456789abcdeffedcba9876543210-000000000000002a.tmp",
        "heads/0123456789abcdeffedcba9876543210-000000000000002a~",
        "heads/.concord-tmp-0123456789abcdef", ".concord-tmp-0123456789abcdef",
        "concord.json.tmp", "concord.json~", ".concord.json", "concord.json/",
        // wrong case, wrong length, wrong shape
        "Concord.json", "CONCORD.JSON", "Heads/0123456789abcdeffedcba9876543210-000000000000002a",
        "heads/0123456789ABCDEFFEDCBA9876543210-000000000000002a",
        "heads/0123456789abcdeffedcba9876543210-000000000000002A",
        "heads/0123456789abcdeffedcba987654321-000000000000002a",
        "heads/0123456789abcdeffedcba98765432100-000000000000002a",
        "heads/0123456789abcdeffedcba9876543210-00000000000002a",
        "heads/0123456789abcdeffedcba9876543210-0000000000000002a",
        "heads/0123456789abcdeffedcba9876543210_000000000000002a",
        "heads/0123456789abcdeffedcba9876543210",
        "heads/", "heads", "",
        "replicas/0123456789abcdeffedcba9876543210/deltas/000000000000002a/",
        "replicas/0123456789abcdeffedcba9876543210/deltas/",
        "replicas/0123456789abcdeffedcba9876543210/delta/000000000000002a",
        "replicas/0123456789abcdeffedcba9876543210/deltas/000000000000002g",
        "replicas/0123456789abcdeffedcba9876543210-000000000000002a",
        "snapshots/0123456789abcdeffedcba9876543210/000000000000002a",
        "snapshots/0123456789abcdeffedcba9876543210-000000000000002a.bak",
        "blobs/3f0123456789abcdef0123456789abcdef0123456789abcdef00112233445566",
        "blobs/3F/3F0123456789abcdef0123456789abcdef0123456789abcdef00112233445566",
        "blobs/ab/3f0123456789abcdef0123456789abcdef0123456789abcdef00112233445566",
        "blobs/3f/3f0123456789abcdef0123456789abcdef0123456789abcdef0011223344556",
        "blobs/3f/3f0123456789abcdef0123456789abcdef0123456789abcdef0011223344556677",
        "/concord.json", "./concord.json", "../concord.json",
        "heads/../heads/0123456789abcdeffedcba9876543210-000000000000002a",
        "heads//0123456789abcdeffedcba9876543210-000000000000002a",
        "heads/０123456789abcdeffedcba9876543210-000000000000002a",
        // named stores: only stores/<32 lowercase hex>/concord.json, nothing deeper
        "stores/0123456789ABCDEFFEDCBA9876543210/concord.json",
        "stores/0123456789abcdeffedcba987654321/concord.json",
        "stores/0123456789abcdeffedcba9876543210/concord.json (conflicted copy)",
        "stores/0123456789abcdeffedcba9876543210/heads/0123456789abcdeffedcba9876543210-000000000000002a",
        "stores/0123456789abcdeffedcba9876543210/", "stores/concord.json", "stores/recipes/concord.json",
        "stores/../concord.json", "stores//concord.json",
    ])
    func foreignNamesAreRejected(path: String) {
        #expect(RemoteLayout.parse(path) == nil)
        #expect(throws: ConcordError.self) { try RemoteLayout.validateObjectPath(path) }
    }

    @Test func namedStoresManifestsAreLayoutNames() throws {
        let id = "0123456789abcdeffedcba9876543210"
        #expect(RemoteLayout.storeManifest(id) == "stores/\(id)/concord.json")
        #expect(RemoteLayout.parse("stores/\(id)/concord.json") == .storeManifest(storeID: id))
        #expect(RemoteLayout.Name.storeManifest(storeID: id).path == "stores/\(id)/concord.json")
        try RemoteLayout.validateObjectPath("stores/\(id)/concord.json")
        #expect(RemoteLayout.maxObjectSize(forPath: "stores/\(id)/concord.json") == RemoteLayout.maxManifestSize)
        #expect(RemoteLayout.isStoreFolder("stores") && RemoteLayout.isStoreFolder("stores/\(id)"))
        for folder in ["stores/\(id)/heads", "stores/\(id.uppercased())", "stores/recipes", "stores/\(id)/replicas"] {
            #expect(!RemoteLayout.isStoreFolder(folder), "\(folder)")
        }
    }

    @Test func storeFolders() {
        for folder in ["", "heads", "snapshots", "replicas", "blobs", "replicas/\(rHex)", "replicas/\(rHex)/deltas", "blobs/00", "blobs/3f"] {
            #expect(RemoteLayout.isStoreFolder(folder), "\(folder)")
        }
        for folder in [".stversions", "heads/x", "Heads", "replicas/\(rHex.uppercased())", "replicas/\(rHex)/deltas/x",
                       "replicas/\(rHex)/snapshots", "blobs/3F", "blobs/3", "blobs/3f0", "heads/", "/heads", "concord.json"] {
            #expect(!RemoteLayout.isStoreFolder(folder), "\(folder)")
        }
    }

    @Test func validationSaysWhatIsWrong() throws {
        let traversal = try #require(throws: ConcordError.self) { try RemoteLayout.validateObjectPath("heads/../../etc/passwd") }
        #expect(traversal.code == .invalidRemotePath)
        #expect(traversal.message.contains("\"..\""))
        #expect(traversal.message.contains("heads/../../etc/passwd"))
        let foreign = try #require(throws: ConcordError.self) { try RemoteLayout.validateObjectPath("heads/notes.txt") }
        #expect(foreign.code == .invalidRemotePath)
        #expect(foreign.message.contains("not a name of the store layout"))
        let nul = try #require(throws: ConcordError.self) { try RemoteLayout.validateObjectPath("heads/\u{0}") }
        #expect(nul.message.contains("\\u{0}"))

        for prefix in ["", "heads/", "heads", "heads/0123", "replicas/\(rHex)/deltas/", "blobs/3f/3f01", "nothing/at/all"] {
            #expect(throws: Never.self) { try RemoteLayout.validatePrefix(prefix) }
        }
        for prefix in ["/", "/heads/", "../", "heads/..", "heads/../x", "./heads", "heads//", "heads\\x", "a\u{0}"] {
            #expect(throws: ConcordError.self, "\(prefix)") { try RemoteLayout.validatePrefix(prefix) }
        }
    }
}
