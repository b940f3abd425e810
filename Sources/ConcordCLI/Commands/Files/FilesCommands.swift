import ArgumentParser
import Concord
import Foundation

/// `concord files`: the file policy, pins, eviction and what is local (README, "Large files
/// and small devices").
struct FilesCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "files",
        abstract: "Choose when file contents are fetched, pin what stays, evict the rest, see what is local.",
        subcommands: [FilesPolicy.self, FilesPin.self, FilesUnpin.self, FilesEvict.self, FilesPrefetchCommand.self, FilesStatus.self])
}

struct FilesPolicy: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "policy",
        abstract: "Fetch file contents eagerly (every file with its record) or on demand (when read), with a byte budget for the cache.",
        discussion: """
            SIZE is a number of bytes, or a number followed by KiB, MiB or GiB (e.g. 100MiB). The budget needs on-demand \
            (for the store, or a collection or field) and is the store's. --collection (and --field) set the policy of one \
            declared collection (or file field) only. --prefetch-below SIZE makes every sync fetch the contents smaller \
            than SIZE ahead of reading (0: none).
            """)

    @Argument(help: ArgumentHelp("on-demand or eager.", valueName: "policy")) var mode: String
    @Option(name: .long, help: ArgumentHelp("The most bytes of evictable contents to keep (on-demand only).", valueName: "size")) var budget: String?
    @Option(name: .long, help: ArgumentHelp("Set the policy of this declared collection only.", valueName: "collection")) var collection: String?
    @Option(name: .long, help: ArgumentHelp("With --collection: of this file field only.", valueName: "field")) var field: String?
    @Option(name: .customLong("prefetch-below"), help: ArgumentHelp("Prefetch contents smaller than this (0: none).", valueName: "size"))
    var prefetchBelow: String?
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        guard FilePolicy.Mode(rawValue: mode) != nil else {
            throw ValidationError("the policy is on-demand or eager, not \"\(mode)\"")
        }
        if field != nil, collection == nil { throw ValidationError("--field names a field of a --collection") }
        if let prefetchBelow { _ = try ByteSize.parse(prefetchBelow) }
        if let budget {
            _ = try ByteSize.parse(budget)
            guard mode == FilePolicy.Mode.onDemand.rawValue || collection != nil else {
                throw ValidationError("--budget needs on-demand: an eager replica keeps every file")
            }
        }
    }

    func run() throws {
        let store = try options.openStore()
        let mode = FilePolicy.Mode(rawValue: mode)!
        let budget = try budget.map(ByteSize.parse)
        var text: String
        if let collection {
            try store.setFilePolicy(FilePolicyScope(collection, field: field, mode: mode))
            text = "files of \(collection)\(field.map { " " + $0 } ?? ""): \(mode.rawValue)"
            if let budget {
                var policy = try store.filePolicy()
                policy.budget = budget
                try store.setFilePolicy(policy)
                text += "; store budget \(ByteSize.text(budget))"
            }
        } else {
            let policy = FilePolicy(mode, budget: budget)
            try store.setFilePolicy(policy)
            text = "files: \(policy.mode.rawValue)"
            if let budget = policy.budget { text += ", budget \(ByteSize.text(budget))" }
        }
        if let prefetchBelow {
            let below = try ByteSize.parse(prefetchBelow)
            try store.setFilePrefetch(FilePrefetch(below: below == 0 ? nil : below))
            text += below == 0 ? "; no prefetch by size" : "; prefetch below \(ByteSize.text(below))"
        }
        let eviction = try store.evictToBudget()
        if let eviction, !eviction.evicted.isEmpty {
            text += "; evicted \(eviction.evicted.count) (\(ByteSize.text(eviction.bytesFreed)))"
        }
        options.emit(FilesStatus.policyDocument(try store.fileCacheStatus()), text)
    }
}

