import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every remote object: it decrypts, parses, and no batch or file is missing.",
        discussion: """
            Lists the remote, opens every head, batch and snapshot with its key, decrypts every \
            file and checks its hash, and reports damaged (torn, modified, swapped) objects, gaps \
            in a replica's batch sequence that no snapshot covers, missing heads, batches no head \
            announces yet, heads whose delete was lost, and files that batches or snapshots \
            reference but the remote lacks. Notices (they do not fail the check): files nothing \
            references, replicas silent past the retention period, clocks running ahead. \
            --repair re-uploads what this replica can: its own batches (the exact bytes it \
            sealed), its head, and any file it holds locally, deletes its own superseded heads, \
            and reads each repair back. Objects only another replica holds are reported with \
            where to repair them. Exits 1 while problems remain.
            """)

    @Flag(name: .long, help: "Re-upload this replica's damaged or missing objects.") var repair = false
    @OptionGroup var options: GlobalOptions

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let report = try await connection.engine.doctor(repair: repair)

        let counts = [
            ("blobs", report.objects.blobs), ("batches", report.objects.batches), ("heads", report.objects.heads),
            ("manifest", report.objects.manifest), ("snapshots", report.objects.snapshots),
        ]
        let problems = report.findings.filter(\.isProblem)
        let notices = report.findings.filter { !$0.isProblem }
        let open = report.problems
        let repaired = report.findings.filter(\.repaired)
        let ignored = connection.location.folder.map(Self.foreignFiles) ?? []
        let notDone = [
            "damaged objects are never deleted: they stay until their writer replaces them",
            "objects only another replica holds cannot be repaired from here",
            "a damaged snapshot is not rewritten: its writer's next snapshot supersedes it",
        ]
        let total = report.objects.total
        let summary = "checked \(total) object\(total == 1 ? "" : "s") in \(connection.location.display): "
            + counts.map { "\($0.1) \($0.0)" }.joined(separator: ", ")
        var tally = "  \(report.healthy) healthy, \(problems.count) problem\(problems.count == 1 ? "" : "s")"
        if !notices.isEmpty { tally += ", \(notices.count) notice\(notices.count == 1 ? "" : "s")" }
        if repair { tally += ", \(repaired.count) repaired" }
        var lines = [summary, tally]
        // A replica removed from the store reads what it had, and nothing sealed since.
        let removal = try SyncEngine.removal(in: store)
        if let removal { lines.append("  removed: \(removal)") }
        for finding in report.findings {
            lines.append("  \(finding.repaired ? "repaired" : finding.kind.name): \(finding.path.isEmpty ? "(the whole remote)" : finding.path)")
            lines.append("    \(Entry.oneLine(finding.message))")
            lines.append("    \(Entry.oneLine(Self.note(finding)))")
        }
        if !ignored.isEmpty {
            lines.append("  ignored \(ignored.count) file\(ignored.count == 1 ? "" : "s") the store did not write (sync-client copies, temporaries): \(ignored.prefix(3).joined(separator: ", "))\(ignored.count > 3 ? ", …" : "")")
        }
        lines.append(open.isEmpty ? "  the remote is healthy" : "  \(open.count) problem\(open.count == 1 ? " remains" : "s remain")")
        for item in notDone { lines.append("  not done: \(item)") }
        options.emit(
            .object([
                ("folder", .string(connection.location.folder)), ("remote", .string(connection.location.url)),
                // "deltas" repeats "batches" for scripts written before the count had its name.
                ("objects", .object(counts.map { ($0.0, .int(Int64($0.1))) } + [("deltas", .int(Int64(report.objects.batches))), ("total", .int(Int64(total)))])),
                ("healthy", .int(Int64(report.healthy))),
                ("problems", .array(report.findings.map { finding in
                    .object([
                        ("path", .string(finding.path)), ("kind", .string(finding.kind.name)),
                        ("severity", .string(finding.isProblem ? "problem" : "notice")),
                        ("replica", .string(finding.replica?.description)), ("message", .string(finding.message)),
                        ("action", .string(finding.action)), ("repaired", .bool(finding.repaired)),
                        ("note", .string(Self.note(finding))),
                    ])
                })),
                ("ignored", .array(ignored.map { .string($0) })),
                ("ok", .bool(report.isHealthy && removal == nil)), ("removed", .string(removal)),
                ("notDone", .array(notDone.map { .string($0) })),
            ]),
            lines.joined(separator: "\n"))
        if !report.isHealthy || removal != nil { throw ExitCode(ExitStatus.failure) }
    }

    /// What was done about a finding, or what to do.
    static func note(_ finding: DoctorFinding) -> String {
        finding.repair ?? finding.action
    }

    /// Files in the remote folder that are not the store's objects or folders: sync-client
    /// conflict copies, temporaries, a person's own files. Listings ignore them. (WebDAV and
    /// S3 remotes: listings return only the layout's names, and nothing else is reported.)
    static func foreignFiles(in folder: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return [] }
        var found: [String] = []
        while let next = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: folder + "/" + next, isDirectory: &isFolder)
            if isFolder.boolValue {
                guard !RemoteLayout.isStoreFolder(next) else { continue }
                walker.skipDescendants()
                if !isInNamedStore(next) { found.append(next + "/") }
            } else if RemoteLayout.parse(next) == nil && !isInNamedStore(next) {
                found.append(next)
            }
        }
        return found.sorted()
    }

    /// Whether `path` lies inside a named store's folder, `stores/<store id>/…`: that
    /// store's own, which its own doctor examines.
    static func isInNamedStore(_ path: String) -> Bool {
        let components = path.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false)
        return components.count == 3 && components[0] == RemoteLayout.storesFolder && RemoteLayout.isStoreID(components[1])
    }
}
