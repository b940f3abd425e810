// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Concord",
    // Linux (verified: every test runs there), macOS 15 and iOS 18 (Synchronization's Mutex
    // needs them; not built here: see the README's "Platforms").
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .library(name: "Concord", targets: ["Concord"]),
        .library(name: "ConcordCore", targets: ["ConcordCore"]),
        .library(name: "ConcordCodec", targets: ["ConcordCodec"]),
        .library(name: "ConcordCrypto", targets: ["ConcordCrypto"]),
        .library(name: "ConcordStore", targets: ["ConcordStore"]),
        .library(name: "ConcordRemote", targets: ["ConcordRemote"]),
        .library(name: "ConcordSync", targets: ["ConcordSync"]),
        .library(name: "ConcordWebDAV", targets: ["ConcordWebDAV"]),
        .library(name: "ConcordS3", targets: ["ConcordS3"]),
        .library(name: "ConcordTesting", targets: ["ConcordTesting"]),
        // Real storage servers on loopback, for tests and the backend benchmarks.
        .library(name: "ConcordTestServers", targets: ["ConcordTestServers"]),
        // Loaded with LD_PRELOAD by the crash, error and power-cut enumeration: fails the Nth
        // I/O call, or cuts the power before it.
        .library(name: "ConcordFaultInjection", type: .dynamic, targets: ["ConcordFaultInjection"]),
        .executable(name: "concord", targets: ["ConcordCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", exact: "2.0.1"),
        .package(url: "https://github.com/swift-server/async-http-client.git", exact: "1.37.0"),
        .package(url: "https://github.com/apple/swift-log.git", exact: "1.16.2"),
        // `swift package generate-documentation --target Concord` (make docs).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", exact: "1.5.0"),
    ],
    targets: [
        // Pure, deterministic merge core: no I/O, no clock reads, no randomness.
        .target(name: "ConcordCore"),
        // Versioned canonical binary formats of deltas and snapshots (docs/FORMAT.md).
        .target(name: "ConcordCodec", dependencies: ["ConcordCore"]),
        // libsodium, as Debian's libsodium-dev provides it.
        .systemLibrary(name: "CSodium", pkgConfig: "libsodium", providers: [.apt(["libsodium-dev"])]),
        // Keys, sealed objects, streams, keyed names (docs/ARCHITECTURE.md §5).
        .target(name: "ConcordCrypto", dependencies: ["CSodium", "ConcordCore"]),
        // A file's inode and birth time (statx on Linux, stat elsewhere): how a store tells
        // that its file was copied or restored from a backup.
        .target(name: "CFileIdentity"),
        // SQLite persistence through GRDB: values, CRDT metadata, outbox, blobs, history.
        .target(
            name: "ConcordStore",
            dependencies: [
                "CFileIdentity", "ConcordCore", "ConcordCodec", "ConcordCrypto",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ]
        ),
        // The Remote contract (put, get, list, delete), how a backend describes itself
        // (RemoteBackend: URL schemes, display, opening), and FolderRemote.
        .target(name: "ConcordRemote", dependencies: ["ConcordCore"]),
        // What the HTTP backends share: one pooled client, retries with backoff and jitter,
        // streaming bodies, and failures as one-line typed errors naming the remote.
        .target(
            name: "ConcordHTTP",
            dependencies: ["ConcordCore", "ConcordRemote", .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        // A Remote over WebDAV (Nextcloud, ownCloud, Synology, Apache, nginx, rclone).
        .target(
            name: "ConcordWebDAV",
            dependencies: ["ConcordCore", "ConcordRemote", "ConcordHTTP", .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        // A Remote over S3-compatible object storage, signed with SigV4 on libsodium.
        .target(
            name: "ConcordS3",
            dependencies: ["CSodium", "ConcordCore", "ConcordRemote", "ConcordHTTP", .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        // Seal, push, pull, bootstrap: replicas converge through a Remote (docs/ARCHITECTURE.md §4–§5).
        .target(
            name: "ConcordSync",
            dependencies: ["ConcordCore", "ConcordCodec", "ConcordCrypto", "ConcordStore", "ConcordRemote", .product(name: "Logging", package: "swift-log")]
        ),
        // Public test kit: seeded generator, manual clock, law checkers, simulator,
        // FaultyRemote and the remote conformance suite.
        .target(name: "ConcordFaultInjection", linkerSettings: [.linkedLibrary("dl")]),
        .target(name: "ConcordTesting", dependencies: ["ConcordCore", "ConcordCodec", "ConcordRemote"]),
        // The umbrella module an app imports.
        .target(name: "Concord", dependencies: ["ConcordCore", "ConcordCodec", "ConcordCrypto", "ConcordStore", "ConcordRemote", "ConcordSync"]),
        // The `concord` command-line tool.
        .executableTarget(
            name: "ConcordCLI",
            dependencies: [
                "Concord", "ConcordRemote", "ConcordSync", "ConcordWebDAV", "ConcordS3",
                .product(name: "ArgumentParser", package: "swift-argument-parser"), .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // The real storage servers (Apache, nginx, rclone, moto, Ceph RGW) the tests and the
        // backend benchmarks start on loopback.
        .target(
            name: "ConcordTestServers",
            dependencies: ["ConcordCore", "ConcordRemote", "ConcordHTTP", "ConcordWebDAV", "ConcordS3",
                           .product(name: "AsyncHTTPClient", package: "async-http-client")]
        ),
        // Checks the fault library's power-cut mode (CrashTests runs it); not a product.
        .executableTarget(name: "ConcordPowerCutCheck", path: "Tests/PowerCutCheck"),
        // A child process for the store's crash and disk tests; not a product.
        .executableTarget(
            name: "ConcordCrashChild",
            dependencies: ["ConcordStore", "ConcordCore", "ConcordCrypto", "ConcordTesting", "ConcordRemote", "ConcordSync"]
        ),
        // The game model's two versions and their schema files, which the schema-evolution
        // tests of the store, the sync fuzz and the command line share; not a product.
        .target(name: "SchemaEvolutionModels", dependencies: ["ConcordStore"], path: "Tests/SchemaEvolutionModels"),
        .testTarget(
            name: "ConcordCoreTests",
            dependencies: [
                "ConcordCore", "ConcordCodec", "ConcordTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
        .testTarget(
            name: "ConcordCryptoTests",
            dependencies: ["ConcordCrypto", "ConcordCore", "ConcordTesting"]
        ),
        .testTarget(
            name: "ConcordStoreTests",
            dependencies: ["ConcordStore", "ConcordCore", "ConcordCodec", "ConcordCrypto", "ConcordTesting", "SchemaEvolutionModels", "ConcordRemote", "ConcordSync",
                           "ConcordTestServers", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "ConcordRemoteTests",
            dependencies: ["ConcordRemote", "ConcordCore", "ConcordTesting"]
        ),
        // WebDAV and S3 against real servers started on loopback (Apache, nginx, rclone,
        // moto, Ceph RGW), the SigV4 suite, and the sync fuzz through each backend.
        .testTarget(
            name: "ConcordHTTPTests",
            dependencies: ["ConcordHTTP", "ConcordWebDAV", "ConcordS3", "ConcordRemote", "ConcordCore", "ConcordTesting",
                           "ConcordSync", "ConcordStore", "ConcordCrypto", "ConcordTestServers"]
        ),
        .testTarget(
            name: "ConcordSyncTests",
            dependencies: ["ConcordSync", "ConcordStore", "ConcordCrypto", "ConcordRemote", "ConcordCore", "ConcordCodec", "ConcordTesting", "SchemaEvolutionModels",
                           "ConcordTestServers", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // End-to-end tests of the built `concord` binary (run next to the test bundle).
        .testTarget(
            name: "ConcordCLITests",
            dependencies: ["ConcordCore", "ConcordCrypto", "ConcordSync", "ConcordRemote", "ConcordS3", "ConcordWebDAV", "ConcordTesting", "SchemaEvolutionModels", "ConcordTestServers",
                           .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "ConcordCodecTests",
            dependencies: [
                "ConcordCore", "ConcordCodec", "ConcordTesting",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
