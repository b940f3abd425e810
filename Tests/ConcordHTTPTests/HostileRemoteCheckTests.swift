import ConcordCore
import ConcordHTTP
import ConcordRemote
import ConcordS3
import ConcordTestServers
import ConcordTesting
import ConcordWebDAV
import Foundation
import Testing

/// The hostile-storage check (``HostileRemoteCheck``) against every HTTP backend: WebDAV on
/// each real server, S3 on moto and Ceph's gateway, and both against a server of our own that
/// plays every misbehaviour. What the check cannot plant on a backend is asserted as not
/// applicable, so nothing passes silently.
///
/// Through a server, the remote sees only the server's answers; whether links planted in the
/// folder lead outside it is the server's doing, so rather than report the servers' defaults
/// the test servers are set up the way a careful deployment is (LoopbackServers, and the
/// README's advice): Apache with `Options None`, nginx with `disable_symlinks on`, and nginx
/// and rclone — whose PUT, DELETE or listings follow a link whatever they are told — running
/// as a user of their own (www-data, when the tests run as root; otherwise their link parts
/// are not applicable). The folder outside is another user's (mode 0711: passed through,
/// never listed or written by the server). With that, the check expects of the remote what
/// it promises: every call ends within its bounds with nothing, bytes of its own root or one
/// typed error, and reads no more than its limit.
@Suite struct HostileRemoteCheckTests {
    /// A stalled read ends in under a minute (30 s of grace, a floor of 64 MiB/s), and is
    /// tried twice. The grace is generous on purpose: in a full test run on two cores a
    /// well-behaved 200-byte answer has taken 15 s, and must not count as a stall.
    static let bounds = HTTPBounds(grace: .seconds(30), minimumRate: 64 << 20)
    static let retry = HTTPRetryPolicy(attempts: 2, base: .milliseconds(50))
    static let hangAfter: UInt64 = 120

    @Test(arguments: ServerKind.webDAV)
    func aWebDAVRemoteWithstandsWhatIsPlantedInTheServersFolder(_ kind: ServerKind) async throws {
        let server = try await LoopbackServers.shared.server(kind)
        let name = "t" + UUID().uuidString.prefix(12).lowercased()
        let remote = try WebDAVRemote(url: "\(server.origin)/stores/\(name)", retry: Self.retry, bounds: Self.bounds)
        try await remote.createRoot()
        let outside = TemporaryDirectory("concord-outside")
        let storage = WebDAVHostileStorage(kind: kind, root: server.directory + "/data/stores/" + name, outside: outside.path, remote: remote)

        let report = await HostileRemoteCheck.run(remote, storage: storage, hangAfter: Self.hangAfter)
        #expect(report.issues == [], "\(kind)")
        let unconfined = report.notApplicable.filter { $0.reason.contains(WebDAVHostileStorage.unconfined) }
        #expect(report.notApplicable.filter { !unconfined.contains($0) }.map(\.part) == Parts.unresolvedNames + Parts.misbehaviours, "\(kind)")
        if geteuid() == 0 { #expect(unconfined.isEmpty) }
        #expect(Parts.files(below: storage.root).isEmpty, "the check removes what it planted")
    }

    @Test(arguments: ServerKind.s3)
    func anS3RemoteWithstandsKeysPlantedInItsBucket(_ kind: ServerKind) async throws {
        let server = try await LoopbackServers.shared.server(kind)
        let bucket = "t" + UUID().uuidString.prefix(12).lowercased()
        let remote = try S3Remote(
            bucket: bucket, prefix: "store/", endpoint: server.origin, credentials: .init(accessKey: server.accessKey, secretKey: server.secretKey),
            retry: Self.retry, bounds: Self.bounds)
        try await remote.createBucket()
        let storage = S3HostileStorage(keys: S3Keys(server, bucket: bucket), prefix: "store/", remote: remote)

        let report = await HostileRemoteCheck.run(remote, storage: storage, hangAfter: Self.hangAfter)
        #expect(report.issues == [], "\(kind)")
        #expect(report.notApplicable.map(\.part) == Parts.links + Parts.fifos + [Parts.deviceLink] + Parts.misbehaviours, "\(kind)")
        #expect(try await storage.keys.list(prefix: "store/") == [], "the check removes what it planted")
    }

    /// The check is not vacuous on S3: a remote that lost its prefix (it reads and writes at
    /// the bucket's root, where objects named like the store's lie) is caught listing,
    /// reading and overwriting them.
    @Test func theHostileCheckCatchesAnS3RemoteThatLeavesItsPrefix() async throws {
        let server = try await LoopbackServers.shared.server(.moto)
        let bucket = "t" + UUID().uuidString.prefix(12).lowercased()
        let credentials = SigV4.Credentials(accessKey: server.accessKey, secretKey: server.secretKey)
        let remote = try S3Remote(bucket: bucket, prefix: "store/", endpoint: server.origin, credentials: credentials, retry: Self.retry, bounds: Self.bounds)
        try await remote.createBucket()
        let prefixless = try S3Remote(bucket: bucket, endpoint: server.origin, credentials: credentials, retry: Self.retry, bounds: Self.bounds)
        let storage = S3HostileStorage(keys: S3Keys(server, bucket: bucket), prefix: "store/", remote: remote)

        let issues = await HostileRemoteCheck.check(prefixless, storage: storage, hangAfter: Self.hangAfter)
        let head = RemoteLayout.head(Parts.replica, seq: 6)
        #expect(issues.contains { $0.contains("list(prefix: \"\") returned [concord.json, \(head)]; expected []") }, "\(issues)")
        #expect(issues.contains { $0.contains("get(\(head)) returned 15 bytes; there is no object") }, "\(issues)")
        #expect(issues.contains { $0.contains("changed what lies outside the root") }, "\(issues)")
    }
}

/// Against a server of our own, one misbehaviour at a time (several endless answers at once
/// would compete for the loopback with the rest of the suite, as in HostileServerTests).
@Suite(.serialized) struct HostileServerCheckTests {
    /// Thirty seconds of grace: a trickle is cut off after about thirty seconds, and a
    /// well-behaved answer delayed by a loaded machine is not (in a full test run on two
    /// cores, the 240-byte listing of an empty remote has taken 15.9 s).
    static let bounds = HTTPBounds(grace: .seconds(30), minimumRate: 64 << 20)