/// Arguments naming a pin: a collection, a record, or one field of a record.
struct PinArguments: ParsableArguments {
    @Argument(help: "The collection.") var collection: String
    @Argument(help: "A record id (default: every record).") var id: String?
    @Argument(help: "A file field (default: every file field).") var field: String?

    func pin() throws -> FilePin {
        _ = try recordRef(collection, id ?? "x")
        return try FilePin(collection, id: id, field: field)
    }

    static func document(_ pin: FilePin) -> JSON {
        var members: [(String, JSON)] = [("collection", .string(pin.collection))]
        if let id = pin.id { members.append(("id", .string(id))) }
        if let field = pin.field { members.append(("field", .string(field))) }
        return .object(members)
    }

    static func text(_ pin: FilePin) -> String {
        var parts: [String] = [pin.collection]
        if let id = pin.id { parts.append(id) }
        if let field = pin.field { parts.append(field) }
        return parts.joined(separator: " ")
    }
}

struct FilesPin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin", abstract: "Keep a collection's, a record's or a field's file contents on this device (fetched by the next sync, never evicted).")

    @OptionGroup var pin: PinArguments
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let pin = try pin.pin()
        try store.pin(pin)
        options.emit(.object([("pinned", PinArguments.document(pin))]), "pinned \(PinArguments.text(pin)); `concord sync` fetches what is not local")
    }
}

struct FilesUnpin: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "unpin", abstract: "Remove a pin: its contents become evictable.")

    @OptionGroup var pin: PinArguments
    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let pin = try pin.pin()
        guard try store.unpin(pin) else {
            throw ConcordError(.notFound, "no pin \(PinArguments.text(pin)): `concord files status` lists the pins")
        }
        options.emit(.object([("unpinned", PinArguments.document(pin))]), "unpinned \(PinArguments.text(pin))")
    }
}

struct FilesEvict: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Remove every evictable file content from this device now.",
        discussion: "Never a pinned content, one a fork or history version holds, or one this replica wrote while anything is not pushed. Evicted contents are fetched again when read.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let eviction = try store.evictFiles(toFit: 0)
        let count = eviction.evicted.count
        let document: JSON = .object([("evicted", .int(Int64(count))), ("bytesFreed", .uint(eviction.bytesFreed)), ("bytesLeft", .uint(eviction.bytesLeft))])
        let plural = count == 1 ? "" : "s"
        options.emit(document, "evicted \(count) file\(plural) (\(ByteSize.text(eviction.bytesFreed))); \(ByteSize.text(eviction.bytesLeft)) kept")
    }
}

