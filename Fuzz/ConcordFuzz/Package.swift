// swift-tools-version: 6.1
// libFuzzer targets for every parser of bytes that come from outside (Fuzz/README.md).
// A package of its own, like Benchmarks/, so `swift build` and `make test` never build it;
// `make fuzz` (scripts/fuzz.sh) builds it with the address sanitizer and coverage
// instrumentation and links libFuzzer's driver.
import PackageDescription

let package = Package(
    name: "ConcordFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "Concord", path: "../.."),
        .package(url: "https://github.com/apple/swift-argument-parser.git", exact: "1.8.2"),
    ],
    targets: [
        // One binary, every target: `ConcordFuzz <target> [libFuzzer flags] [corpus…]`,
        // `ConcordFuzz seeds <folder>` (the seed corpus, from the real encoders),
        // `ConcordFuzz list`.
        .executableTarget(
            name: "ConcordFuzz",
            dependencies: [
                .product(name: "Concord", package: "Concord"),
                .product(name: "ConcordWebDAV", package: "Concord"),
                .product(name: "ConcordS3", package: "Concord"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            path: "Sources/ConcordFuzz"
        ),
    ],
    swiftLanguageModes: [.v6]
)