    static func remote(_ storage: HostileServerStorage) throws -> any Remote {
        switch storage.dialect {
        case .webDAV:
            try WebDAVRemote(url: storage.webDAVURL, retry: .init(attempts: 1), bounds: bounds)
        case .s3:
            try S3Remote(
                bucket: HostileServerStorage.bucket, prefix: HostileServerStorage.prefix, endpoint: storage.origin,
                credentials: .init(accessKey: "hostile", secretKey: "hostile-secret"), retry: .init(attempts: 1), bounds: bounds)
        }
    }

    @Test(arguments: [HostileServerStorage.Dialect.webDAV, .s3])
    func remotesWithstandAServerThatPlaysEveryMisbehaviour(_ dialect: HostileServerStorage.Dialect) async throws {
        let storage = try HostileServerStorage(dialect)
        let report = await HostileRemoteCheck.run(try Self.remote(storage), storage: storage, hangAfter: 60)
        #expect(report.issues == [], "\(dialect)")
        #expect(report.notApplicable.map(\.part) == Parts.links + Parts.fifos + [Parts.folder, Parts.deviceLink] + Parts.names, "\(dialect)")
    }

    /// The check is not vacuous over HTTP: a remote that reads a whole object before it checks
    /// the size (the default `get(_:limit:)` over an unbounded get) is caught reading an
    /// endless body instead of stopping at the limit.
    @Test(arguments: [HostileServerStorage.Dialect.webDAV, .s3])
    func theHostileCheckCatchesARemoteThatReadsPastTheLimit(_ dialect: HostileServerStorage.Dialect) async throws {
        let storage = try HostileServerStorage(dialect)
        let issues = await HostileRemoteCheck.check(UnboundedGetRemote(base: try Self.remote(storage)), storage: storage, hangAfter: 60)
        let limit = RemoteLayout.maxManifestSize
        #expect(issues.contains { $0.hasPrefix("with a body that never ends for concord.json: get(concord.json, limit: \(limit))") && $0.hasSuffix("expected limitExceeded") }, "\(issues)")
        #expect(issues.allSatisfy { $0.hasPrefix("with a body that never ends for concord.json: get(concord.json, limit: \(limit))") }, "\(issues)")
    }
}

/// A remote that reads the whole object and then checks its size.
struct UnboundedGetRemote: Remote {
    let base: any Remote

