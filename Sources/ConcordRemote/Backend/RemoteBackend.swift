import ConcordCore
import Foundation

/// A storage backend as a program reaches it by a URL: the schemes it accepts, how one of
/// its locations is parsed, shown without secrets, and opened (its root checked or
/// created). The conforming type's values are parsed locations — ``FolderLocation`` here,
/// `WebDAVLocation` in `ConcordWebDAV`, `S3Location` in `ConcordS3` — and a program keeps
/// a list of the types (``RemoteBackends``) rather than switching on which backend it
/// holds: a new backend is one more conformance and one more entry in that list.
///
/// The split follows swift-nio's universal bootstrap: what differs between backends is the
/// protocol, and a caller handles `any RemoteBackend` alone.
public protocol RemoteBackend: Sendable {
    /// The backend's name in documents: `folder`, `webdav`, `s3`.
    static var kind: String { get }
    /// The URL schemes it accepts, in lower case, without `://`.
    static var schemes: [String] { get }
    /// Whether text without a scheme (a path) is one of its locations. At most one backend
    /// of a list says so.
    static var acceptsPaths: Bool { get }
    /// How a person writes a location, in the list of the forms a program knows:
    /// `file:///path/to/folder`, `https://host/path (WebDAV)`.
    static var example: String { get }
    /// What its options apply to, in the message that refuses them for another backend:
    /// `a WebDAV remote (https://host/path)`.
    static var summary: String { get }
    /// The names of the settings it takes besides the URL (the command line's options,
    /// without `--`): `user`; `endpoint` and `region`. Empty when it takes none.
    static var options: [String] { get }

    /// Parses a location a person typed, with the values of the ``options`` given (only
    /// its own). Throws a message that says what to type instead.
    init(parsing text: String, options: [String: String]) throws(RemoteLocationError)

    /// The canonical URL: what a program keeps to find the remote again (parsing it gives
    /// the same location). It never holds a password or a secret.
    var url: String { get }
    /// How messages name the remote: a folder's path, a WebDAV URL, a bucket and prefix.
    var display: String { get }
    /// The local folder the location is, if it is one.
    var folder: String? { get }
    /// The `http://` or `https://` URL the remote's requests go to, if it is reached over
    /// HTTP (a program warns when it is plain HTTP to another machine).
    var httpOrigin: String? { get }
    /// Where its credentials come from, in a line for people, if it needs any.
    var credentialsNote: String? { get }
    /// The location `name/` below this one.
    func child(_ name: String) -> Self
    /// What sweeping `count` leftovers (``LeftoverSweeping/sweepLeftovers(olderThan:now:)``)
    /// did, in a line for people.
    static func sweptLeftovers(_ count: Int) -> String

    /// The remote at this location, its credentials read through `access`, its root
    /// checked or created as `root` says.
    func open(root: RootCheck, access: RemoteAccess) async throws -> any LeftoverSweeping
}

extension RemoteBackend {
    public static var acceptsPaths: Bool { false }
    public static var options: [String] { [] }
    public var folder: String? { nil }
    public var httpOrigin: String? { nil }
    public var credentialsNote: String? { nil }

    public static func sweptLeftovers(_ count: Int) -> String {
        "deleted \(count) stale temporary file\(count == 1 ? "" : "s") from the remote folder"
    }
}

/// What ``RemoteBackend/open(root:access:)`` does with the remote's root — a folder, a
/// WebDAV collection, a bucket.
public enum RootCheck: Sendable, Hashable {
    /// Nothing: a missing root is found by the first request.
    case none
    /// It must exist; if it does not, the error (``ConcordCore/ConcordError/Code/noFolder``
    /// or ``ConcordCore/ConcordError/Code/noBucket``) says what to check, then `advice`:
    /// how to have it created (`pass --create to create it`).
    case mustExist(advice: String)
    /// It is created when it does not exist.
    case createIfMissing
}

/// Where a backend finds the credentials it needs: the environment (the AWS variables, a
/// WebDAV password's variable), else a question to a person.
public struct RemoteAccess: Sendable {
    /// The variables credentials are read from.
    public var environment: [String: String]
    /// Asks a person for a secret the environment does not hold (`variable`, a secret `for`
    /// a remote, under a label such as `Password`); nil when no one can be asked.
    public var ask: (@Sendable (_ variable: String, _ what: String, _ label: String) throws -> String)?

    public init(
        environment: [String: String] = ProcessInfo.processInfo.environment,
        ask: (@Sendable (_ variable: String, _ what: String, _ label: String) throws -> String)? = nil
    ) {
        self.environment = environment
        self.ask = ask
    }

    /// The secret in `variable`, else the one ``ask`` gets. Throws
    /// ``ConcordCore/ConcordError/Code/remoteAuth`` when neither has one.
    public func secret(_ variable: String, for what: String, label: String) throws -> String {
        if let value = environment[variable], !value.isEmpty { return value }
        if let ask { return try ask(variable, what, label) }
        throw ConcordError(.remoteAuth, "no \(label.lowercased()) for \(what): set $\(variable)")
    }
}

/// A location that does not parse: the message says what to type instead.
public struct RemoteLocationError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) {
        self.message = message
    }

    public var description: String { message }

    /// `text` as a message quotes it: its first 80 characters and its size when longer.
    public static func clip(_ text: String) -> String {
        text.count <= 80 ? text : String(text.prefix(80)) + "… (\(text.utf8.count) bytes)"
    }
}

/// The backends a program knows, in the order it names them: it parses a location with the
/// backend its scheme names (or the one that takes paths) and refuses an option of another.
public struct RemoteBackends: Sendable {
    public let all: [any RemoteBackend.Type]

    public init(_ all: [any RemoteBackend.Type]) {
        self.all = all
    }

    /// The backend whose scheme starts `text`, or the one that takes paths when it has no
    /// scheme; nil for a scheme none accepts.
    public func backend(for text: String) -> (any RemoteBackend.Type)? {
        let lower = text.lowercased()
        guard let separator = lower.range(of: "://") else { return all.first { $0.acceptsPaths } }
        let scheme = String(lower[..<separator.lowerBound])
        return all.first { $0.schemes.contains(scheme) }
    }

    /// Parses `text` with its backend. `options` holds the settings given besides the URL
    /// (``RemoteBackend/options``); one of another backend is refused, before the URL is read.
    public func location(parsing text: String, options: [String: String] = [:]) throws(RemoteLocationError) -> any RemoteBackend {
        let backend = backend(for: text)
        for other in all where other.options.contains(where: { options[$0] != nil }) {
            if let backend, ObjectIdentifier(backend) == ObjectIdentifier(other) { continue }
            let names = other.options.map { "--" + $0 }.joined(separator: " and ")
            throw RemoteLocationError("\(names) \(other.options.count == 1 ? "applies" : "apply") to \(other.summary), not '\(RemoteLocationError.clip(text))'")
        }
        guard let backend else {
            let examples = all.map { $0.example }
            let forms = examples.count > 1 ? examples.dropLast().joined(separator: ", ") + " or " + examples[examples.count - 1] : examples.joined()
            throw RemoteLocationError("'\(RemoteLocationError.clip(text))' is not a remote Concord knows: use \(forms)")
        }
        return try Self.parse(text, as: backend, options: options.filter { backend.options.contains($0.key) })
    }

    private static func parse<Backend: RemoteBackend>(_ text: String, as _: Backend.Type, options: [String: String]) throws(RemoteLocationError) -> any RemoteBackend {
        try Backend(parsing: text, options: options)
    }
}
