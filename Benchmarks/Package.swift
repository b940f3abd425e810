// swift-tools-version: 6.1
// Benchmarks live in their own package so `make test` does not build the benchmark
// framework; `make bench` runs them (release build).
import PackageDescription

let package = Package(
    name: "ConcordBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Concord", path: ".."),
        .package(url: "https://github.com/ordo-one/benchmark.git", exact: "1.38.1", traits: ["MallocInterposer"]),
        .package(url: "https://github.com/groue/GRDB.swift.git", exact: "7.10.0"),
    ],
    targets: [
        .executableTarget(
            name: "CoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordCodec", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
            ],
            path: "CoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .executableTarget(
            name: "StoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "StoreBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // libsodium for the raw baseline (named apart from the package's own CSodium).
        .systemLibrary(name: "CSodiumBench", path: "CSodiumBench", pkgConfig: "libsodium"),
        .executableTarget(
            name: "SyncBenchmarks",
            dependencies: [
                "CSodiumBench",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordCrypto", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "ConcordRemote", package: "Concord"),
                .product(name: "ConcordSync", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
            ],
            path: "SyncBenchmarks",
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        // The growth measurement: one long run (see README.md, "Growth"), so a plain
        // executable rather than an ordo-one benchmark. It lives under Tools/ because the
        // benchmark plugin runs every executable target whose folder sits directly in
        // Benchmarks/.
        .executableTarget(
            name: "GrowthBenchmark",
            dependencies: [
                .product(name: "Concord", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tools/GrowthBenchmark"
        ),
        // The same sync workloads on the folder and on every real WebDAV and S3 server the
        // tests use, started on loopback (see README.md, "Backends"); one long run too.
        .executableTarget(
            name: "BackendBenchmark",
            dependencies: [
                .product(name: "Concord", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
                .product(name: "ConcordTestServers", package: "Concord"),
            ],
            path: "Tools/BackendBenchmark"
        ),
        // Bootstrap at scale: a new replica joins a snapshot of 1,000,000 records, against raw
        // SQLite inserting the same rows (see README.md, "Scale"); each step its own process.
        // Raw SQLite inserting the rows the scale tools' stores hold: their baseline.
        .target(
            name: "RawSQLiteBaseline",
            dependencies: [
                .product(name: "ConcordTesting", package: "Concord"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Tools/RawSQLiteBaseline"
        ),
        .executableTarget(
            name: "BootstrapBenchmark",
            dependencies: [
                .product(name: "Concord", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
                "RawSQLiteBaseline",
            ],
            path: "Tools/BootstrapBenchmark"
        ),
        // Sealing a backlog of RECORDS records in bounded batches, as a push does, against
        // raw SQLite inserting the same rows (see README.md, "Scale"); one long run too.
        .executableTarget(
            name: "SealBenchmark",
            dependencies: [
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
                "RawSQLiteBaseline",
            ],
            path: "Tools/SealBenchmark"
        ),
        // Declared collections and queries against raw GRDB on a plain table, and a query's
        // memory over a large collection (see README.md, "Queries"); one long run.
        .executableTarget(
            name: "QueryBenchmark",
            dependencies: [
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
            ],
            path: "Tools/QueryBenchmark"
        ),
        // Live sync: two replicas watching one folder, the latency of 100 writes (watched and
        // polled), and an idle hour's storage requests (see README.md, "Live sync").
        .executableTarget(
            name: "LiveBenchmark",
            dependencies: [
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "ConcordRemote", package: "Concord"),
                .product(name: "ConcordSync", package: "Concord"),
                .product(name: "ConcordTestServers", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
            ],
            path: "Tools/LiveBenchmark"
        ),
        // One store workload run once, for a profiler (see README.md, "Profiles").
        .executableTarget(
            name: "StoreProfile",
            dependencies: [
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
            ],
            path: "Tools/StoreProfile"
        ),
        // Concord's side of `make bench-peers`: the same in-memory workloads Benchmarks/Peers/peers.py
        // runs on Loro and Yrs (see README.md, "Peers"). Under Peers/, not directly in
        // Benchmarks/, so the benchmark plugin does not run it.
        .executableTarget(
            name: "PeersConcord",
            dependencies: [
                .product(name: "ConcordCore", package: "Concord"),
                .product(name: "ConcordCodec", package: "Concord"),
                .product(name: "ConcordStore", package: "Concord"),
                .product(name: "ConcordTesting", package: "Concord"),
            ],
            path: "Peers/Concord"
        ),
    ],
    swiftLanguageModes: [.v6]
)