    func get(_ path: String, limit: UInt64) async throws(ConcordError) -> [UInt8]? {
        guard let bytes = try await base.get(path, limit: .max) else { return nil }
        guard UInt64(bytes.count) <= limit else { throw ConcordError.objectTooLarge(path, size: UInt64(bytes.count), limit: limit) }
        return bytes
    }

    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await base.get(path) }
    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { try await base.put(path, bytes) }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { try await base.list(prefix: prefix) }
    func delete(_ path: String) async throws(ConcordError) { try await base.delete(path) }
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) { try await base.putStream(path, read: read) }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, write: write)
    }
    func getStream(_ path: String, limit: UInt64, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, limit: limit, write: write)
    }
}

/// The check's parts, as its report names them.
enum Parts {
    static let replica = ReplicaID(high: 0x5eed_c0de_0000_0001, low: 0x0000_0000_0000_00a1)
    static let links = [
        "heads as a link to a folder outside", "blobs/ab as a link to a folder outside",
        "replicas/\(replica)/deltas as a link to a folder outside", "concord.json as a link to a file outside",
    ]
    static let fifos = ["\(RemoteLayout.batch(replica, seq: 3)) as a FIFO", "concord.json as a FIFO"]
    static let folder = "\(RemoteLayout.snapshot(replica, seq: 4)) as a folder"
    static let deviceLink = "\(RemoteLayout.head(replica, seq: 5)) as a link to /dev/zero"
    /// The names outside the layout that a file system resolves to others.
    static let unresolvedNames = [
        "an object at heads/ (a layout folder's name with its slash)",
        "an object at heads/../\(RemoteLayout.head(replica, seq: 6)) (a \"..\" segment)",
        "an object at /concord.json (a leading slash)",
    ]
    static let names = [unresolvedNames[0], "an object at replicas/\(replica)/deltas (where the layout has a folder)"] + unresolvedNames.dropFirst() + [
        "an object at stores/\(replica)/\(RemoteLayout.head(replica, seq: 6)) (a named store's head, which only that store's own root lists)",
        "an object at stores/\(replica.description.uppercased())/concord.json (a store folder's id in upper case)",
    ]
    static let misbehaviours = [
        "a body that never ends at concord.json", "a body that trickles at \(RemoteLayout.head(replica, seq: 7))",
        "a 404 whose body never ends at \(RemoteLayout.batch(replica, seq: 8))",
        "a 403 whose body never ends at \(RemoteLayout.snapshot(replica, seq: 9))",
        "a listing that never ends at replicas/", "a listing page that never ends at heads/",
    ]

    /// Every entry below `root` that is not a folder.
    static func files(below root: String) -> [String] {
        (FileManager.default.subpaths(atPath: root) ?? []).filter { path in
            var isFolder: ObjCBool = false
            return !(FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder) && isFolder.boolValue)
        }
    }
}

/// ``HostileStorage`` for a WebDAV server: the folder it serves as the remote's collection,
/// planted with the file system (``FolderHostileStorage``); the sweep is the remote's. The
/// folder outside is another user's: mode 0711 and files 0644, which a server running as its
/// own user can pass through but neither list nor write.
struct WebDAVHostileStorage: HostileStorage {
    let kind: ServerKind
    let files: FolderHostileStorage
    let expectations = HostileRemoteCheck.Expectations.server()

    /// The reason given for a link whose target the server could reach.
    static let unconfined = "runs as this process's user"

    init(kind: ServerKind, root: String, outside: String, remote: WebDAVRemote) {
        self.kind = kind
        files = FolderHostileStorage(root: root, outside: outside, expectations: .server()) {
            _ = try await remote.sweepLeftovers(olderThan: 1, now: UInt64(Date().timeIntervalSince1970 * 1000) + 86_400_000)
        }
    }

    var root: String { files.root }
    var outside: String { files.outside }

    func fillOutside(_ contents: [String: [UInt8]]) async throws {
        try await files.fillOutside(contents)
        chmod(outside, 0o711)
        for path in FileManager.default.subpaths(atPath: outside) ?? [] { chmod(outside + "/" + path, 0o644) }
    }

    func outsideContents() async throws -> [String: [UInt8]] { try await files.outsideContents() }

