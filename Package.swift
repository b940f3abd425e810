// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "Concord",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "Concord", targets: ["Concord"]),
        .library(name: "ConcordCore", targets: ["ConcordCore"]),
        .library(name: "ConcordCodec", targets: ["ConcordCodec"]),
        .library(name: "ConcordCrypto", targets: ["ConcordCrypto"]),
        .library(name: "ConcordStore", targets: ["ConcordStore"]),
        .library(name: "ConcordRemote", targets: ["ConcordRemote"]),
        .library(name: "ConcordSync", targets: ["ConcordSync"]),
        .library(name: "ConcordTesting", targets: ["ConcordTesting"]),
        .executable(name: "concord", targets: ["ConcordCLI"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based.git", exact: "2.0.1"),
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
        // SQLite persistence through GRDB: values, CRDT metadata, outbox, blobs, history.
        .target(
            name: "ConcordStore",
            dependencies: ["ConcordCore", "ConcordCodec", "ConcordCrypto", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // The Remote contract (put, get, list, delete) and FolderRemote.
        .target(name: "ConcordRemote", dependencies: ["ConcordCore"]),
        // Seal, push, pull, bootstrap: replicas converge through a Remote (docs/ARCHITECTURE.md §4–§5).
        .target(name: "ConcordSync", dependencies: ["ConcordCore", "ConcordCodec", "ConcordCrypto", "ConcordStore", "ConcordRemote"]),
        // Public test kit: seeded generator, manual clock, law checkers, simulator,
        // FaultyRemote and the remote conformance suite.
        .target(name: "ConcordTesting", dependencies: ["ConcordCore", "ConcordCodec", "ConcordRemote"]),
        // The umbrella module an app imports.
        .target(name: "Concord", dependencies: ["ConcordCore", "ConcordCodec", "ConcordCrypto", "ConcordStore", "ConcordRemote", "ConcordSync"]),
        // The `concord` command-line tool.
        .executableTarget(
            name: "ConcordCLI",
            dependencies: ["Concord", "ConcordRemote", "ConcordSync", .product(name: "ArgumentParser", package: "swift-argument-parser")]
        ),
        // A child process for the store's crash and disk tests; not a product.
        .executableTarget(
            name: "ConcordTorture",
            dependencies: ["ConcordStore", "ConcordCore", "ConcordTesting", "ConcordRemote", "ConcordSync"]
        ),
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
            dependencies: ["ConcordStore", "ConcordCore", "ConcordCodec", "ConcordTesting", "ConcordRemote", "ConcordSync",
                           .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "ConcordRemoteTests",
            dependencies: ["ConcordRemote", "ConcordCore", "ConcordTesting"]
        ),
        .testTarget(
            name: "ConcordSyncTests",
            dependencies: ["ConcordSync", "ConcordStore", "ConcordCrypto", "ConcordRemote", "ConcordCore", "ConcordCodec", "ConcordTesting",
                           .product(name: "GRDB", package: "GRDB.swift")]
        ),
        // End-to-end tests of the built `concord` binary (run next to the test bundle).
        .testTarget(
            name: "ConcordCLITests",
            dependencies: ["ConcordCore", "ConcordTesting"]
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
