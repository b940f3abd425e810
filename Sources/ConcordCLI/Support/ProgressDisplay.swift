import ConcordSync
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows a sync's progress: a bar redrawn on stderr when stderr is a terminal, else one
/// plain line on stdout each time the sync enters a new phase. Nothing with `--json`.
final class ProgressDisplay: Sendable {
    enum Style { case bar, lines }

    private let style: Style
    private let lastPhase = Mutex<SyncProgress.Phase?>(nil)
    private let drawn = Mutex(false)

    init(style: Style) {
        self.style = style
    }

    /// The display for this process, or nil with `--json`.
    static func make(json: Bool) -> ProgressDisplay? {
        guard !json else { return nil }
        return ProgressDisplay(style: isatty(STDERR_FILENO) == 1 ? .bar : .lines)
    }

    func show(_ progress: SyncProgress) {
        guard progress.phase != .done else { return }
        switch style {
        case .lines:
            let isNew = lastPhase.withLock { last in
                defer { last = progress.phase }
                return last != progress.phase
            }
            guard isNew else { return }
            print("  \(Self.label(progress.phase))\(Self.total(progress))")
        case .bar:
            let width = 24
            let fraction = progress.objectsTotal.map { $0 > 0 ? min(1, Double(progress.objectsDone) / Double($0)) : 0 } ?? 0
            let filled = Int(fraction * Double(width))
            let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
            let counts = progress.objectsTotal.map { $0 > 0 ? " \(progress.objectsDone)/\($0)" : "" } ?? " \(progress.objectsDone)/?"
            let label = Self.label(progress.phase).padding(toLength: 15, withPad: " ", startingAt: 0)
            FileHandle.standardError.write(Data("\r\u{1B}[2K  \(label) [\(bar)]\(counts)".utf8))
            drawn.withLock { $0 = true }
        }
    }

    /// Clears the bar, if one was drawn.
    func finish() {
        if style == .bar, drawn.withLock({ $0 }) {
            FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
        }
    }

    /// A phase's object count for the plain lines: the total when known, "objects not
    /// counted yet" when the sync does not know it (``SyncProgress/objectsTotal`` is nil),
    /// nothing when there are none.
    static func total(_ progress: SyncProgress) -> String {
        guard let total = progress.objectsTotal else { return " (number of objects unknown)" }
        return total > 0 ? " (\(total) object\(total == 1 ? "" : "s"))" : ""
    }

    static func label(_ phase: SyncProgress.Phase) -> String {
        switch phase {
        case .listing: "listing"
        case .downloading: "downloading"
        case .applying: "applying"
        case .fetchingFiles: "fetching files"
        case .uploadingFiles: "uploading files"
        case .pushing: "pushing"
        case .done: "done"
        }
    }
}
