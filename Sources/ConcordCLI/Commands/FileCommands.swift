import ArgumentParser
import Concord
import Foundation

struct Attach: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Store a file and set a file field to it.")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The file field.") var field: String
    @Argument(help: "The file to attach.") var path: String
    @Option(name: .customLong("type"), help: ArgumentHelp("The file's media type, e.g. image/png.", valueName: "media-type"))
    var mediaType: String?
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let ref = try recordRef(collection, id)
        let source = Paths.absolute(path)
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isFolder), !isFolder.boolValue else {
            throw ConcordError(.noFile, "no file at \(source): give the path of a file to attach")
        }
        let store = try options.openStore()
        let file = try store.attachFile(ref, field, path: source, mediaType: mediaType)
        let fields = try store.record(ref) ?? []
        options.emit(.record(ref, fields), "attached \(source) to \(ref) \(field): \(Format.file(file))")
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a file field's content (or one of its versions) to a file.",
        discussion: "A content that is not on this device is fetched from the remote (and kept, within the file budget).")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The file field.") var field: String
    @Argument(help: "Where to write the file.") var out: String
    @Option(name: .customLong("version"), help: ArgumentHelp("Export this version (a fork's or a superseded one).", valueName: "hash"))
    var version: String?
    @OptionGroup var options: GlobalOptions

    func validate() throws { if let version { _ = try contentHash(version) } }

    func run() async throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        let file = try chosenFile(ref, store)
        let destination = Paths.absolute(out)
        try await FileFetching.export(file, of: "\(ref) \(field)", to: destination, store: store, options: options)
        let text = "wrote \(destination) (\(Format.file(file)))"
        options.emit(.object([("path", .string(destination)), ("file", .file(file))]), text)
    }

    /// The field's current file, or the version `--version` names.
    private func chosenFile(_ ref: RecordRef, _ store: Store) throws -> FileRef {
        if let version {
            let hash = try contentHash(version)
            let forkVersions = try store.rawRecord(ref)?.fileVersions(field).map(\.file) ?? []
            let superseded = try store.versions(ref, field).map(\.file)
            guard let found = (forkVersions + superseded).first(where: { $0.hash == hash }) else {
                throw ConcordError(.notFound, "\(ref) \(field) has no version \(hash.hex): `concord conflicts` and `concord versions \(collection) \(id) \(field)` list them")
            }
            return found
        }
        guard let fields = try store.record(ref) else {
            throw ConcordError(.notFound, "no record \(ref) in \(store.path)")
        }
        guard let value = fields.first(where: { $0.name == field })?.value else {
            throw ConcordError(.notFound, "\(ref) has no field \(field)")
        }
        guard case let .file(current) = value else {
            throw ConcordError(.notAFile, "\(ref) \(field) is not a file field (it holds \(Format.value(value)))")
        }
        return current
    }
}

struct Conflicts: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List open conflicts: file forks and deletes concurrent with updates.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let conflicts = try store.conflicts()
        var names: [ReplicaID: String] = [:]
        names[store.replicaID] = try store.name() ?? "this replica"
        options.emit(
            .object([("conflicts", .array(conflicts.map(JSON.conflict)))]),
            conflicts.isEmpty ? "no open conflicts" : conflicts.map { Format.conflict($0, names: names) }.joined(separator: "\n"))
    }
}

