import ArgumentParser
import Concord
import Foundation

struct Init: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Create a replica store.")

    @Option(name: .long, help: "The device name other replicas see.")
    var name: String?

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let path = options.storePath
        guard !FileManager.default.fileExists(atPath: path) else {
            throw ConcordError(.exists, "a store already exists at \(path): use it, or choose another path with --store")
        }
        let folder = (path as NSString).deletingLastPathComponent
        guard FileManager.default.fileExists(atPath: folder) else {
            throw ConcordError(.noFolder, "the folder \(folder) does not exist: create it first, or choose another --store path")
        }
        let store = try Store(path: path)
        let deviceName = name ?? ProcessInfo.processInfo.hostName
        try store.setName(deviceName)
        options.emit(
            .object([("store", .string(path)), ("replica", .string(store.replicaID.description)), ("name", .string(deviceName))]),
            "created store \(path)\n  replica \(store.replicaID) (\(deviceName))\n  next: `concord remote set file:///path/to/shared/folder`, then `concord sync`")
    }
}

struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set fields of a record (creating it if needed).",
        discussion: """
            VALUE is JSON: level=3 (int), ratio=0.5 (double), done=true, note=null, \
            title='"Zelda"' (string), tags='["a","b"]' (a set). A bare word is a string: title=Zelda.
            """)

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: ArgumentHelp("Fields to set.", valueName: "field=value")) var assignments: [String] = []
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        guard !assignments.isEmpty else { throw ValidationError("give at least one FIELD=VALUE (for example level=3)") }
        _ = try writes()
    }

    /// Splits `put`'s arguments (`arguments.first` is `put`) into what ArgumentParser
    /// parses — the options, the collection, the id and the first FIELD=VALUE — and every
    /// FIELD=VALUE in order, in one pass.
    ///
    /// *Why*: ArgumentParser collects a repeated argument in quadratic time (each value
    /// merges the input positions gathered so far and copies the array), so `put` with
    /// 60,000 fields took minutes. The parser still sees one assignment, so its usage
    /// errors and `--help` are as before; an argument starting with `-` before `--` stays
    /// with the parser, so an unknown option is still refused by it.
    static func splitAssignments(_ arguments: [String]) -> (parsed: [String], assignments: [String]) {
        var parsed: [String] = []
        var assignments: [String] = []
        var positionals = 0
        var terminated = false
        var index = arguments.startIndex
        if index < arguments.endIndex {
            parsed.append(arguments[index])  // the subcommand's name
            index += 1
        }
        while index < arguments.endIndex {
            let argument = arguments[index]
            index += 1
            if !terminated, argument == "--" {
                terminated = true
                parsed.append(argument)
            } else if !terminated, argument.hasPrefix("-"), argument != "-" {
                parsed.append(argument)
                if argument == "--store" || argument == "--key-file", index < arguments.endIndex {
                    parsed.append(arguments[index])  // the option's value
                    index += 1
                }
            } else {
                positionals += 1
                if positionals <= 3 { parsed.append(argument) }
                if positionals >= 3 { assignments.append(argument) }
            }
        }
        return (parsed, assignments)
    }

    func writes() throws -> [String: FieldWrite] {
        var fields: [String: FieldWrite] = [:]
        for argument in assignments {
            let (field, write) = try ValueParser.assignment(argument)
            guard fields[field] == nil else { throw ValidationError("field \(field) is given twice") }
            fields[field] = write
        }
        return fields
    }

    func run() throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        try store.put(ref, try writes())
        let fields = try store.record(ref) ?? []
        options.emit(.record(ref, fields), Format.record(ref, fields))
    }
}

struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print a record.")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        guard let fields = try store.record(ref) else {
            throw ConcordError(.notFound, "no record \(ref) in \(store.path): `concord list \(collection)` lists the records")
        }
        // Where each file field's content is: {"files": {FIELD: "local"|"notLocal"|"unavailable"}}.
        var states: [(String, FileState)] = []
        for field in fields {
            if case let .file(file) = field.value { states.append((field.name, try store.fileState(file.hash))) }
        }
        var document = JSON.record(ref, fields)
        var text = Format.record(ref, fields)
        if !states.isEmpty, case let .object(members) = document {
            let files: [(String, JSON)] = states.map { state in (state.0, JSON.string(state.1.name)) }
            document = .object(members + [("files", JSON.object(files))])
            for state in states { text += "\n  \(state.0): content \(state.1.name)" }
        }
        options.emit(document, text)
    }
}

struct ListRecords: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "Print the records of a collection, sorted by id.")

    @Argument(help: "The collection.") var collection: String
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let output = Format.records(collection, try store.records(in: collection), empty: "no records in \(collection)")
        options.emit(output.json, output.text)
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Delete a record (a concurrent update keeps it alive; see `conflicts`).")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        guard try store.record(ref) != nil else {
            throw ConcordError(.notFound, "no record \(ref) in \(store.path): nothing was deleted")
        }
        try store.delete(ref)
        options.emit(.object([("collection", .string(collection)), ("id", .string(id)), ("deleted", .bool(true))]), "deleted \(ref)")
    }
}

struct Add: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Add an element to a set field.")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The set field.") var field: String
    @Argument(help: "The element (JSON, or a bare word for a string).") var value: String
    @OptionGroup var options: GlobalOptions

    func validate() throws { _ = try ValueParser.scalar(value, field: field) }

    func run() throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        try store.add(ref, field, try ValueParser.scalar(value, field: field))
        let fields = try store.record(ref) ?? []
        options.emit(.record(ref, fields), Format.record(ref, fields))
    }
}

struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Remove an element from a set field (a concurrent add wins).")

    @Argument(help: "The collection.") var collection: String
    @Argument(help: "The record id.") var id: String
    @Argument(help: "The set field.") var field: String
    @Argument(help: "The element (JSON, or a bare word for a string).") var value: String
    @OptionGroup var options: GlobalOptions

    func validate() throws { _ = try ValueParser.scalar(value, field: field) }

    func run() throws {
        let ref = try recordRef(collection, id)
        let store = try options.openStore()
        guard try store.record(ref) != nil else {
            throw ConcordError(.notFound, "no record \(ref) in \(store.path): nothing was removed")
        }
        try store.remove(ref, field, try ValueParser.scalar(value, field: field))
        let fields = try store.record(ref) ?? []
        options.emit(.record(ref, fields), Format.record(ref, fields))
    }
}

struct Dump: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the canonical dump: byte-identical on converged replicas.",
        discussion: "The output is the same JSON with or without --json.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        print(try store.canonicalDump())
    }
}
