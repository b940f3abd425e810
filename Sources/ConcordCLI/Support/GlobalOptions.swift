import ArgumentParser
import Concord
import Foundation

/// The options every command accepts: where the store is, how to unlock the remote, and
/// whether to print JSON.
struct GlobalOptions: ParsableArguments {
    @Option(name: .long, help: ArgumentHelp("The store file (default: $CONCORD_STORE, else ./concord.db).", valueName: "path"))
    var store: String?

    @Option(name: .customLong("key-file"), help: ArgumentHelp("Unlock the remote with this key file instead of a passphrase.", valueName: "file"))
    var keyFile: String?

    @Flag(name: .long, help: "Print exactly one JSON document on stdout.")
    var json = false

    @Flag(name: .long, help: "Print what the library logs (sync, compaction, file sweep, doctor, automatic sync) on stderr.")
    var verbose = false

    /// The store file's absolute path.
    var storePath: String {
        let given = store ?? ProcessInfo.processInfo.environment["CONCORD_STORE"].flatMap { $0.isEmpty ? nil : $0 } ?? "concord.db"
        return Paths.absolute(given)
    }

    /// Opens the existing store; fails naming the path when there is none.
    func openStore() throws -> Store {
        let path = storePath
        guard FileManager.default.fileExists(atPath: path) else { throw ConcordError.noStore(path) }
        return try Store(path: path)
    }

    /// Prints the command's result: its JSON document with `--json`, else the text.
    func emit(_ document: JSON, _ text: @autoclosure () -> String) {
        if json {
            print(document.text)
        } else {
            let lines = text()
            if !lines.isEmpty { print(lines) }
        }
    }

    /// A line of narration, shown only without `--json`.
    func say(_ text: String) {
        if !json { print(text) }
    }
}

enum Paths {
    /// `path` made absolute against the current folder, with `~` expanded.
    static func absolute(_ path: String) -> String {
        FolderLocation.absolute(path)
    }
}

/// Parses `COLLECTION ID` arguments into a record reference.
func recordRef(_ collection: String, _ id: String) throws -> RecordRef {
    guard !collection.isEmpty else { throw ValidationError("the collection name is empty") }
    guard !id.isEmpty else { throw ValidationError("the record id is empty") }
    return RecordRef(collection: collection, id: id)
}

/// Parses a content hash argument (64 hex digits).
func contentHash(_ text: String) throws -> ContentHash {
    guard let hash = ContentHash(hex: text.lowercased()) else {
        throw ValidationError("'\(text)' is not a content hash (64 hex digits; `concord conflicts` and `concord versions` list them)")
    }
    return hash
}
