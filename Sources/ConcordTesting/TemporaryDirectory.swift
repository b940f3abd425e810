import Foundation

/// A fresh directory for one test, removed when the value is released.
public final class TemporaryDirectory: Sendable {
    public let path: String

    /// Creates `<temporary directory>/<name>-<random>` (under `base` when given, e.g.
    /// `/dev/shm` for tests that fsync a lot).
    public init(_ name: String = "concord", base: String = NSTemporaryDirectory()) {
        path = (base.hasSuffix("/") ? base : base + "/") + "\(name)-\(UInt64.random(in: 0...UInt64.max))"
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    /// The path of `name` inside the directory.
    public func file(_ name: String) -> String { path + "/" + name }
}
