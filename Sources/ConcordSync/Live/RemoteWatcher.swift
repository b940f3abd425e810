import ConcordCore
import ConcordRemote

/// Something that learns of new heads on a remote without listing it — file-system
/// notifications on a folder — and says so, debounced: one signal per burst of changes.
///
/// ``AutoSync`` pulls at once on each signal, so a change another replica pushes appears
/// here within the watcher's debounce and one sync, while the pull interval only backs up
/// what notifications miss. A watcher is an optimisation, never the source of truth: a
/// missed or spurious signal costs a delay or one listing, never a write.
///
/// The platform part sits behind this protocol: ``RemoteWatch/watcher(for:ignoring:debounce:)``
/// picks ``InotifyFolderWatcher`` on Linux. On Apple platforms the same conformance belongs
/// in a new file beside it: an `FSEventStream` on the folder's `heads/`
/// (`kFSEventStreamCreateFlagFileEvents`, latency as the debounce), or an `NSFilePresenter`
/// whose `presentedSubitemDidChange(at:)` signals, for iCloud Drive folders where file
/// coordination is how other processes announce writes. Until then those platforms poll.
public protocol RemoteWatcher: Sendable {
    /// What it watches and how, for a status line: `the folder /srv/notes (inotify)`.
    var description: String { get }

    /// The signals, one per debounced burst of changes. Call once: there is one stream.
    /// It ends when ``stop()`` is called or when the watcher fails (the folder was deleted,
    /// the platform dropped the watch); the caller then relies on polling.
    func signals() -> AsyncStream<Void>

    /// Stops watching and ends the stream. Later calls do nothing.
    func stop()
}

/// How a replica learns of other replicas' changes.
public enum WatchPlan: Hashable, Sendable {
    /// File-system notifications, described (`the folder /srv/notes (inotify)`).
    case notifications(String)
    /// Polling, with the reason notifications are not used.
    case polling(reason: String)
}

/// Chooses how to watch a remote.
public enum RemoteWatch {
    /// The watcher for `remote`, or why there is none (and polling it is). Only a folder
    /// remote can be watched, on a platform with notifications (inotify on Linux), on a
    /// local file system: on a network or FUSE mount, notifications report only this
    /// machine's writes, so they are not trusted and the remote is polled.
    ///
    /// `ignoring` is this replica's id: its own heads signal nothing (it knows what it
    /// pushed). `debounce` is in milliseconds: the first change of a burst is signalled
    /// that long after it, together with every change in between.
    public static func watcher(
        for remote: any Remote, ignoring replica: ReplicaID? = nil, debounce: UInt64 = 20
    ) -> Result<any RemoteWatcher, WatchUnavailable> {
        guard let folder = remote as? FolderRemote else { return .failure(WatchUnavailable(reason: notAFolder)) }
        return watcher(folder: folder.root, ignoring: replica, debounce: debounce)
    }

    /// The watcher for the folder remote at `folder`, or why there is none.
    public static func watcher(
        folder: String, ignoring replica: ReplicaID? = nil, debounce: UInt64 = 20
    ) -> Result<any RemoteWatcher, WatchUnavailable> {
        #if canImport(Glibc)
        if let untrusted = FileSystemKind.untrustedKind(of: folder) {
            return .failure(WatchUnavailable(reason: "\(folder) is on a \(untrusted) file system, whose notifications miss other machines' writes"))
        }
        do {
            return .success(try InotifyFolderWatcher(folder: folder, ignoringPrefix: replica.map { "\($0)" }, debounce: debounce))
        } catch {
            return .failure(error)
        }
        #else
        return .failure(WatchUnavailable(reason: "file-system notifications are not built for this platform yet"))
        #endif
    }

    /// What ``watcher(folder:ignoring:debounce:)`` would use for a remote whose local folder
    /// is `folder` (nil: WebDAV, S3), without watching anything: for a status line.
    public static func plan(folder: String?) -> WatchPlan {
        guard let folder else { return .polling(reason: notAFolder) }
        switch watcher(folder: folder) {
        case let .success(watcher):
            watcher.stop()
            return .notifications(watcher.description)
        case let .failure(unavailable):
            return .polling(reason: unavailable.reason)
        }
    }

    static let notAFolder = "only a folder remote can be watched; WebDAV and S3 are polled"
}

/// Why a remote cannot be watched: it is polled instead.
public struct WatchUnavailable: Error, Hashable, Sendable {
    /// For people: `inotify_add_watch failed: No space left on device (raise fs.inotify.max_user_watches)`.
    public let reason: String

    public init(reason: String) {
        self.reason = reason
    }
}
