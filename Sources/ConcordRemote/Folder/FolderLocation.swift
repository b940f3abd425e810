import ConcordCore
import Foundation

/// A folder remote's location: `file:///path/to/folder`, or a plain path (made absolute
/// against the current folder, `~` expanded). Opens a ``FolderRemote``.
public struct FolderLocation: RemoteBackend, Hashable {
    /// The folder's absolute path.
    public let path: String

    public init(path: String) {
        self.path = path
    }

    public static let kind = "folder"
    public static let schemes = ["file"]
    public static var acceptsPaths: Bool { true }
    public static let example = "file:///path/to/folder"
    public static let summary = "a folder remote (file:///path/to/folder)"

    public init(parsing text: String, options: [String: String]) throws(RemoteLocationError) {
        if text.lowercased().hasPrefix("file://") {
            let path: String
            if let url = URL(string: text), url.isFileURL {
                guard url.host == nil || url.host == "" || url.host == "localhost" else {
                    throw RemoteLocationError("'\(text)' names host \(url.host ?? ""); a file URL is file:///absolute/path")
                }
                path = url.path
            } else {
                path = String(text.dropFirst("file://".count))
            }
            guard path.hasPrefix("/") else { throw RemoteLocationError("'\(text)' is not file:///absolute/path") }
            self.init(path: Self.absolute(path))
        } else {
            guard !text.isEmpty else { throw RemoteLocationError("the remote URL is empty") }
            self.init(path: Self.absolute(text))
        }
    }

    /// `path` made absolute against the current folder, `~` expanded, `.` and `..` resolved.
    public static func absolute(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return (expanded as NSString).standardizingPath }
        let current = FileManager.default.currentDirectoryPath
        return ((current as NSString).appendingPathComponent(expanded) as NSString).standardizingPath
    }

    public var url: String { URL(fileURLWithPath: path, isDirectory: false).absoluteString }
    public var display: String { path }
    public var folder: String? { path }

    public func child(_ name: String) -> FolderLocation {
        FolderLocation(path: path + "/" + name)
    }

    /// A ``FolderRemote``; a root check refuses a file where the folder belongs.
    public func open(root: RootCheck, access: RemoteAccess) async throws -> any LeftoverSweeping {
        if root != .none {
            var isFolder: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: path, isDirectory: &isFolder)
            if exists && !isFolder.boolValue {
                throw ConcordError(.notAFolder, "\(path) is a file, not a folder: give the remote's folder")
            }
            if !exists, case let .mustExist(advice) = root {
                throw ConcordError(.noFolder, "the remote folder \(path) does not exist: check the path and that its drive is mounted, or \(advice)")
            }
        }
        return try FolderRemote(root: path, createIfMissing: root == .createIfMissing)
    }
}