    /// nginx (PUT, DELETE, PROPFIND) and rclone (a PUT at an object's name) follow links
    /// whatever they are told: only a server user that cannot write outside the folder
    /// confines them, which a test not run as root cannot set up.
    func plantLink(_ path: String, to target: String) throws {
        if geteuid() != 0, target.hasPrefix(outside), kind == .nginx || (kind == .rclone && target != outside) {
            throw HostileStorageNotApplicable(
                "\(kind) follows the link whatever it is told, and \(Self.unconfined), who owns the folder outside: run the tests as root (the server then runs as www-data)")
        }
        try files.plantLink(path, to: target)
    }

    func plantFIFO(_ path: String) throws { try files.plantFIFO(path) }
    func plantFolder(_ path: String) throws { try files.plantFolder(path) }
    func plantSparseFile(_ path: String, size: UInt64) throws { try files.plantSparseFile(path, size: size) }
    func plantObject(_ name: String, _ bytes: [UInt8]) throws { try files.plantObject(name, bytes) }
    func remove(_ path: String) throws { try files.remove(path) }
    func sweep() async throws { try await files.sweep() }
}

/// ``HostileStorage`` for an S3 bucket: plants with signed requests on any key (``S3Keys``), as
/// anyone with the bucket's credentials can. The store lies below `prefix`; everything else in
/// the bucket is outside it: objects named like the store's at the bucket's root and beside the
/// prefix (`store-outside/…`), and for a `.concord-tmp-…` name an unfinished multipart upload
/// (what the sweep clears below the prefix). A bucket holds neither links nor FIFOs; a folder
/// is a key ending in `/` (as consoles make one) with an object below it.
struct S3HostileStorage: HostileStorage {
    let keys: S3Keys
    let prefix: String
    let remote: S3Remote
    /// The manifest's limit and 1 MiB more: over the limit, quick to upload.
    let expectations = HostileRemoteCheck.Expectations.server(largeFileSize: RemoteLayout.maxManifestSize + (1 << 20))

    var outside: String { "the keys of bucket \(keys.bucket) outside \(prefix)" }
    var places: [String] { ["", String(prefix.dropLast()) + "-outside/"] }

    func fillOutside(_ files: [String: [UInt8]]) async throws {
        for key in try await keys.list() where !key.hasPrefix(prefix) { try await keys.delete(key) }
        for upload in try await keys.uploads() where !upload.key.hasPrefix(prefix) { try await keys.abort(upload.key, id: upload.id) }
        for (name, bytes) in files {
            for place in places {
                if name.hasPrefix(WebDAVRemote.temporaryPrefix) {
                    _ = try await keys.startUpload(place + name)
                } else {
                    try await keys.put(place + name, bytes)
                }
            }
        }
    }

    func outsideContents() async throws -> [String: [UInt8]] {
        var contents: [String: [UInt8]] = [:]
        for key in try await keys.list() where !key.hasPrefix(prefix) { contents[key] = try await keys.get(key) ?? [] }
        for upload in try await keys.uploads() where !upload.key.hasPrefix(prefix) { contents["an unfinished upload of \(upload.key)"] = [] }
        return contents
    }

    func plantLink(_ path: String, to target: String) throws {
        throw HostileStorageNotApplicable("an S3 bucket has no symbolic links: a key names bytes, nothing else")
    }

    func plantFIFO(_ path: String) throws { throw HostileStorageNotApplicable("an S3 bucket has no FIFOs: a key names bytes, nothing else") }

    func plantFolder(_ path: String) async throws {
        try await keys.put(prefix + path + "/", [])
        try await keys.put(prefix + path + "/planted", Array("below a folder".utf8))
    }

    func plantSparseFile(_ path: String, size: UInt64) async throws {
        try await keys.put(prefix + path, [UInt8](repeating: 0, count: Int(size)))
    }

    func plantObject(_ name: String, _ bytes: [UInt8]) async throws {
        do {
            try await keys.put(prefix + name, bytes)
        } catch let refused as S3Keys.Refused where (400...499).contains(refused.status) {
            throw HostileStorageNotApplicable("the server refuses the key \(prefix + name): \(refused)")
        }
    }

    func remove(_ path: String) async throws {
        for key in try await keys.list(prefix: prefix + path) where key == prefix + path || key.hasPrefix(prefix + path + "/") {
            try await keys.delete(key)
        }
    }

    func sweep() async throws {
        _ = try await remote.sweepLeftovers(olderThan: 1, now: UInt64(Date().timeIntervalSince1970 * 1000) + 86_400_000)
    }
}
