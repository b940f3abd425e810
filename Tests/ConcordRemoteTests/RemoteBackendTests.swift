import ConcordCore
import ConcordRemote
import ConcordTesting
import Foundation
import Testing

/// A list of backends picks one by the URL's scheme (the folder one for a plain path) and
/// refuses the options of another, before the URL is read; the folder's location parses,
/// shows and opens as the command line uses it.
@Suite struct RemoteBackendTests {
    /// A backend with options, for the list's checks: `mem://name`.
    struct MemoryLocation: RemoteBackend {
        let name: String
        let size: String?
        static let kind = "memory"
        static let schemes = ["mem"]
        static let example = "mem://name"
        static let summary = "a memory remote (mem://name)"
        static var options: [String] { ["size", "speed"] }

        init(parsing text: String, options: [String: String]) throws(RemoteLocationError) {
            name = String(text.dropFirst("mem://".count))
            size = options["size"]
        }

        init(name: String, size: String?) {
            self.name = name
            self.size = size
        }

        var url: String { "mem://" + name }
        var display: String { name }
        func child(_ child: String) -> MemoryLocation { MemoryLocation(name: name + "/" + child, size: size) }
        func open(root: RootCheck, access: RemoteAccess) async throws -> any LeftoverSweeping {
            throw ConcordError(.remote, "not here")
        }
    }

    let backends = RemoteBackends([FolderLocation.self, MemoryLocation.self])

    @Test func theSchemeChoosesTheBackendAndAPathTheFolder() throws {
        let memory = try #require(try backends.location(parsing: "MEM://games", options: ["size": "8"]) as? MemoryLocation)
        #expect(memory.name == "games" && memory.size == "8")
        let folder = try #require(try backends.location(parsing: "/tmp/a/../remote") as? FolderLocation)
        #expect(folder.path == "/tmp/remote" && folder.url == "file:///tmp/remote")
        let again = try #require(try backends.location(parsing: folder.url) as? FolderLocation)
        #expect(again == folder && again.display == "/tmp/remote" && again.folder == "/tmp/remote")
        #expect(folder.child("x").path == "/tmp/remote/x")
    }

    /// The message `text` with `options` is refused with, or nil.
    func refusal(_ text: String, _ options: [String: String] = [:]) -> String? {
        do {
            _ = try backends.location(parsing: text, options: options)
            return nil
        } catch {
            return error.message
        }
    }

    @Test func anotherBackendsOptionsAndUnknownSchemesAreRefusedWithWhatToType() {
        #expect(refusal("/tmp/r", ["speed": "1"]) == "--size and --speed apply to a memory remote (mem://name), not '/tmp/r'")
        #expect(refusal("ftp://host/x", ["size": "1"]) == "--size and --speed apply to a memory remote (mem://name), not 'ftp://host/x'")
        #expect(refusal("ftp://host/x") == "'ftp://host/x' is not a remote Concord knows: use file:///path/to/folder or mem://name")
        #expect(refusal("/a://b") == "'/a://b' is not a remote Concord knows: use file:///path/to/folder or mem://name")
        #expect(refusal("") == "the remote URL is empty")
        #expect(refusal("file://host/x") == "'file://host/x' names host host; a file URL is file:///absolute/path")
    }

    @Test func aFolderRootIsCheckedOrCreatedAsAsked() async throws {
        let directory = TemporaryDirectory()
        let missing = FolderLocation(path: directory.file("remote"))
        do {
            _ = try await missing.open(root: .mustExist(advice: "pass --create to create it"), access: RemoteAccess())
            Issue.record("a missing folder opened")
        } catch let error as ConcordError {
            #expect(error.code == .noFolder && error.message.hasSuffix(", or pass --create to create it"))
        }
        _ = try await missing.open(root: .createIfMissing, access: RemoteAccess())
        var isFolder: ObjCBool = false
        #expect(FileManager.default.fileExists(atPath: missing.path, isDirectory: &isFolder) && isFolder.boolValue)
        #expect(FileManager.default.createFile(atPath: directory.file("file"), contents: Data()))
        do {
            _ = try await FolderLocation(path: directory.file("file")).open(root: .createIfMissing, access: RemoteAccess())
            Issue.record("a file opened as a folder")
        } catch let error as ConcordError {
            #expect(error.code == .notAFolder)
        }
    }

    @Test func aSecretComesFromTheEnvironmentElseTheQuestion() throws {
        #expect(try RemoteAccess(environment: ["PW": "s"]).secret("PW", for: "x", label: "Password") == "s")
        #expect(try RemoteAccess(environment: [:], ask: { variable, _, _ in variable + "!" }).secret("PW", for: "x", label: "Password") == "PW!")
        #expect(throws: ConcordError.self) { try RemoteAccess(environment: [:]).secret("PW", for: "x", label: "Password") }
    }
}