struct Resolve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Resolve a conflict: keep one version of a forked file, or write merged content.",
        discussion: """
            A file fork: `concord resolve C ID FIELD --keep HASH` or `--file PATH`. A delete \
            concurrent with an update (no FIELD): `--keep-record` keeps the record, `--delete` \
            deletes it again. Either is an ordinary write that supersedes every version it saw.
            """)

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The forked file field (omit for a delete/update conflict).") var field: String?
    @Option(name: .long, help: ArgumentHelp("Keep the version with this content hash.", valueName: "hash")) var keep: String?
    @Option(name: .long, help: ArgumentHelp("Write this file (e.g. merged content) as the field's value.", valueName: "path")) var file: String?
    @Flag(name: .customLong("keep-record"), help: "Keep a record that was deleted while updated elsewhere.") var keepRecord = false
    @Flag(name: .customLong("delete"), help: "Delete a record that was deleted while updated elsewhere, again.") var deleteRecord = false
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        let chosen = [keep != nil, file != nil, keepRecord, deleteRecord].filter { $0 }.count
        guard chosen == 1 else {
            throw ValidationError("choose exactly one of --keep HASH, --file PATH (a file fork), --keep-record or --delete (a delete/update conflict)")
        }
        if keep != nil || file != nil {
            guard field != nil else { throw ValidationError("--keep and --file resolve a file fork: name its FIELD") }
        } else if field != nil {
            throw ValidationError("--keep-record and --delete resolve a delete/update conflict, which has no FIELD")
        }
        if let keep { _ = try contentHash(keep) }
    }

    func run() async throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        let what: String
        if let keep, let field {
            let hash = try contentHash(keep)
            if store.blobs.contains(hash) {
                try store.keepVersion(ref, field, hash: hash)
            } else {
                // Not on this device (files on demand): fetched first, then kept.
                try await FileFetching.engine(for: "version \(hash.hex) of \(ref) \(field)", store: store, options: options) { engine throws(ConcordError) in
                    try await engine.keepVersion(ref, field, hash: hash)
                }
            }
            what = "kept version \(hash.hex) of \(ref) \(field)"
        } else if let file, let field {
            let source = Paths.absolute(file)
            guard FileManager.default.fileExists(atPath: source) else {
                throw ConcordError(.noFile, "no file at \(source): give the merged content's path")
            }
            let written = try store.attachFile(ref, field, path: source)
            what = "wrote \(source) to \(ref) \(field): \(Format.file(written))"
        } else if keepRecord {
            guard try store.record(ref) != nil else { throw ConcordError(.notFound, "no record \(ref) in \(store.path)") }
            try store.keepRecord(ref)
            what = "kept \(ref)"
        } else {
            guard try store.record(ref) != nil else { throw ConcordError(.notFound, "no record \(ref) in \(store.path)") }
            try store.delete(ref)
            what = "deleted \(ref)"
        }
        let remaining = try store.conflicts().filter { $0.ref == ref }
        options.emit(
            .object([("resolved", .string(what)), ("conflicts", .array(remaining.map(JSON.conflict)))]),
            what + (remaining.isEmpty ? "; no conflict remains on \(ref) — sync to resolve it everywhere" : "; still open: " + remaining.map(\.description).joined(separator: ", ")))
    }
}

struct Versions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "List the superseded versions of a file field still kept in history.")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The file field.") var field: String
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        var current: FileRef?
        if case let .file(file)? = try store.record(ref)?.first(where: { $0.name == field })?.value { current = file }
        let versions = try store.versions(ref, field)
        let documents: [JSON] = versions.map { version in
            var members: [(String, JSON)] = [
                ("hash", .string(version.file.hash.hex)), ("size", .uint(version.file.size)),
                ("replica", .string(version.stamp.replica.description)), ("supersededAt", .uint(version.supersededAt)),
                ("available", .bool(store.blobs.contains(version.file.hash))),
            ]
            if let type = version.file.mediaType { members.append(("type", .string(type))) }
            return .object(members)
        }
        var lines = ["\(ref) \(field)", "  current: \(current.map(Format.file) ?? "none")"]
        if versions.isEmpty { lines.append("  no superseded versions in history") }
        for version in versions {
            lines.append("  \(version.file.hash.hex)  \(version.file.size) bytes  superseded \(Format.time(version.supersededAt))  by \(version.stamp.replica)")
        }
        options.emit(
            .object([
                ("collection", .string(collection)), ("id", .string(id)), ("field", .string(field)),
                ("current", current.map(JSON.file) ?? .null), ("versions", .array(documents)),
            ]),
            lines.joined(separator: "\n"))
    }
}

struct Restore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Make a superseded version of a file field current again.")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The file field.") var field: String
    @Argument(help: "The version's content hash (`concord versions` lists them).") var hash: String
    @OptionGroup var options: GlobalOptions

    func validate() throws { _ = try contentHash(hash) }

    func run() async throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        let hash = try contentHash(hash)
        if store.blobs.contains(hash) {
            try store.restore(ref, field, hash: hash)
        } else {
            // Not on this device (files on demand, or swept): fetched first, then restored.
            try await FileFetching.engine(for: "version \(hash.hex) of \(ref) \(field)", store: store, options: options) { engine throws(ConcordError) in
                try await engine.restore(ref, field, hash: hash)
            }
        }
        let fields = try store.record(ref) ?? []
        options.emit(.record(ref, fields), "restored \(hash.hex) as \(ref) \(field)")
    }
}
