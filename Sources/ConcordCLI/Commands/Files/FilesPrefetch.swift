import ArgumentParser
import Concord
import Foundation

/// `concord files prefetch`: fetches now what the prefetch policy wants (README, "Large
/// files and small devices").
struct FilesPrefetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "prefetch",
        abstract: "Fetch now the pinned file contents, and those smaller than the prefetch threshold, that are not local.",
        discussion: """
            SIZE is a number of bytes, or a number followed by KiB, MiB or GiB; without --below, the threshold set with \\
            `concord files policy … --prefetch-below SIZE`. Contents are fetched smallest first, a few at a time, and kept \\
            as each arrives: a run interrupted goes on where it stopped. The run stops before a content that would take the \\
            cache past its budget, and says so.
            """)

    @Option(name: .long, help: ArgumentHelp("Prefetch the contents smaller than this.", valueName: "size")) var below: String?
    @OptionGroup var options: GlobalOptions

    func validate() throws {
        if let below { _ = try ByteSize.parse(below) }
    }

    func run() async throws {
        let store = try options.openStore()
        let below = try below.map(ByteSize.parse)
        let engine = try await RemoteConnection.open(store, options: options).engine
        let display = ProgressDisplay.make(json: options.json)
        let report = try await engine.prefetchFiles(below: below) { step in
            display?.show(SyncProgress(phase: .fetchingFiles, objectsDone: step.filesDone, objectsTotal: step.filesTotal, bytesDone: step.bytesDone, bytesTotal: step.bytesTotal))
        }
        display?.finish()
        for reason in report.rejected { FileHandle.standardError.write(Data("concord: rejected \(Entry.oneLine(reason))\n".utf8)) }
        options.emit(Self.document(report), Self.text(report))
    }

    /// `{"filesWanted", "bytesWanted", "filesFetched", "bytesFetched", "filesUnavailable",
    /// "stoppedAtBudget", "filesLeft", "bytesLeft"}`.
    static func document(_ report: FilePrefetchReport) -> JSON {
        .object([
            ("filesWanted", .int(Int64(report.filesWanted))), ("bytesWanted", .uint(report.bytesWanted)),
            ("filesFetched", .int(Int64(report.filesFetched))), ("bytesFetched", .uint(report.bytesFetched)),
            ("filesUnavailable", .int(Int64(report.unavailable.count + report.rejected.count))),
            ("stoppedAtBudget", .bool(report.stoppedAtBudget)),
            ("filesLeft", .int(Int64(report.filesLeft))), ("bytesLeft", .uint(report.bytesLeft)),
        ])
    }

    static func text(_ report: FilePrefetchReport) -> String {
        let plural = report.filesWanted == 1 ? "" : "s"
        var text = "prefetched \(report.filesFetched) of \(report.filesWanted) file\(plural) (\(ByteSize.text(report.bytesFetched)) of \(ByteSize.text(report.bytesWanted)))"
        let missing = report.unavailable.count + report.rejected.count
        if missing > 0 { text += "; \(missing) unavailable on the remote" }
        if report.stoppedAtBudget {
            text += "; stopped at the budget: \(report.filesLeft) file\(report.filesLeft == 1 ? "" : "s") (\(ByteSize.text(report.bytesLeft))) left — raise it with `concord files policy on-demand --budget SIZE` or evict"
        }
        return text
    }
}