struct FilesStatus: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "status", abstract: "The file policy, bytes cached, pending upload and not local, and the pins.")

    @OptionGroup var options: GlobalOptions

    func run() throws {
        let store = try options.openStore()
        let status = try store.fileCacheStatus()
        options.emit(Self.document(status), Self.lines(status).joined(separator: "\n"))
    }

    /// `{"policy", "budget", "prefetchBelow", "scopes": [{"collection", "field"?, "policy"}]}`.
    static func policyDocument(_ status: FileCacheStatus) -> JSON {
        .object(policyMembers(status))
    }

    static func policyMembers(_ status: FileCacheStatus) -> [(String, JSON)] {
        let scopes: [JSON] = status.scopes.map { scope in
            var members: [(String, JSON)] = [("collection", .string(scope.collection))]
            if let field = scope.field { members.append(("field", .string(field))) }
            members.append(("policy", .string(scope.mode.rawValue)))
            return .object(members)
        }
        return [("policy", .string(status.policy.mode.rawValue)), ("budget", .uint(status.policy.budget)),
                ("prefetchBelow", .uint(status.prefetch.below)), ("scopes", .array(scopes))]
    }

    /// `{"policy", "budget", "prefetchBelow", "scopes", "bytesCached", "filesCached",
    /// "bytesPinned", "bytesPendingUpload", "filesReferenced", "filesNotLocal",
    /// "bytesNotLocal", "filesUnavailable", "pins"}`.
    static func document(_ status: FileCacheStatus) -> JSON {
        var members = policyMembers(status)
        members.append(("bytesCached", .uint(status.bytesCached)))
        members.append(("filesCached", .int(Int64(status.filesCached))))
        members.append(("bytesPinned", .uint(status.bytesPinned)))
        members.append(("bytesPendingUpload", .uint(status.bytesPendingUpload)))
        members.append(("filesReferenced", .int(Int64(status.filesReferenced))))
        members.append(("filesNotLocal", .int(Int64(status.filesNotLocal))))
        members.append(("bytesNotLocal", .uint(status.bytesNotLocal)))
        members.append(("filesUnavailable", .int(Int64(status.filesUnavailable))))
        members.append(("pins", .array(status.pins.map(PinArguments.document))))
        return .object(members)
    }

    static func lines(_ status: FileCacheStatus) -> [String] {
        var policy = "files: \(status.policy.mode.rawValue)"
        if let budget = status.policy.budget { policy += ", budget \(ByteSize.text(budget))" }
        if let below = status.prefetch.below { policy += ", prefetch below \(ByteSize.text(below))" }
        for scope in status.scopes {
            policy += "; \(scope.collection)\(scope.field.map { " " + $0 } ?? ""): \(scope.mode.rawValue)"
        }
        let plural = status.filesCached == 1 ? "" : "s"
        var notLocal = "  not local: \(status.filesNotLocal) of \(status.filesReferenced) referenced, \(ByteSize.text(status.bytesNotLocal))"
        if status.filesUnavailable > 0 { notLocal += "; \(status.filesUnavailable) unavailable on the remote" }
        let pins: [String] = status.pins.map(PinArguments.text)
        return [
            policy,
            "  cached: \(status.filesCached) file\(plural), \(ByteSize.text(status.bytesCached)) (pinned \(ByteSize.text(status.bytesPinned)))",
            "  pending upload: \(ByteSize.text(status.bytesPendingUpload))",
            notLocal,
            "  pins: " + (pins.isEmpty ? "none" : pins.joined(separator: ", ")),
        ]
    }
}

/// A byte count as `concord files policy --budget` takes it: digits, optionally followed by
/// `KiB`, `MiB` or `GiB` (powers of 1024; a space between is allowed).
enum ByteSize {
    static func parse(_ text: String) throws -> UInt64 {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        let units: [(String, UInt64)] = [("KiB", 1 << 10), ("MiB", 1 << 20), ("GiB", 1 << 30), ("B", 1)]
        var digits = Substring(trimmed)
        var multiplier: UInt64 = 1
        for (unit, factor) in units where trimmed.hasSuffix(unit) {
            digits = trimmed.dropLast(unit.count)
            multiplier = factor
            break
        }
        let number = digits.trimmingCharacters(in: .whitespaces)
        guard !number.isEmpty, number.allSatisfy(\.isASCII), number.allSatisfy(\.isNumber), let value = UInt64(number) else {
            throw ValidationError("\"\(text)\" is not a size: give bytes (1048576) or a number with KiB, MiB or GiB (100MiB)")
        }
        let (bytes, overflow) = value.multipliedReportingOverflow(by: multiplier)
        guard !overflow, bytes <= UInt64(Int64.max) else { throw ValidationError("\"\(text)\" is too large a size (at most 2^63 − 1 bytes)") }
        return bytes
    }

    static func text(_ bytes: UInt64) -> String {
        if bytes >= 1 << 30 { return String(format: "%.1f GiB", Double(bytes) / Double(1 << 30)) }
        if bytes >= 1 << 20 { return String(format: "%.1f MiB", Double(bytes) / Double(1 << 20)) }
        if bytes >= 1 << 10 { return String(format: "%.1f KiB", Double(bytes) / Double(1 << 10)) }
        return "\(bytes) bytes"
    }
}
