#if canImport(Glibc)
import Glibc
import Dispatch
import Synchronization

/// A ``RemoteWatcher`` of a folder remote on Linux: inotify on the folder's `heads/`.
///
/// Every push ends by writing a head (`heads/<replica>-<seq>`, a temporary file renamed
/// into place, or a sync client's plain write), so a new head is the one event that means
/// "pull". The watcher signals for files created, moved in or written in `heads/`,
/// skipping names that start with `.` (temporaries, `.DS_Store`) and this replica's own
/// heads; a head deleted or moved away (a replica's older head, once its newer one is up)
/// brings nothing to pull. It also watches the folder itself, so a `heads/` created later (a new store) or
/// deleted and made again is watched once it appears; and a queue overflow signals too
/// (some change, unknown which). Signals are debounced: the first event of a burst is
/// signalled `debounce` ms later, with everything that came meanwhile.
///
/// Events are read on a dispatch source of the inotify descriptor (epoll), never a thread
/// of its own; ``stop()`` cancels it and closes the descriptor. A read that fails for any
/// reason but "no more events" ends the stream: the caller polls from then on.
public final class InotifyFolderWatcher: RemoteWatcher {
    public let description: String
    private let folder: String
    private let ignoringPrefix: String?
    private let debounce: UInt64
    private let descriptor: Int32
    private let queue = DispatchQueue(label: "concord.inotify")
    private let stream: AsyncStream<Void>
    private let continuation: AsyncStream<Void>.Continuation
    private let state = Mutex(State())
    private let source: ThreadSafeSource

    /// A dispatch source: an object Dispatch documents as safe to resume and cancel from
    /// any thread, which its Swift overlay does not mark `Sendable` yet.
    private struct ThreadSafeSource: @unchecked Sendable {
        let source: any DispatchSourceRead
    }

    private struct State {
        var headsWatch: Int32 = -1
        var flushPlanned = false
        var stopped = false
    }

    // inotify(7)'s flags, spelled here: Glibc exports some as macros Swift does not import.
    private static let closeOnExec: Int32 = 0o2000000
    private static let nonBlocking: Int32 = 0o4000
    private static let closeWrite: UInt32 = 0x8, movedTo: UInt32 = 0x80
    private static let create: UInt32 = 0x100, deleteSelf: UInt32 = 0x400
    private static let moveSelf: UInt32 = 0x800, overflow: UInt32 = 0x4000, ignored: UInt32 = 0x8000
    private static let onlyFolders: UInt32 = 0x0100_0000
    private static let headsMask = closeWrite | movedTo | create | deleteSelf | moveSelf
    private static let folderMask = create | movedTo | onlyFolders

    /// Watches `folder`'s `heads/`; names starting with `ignoringPrefix` (this replica's id)
    /// signal nothing. Throws when inotify cannot watch the folder (it is missing, or the
    /// system's limit of watches or instances is reached).
    public init(folder: String, ignoringPrefix: String? = nil, debounce: UInt64 = 20) throws(WatchUnavailable) {
        self.folder = folder
        self.ignoringPrefix = ignoringPrefix
        self.debounce = debounce
        description = "the folder \(folder) (inotify)"
        let descriptor = inotify_init1(Self.nonBlocking | Self.closeOnExec)
        guard descriptor >= 0 else {
            throw WatchUnavailable(reason: "inotify_init1 failed: \(Self.errorText()) (raise fs.inotify.max_user_instances)")
        }
        guard inotify_add_watch(descriptor, folder, Self.folderMask) >= 0 else {
            let reason = "inotify cannot watch \(folder): \(Self.errorText())"
            close(descriptor)
            throw WatchUnavailable(reason: reason)
        }
        self.descriptor = descriptor
        (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let source = DispatchSource.makeReadSource(fileDescriptor: descriptor, queue: queue)
        self.source = ThreadSafeSource(source: source)
        _ = watchHeads()
        source.setEventHandler { [weak self] in self?.drain() }
        source.setCancelHandler { close(descriptor) }
        source.resume()
    }

    deinit {
        stop()
    }

    public func signals() -> AsyncStream<Void> {
        stream
    }

    public func stop() {
        let first = state.withLock { state in
            defer { state.stopped = true }
            return !state.stopped
        }
        guard first else { return }
        source.source.cancel()
        continuation.finish()
    }

    /// Adds the watch of `heads/` if it is not there; whether it is there now.
    private func watchHeads() -> Bool {
        state.withLock { state in
            if state.headsWatch >= 0 { return true }
            state.headsWatch = inotify_add_watch(descriptor, folder + "/heads", Self.headsMask)
            return state.headsWatch >= 0
        }
    }

    /// Reads every pending event; plans one signal if any of them matters.
    private func drain() {
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        var relevant = false
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { break }
                return stop()
            }
            if count == 0 { break }
            relevant = parse(buffer[..<count]) || relevant
        }
        if relevant { planSignal() }
    }

    /// Whether the events in `bytes` (whole `struct inotify_event`s) call for a pull.
    private func parse(_ bytes: ArraySlice<UInt8>) -> Bool {
        var relevant = false
        var offset = bytes.startIndex
        while offset + 16 <= bytes.endIndex {
            func word(_ at: Int) -> UInt32 {
                (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[offset + at + $1]) << (8 * UInt32($1)) }
            }
            let watch = Int32(bitPattern: word(0)), mask = word(4), length = Int(word(12))
            let nameBytes = bytes[(offset + 16)..<min(offset + 16 + length, bytes.endIndex)].prefix { $0 != 0 }
            let name = String(decoding: nameBytes, as: UTF8.self)
            offset += 16 + length
            if mask & Self.overflow != 0 {
                relevant = true
                continue
            }
            let headsWatch = state.withLock { $0.headsWatch }
            if watch == headsWatch {
                if mask & (Self.ignored | Self.deleteSelf | Self.moveSelf) != 0 {
                    // heads/ went away: watch it again when it comes back (the folder's watch says).
                    state.withLock { if $0.headsWatch == watch { $0.headsWatch = -1 } }
                    continue
                }
                if name.hasPrefix(".") { continue }
                if let ignoringPrefix, name.hasPrefix(ignoringPrefix) { continue }
                relevant = true
            } else if name == "heads" {
                // heads/ appeared: watch it, and pull what it may already hold.
                if watchHeads() { relevant = true }
            }
        }
        return relevant
    }

    private func planSignal() {
        let plan = state.withLock { state -> Bool in
            guard !state.flushPlanned, !state.stopped else { return false }
            state.flushPlanned = true
            return true
        }
        guard plan else { return }
        queue.asyncAfter(deadline: .now() + .milliseconds(Int(min(debounce, 60_000)))) { [weak self] in
            guard let self else { return }
            self.state.withLock { $0.flushPlanned = false }
            self.continuation.yield(())
        }
    }

    private static func errorText() -> String {
        String(cString: strerror(errno))
    }
}

/// File systems whose notifications report only this machine's writes.
enum FileSystemKind {
    /// Network file systems and FUSE mounts (sshfs, rclone, many sync clients' virtual
    /// drives): their notifications, when there are any, are of local writes only.
    private static let untrusted = ["nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "afs", "ceph", "coda", "ncpfs", "fuse"]

    /// The type of `folder`'s file system if its notifications are not trusted: the mount
    /// in `/proc/self/mounts` with the longest mount point that contains the folder.
    static func untrustedKind(of folder: String) -> String? {
        guard let file = fopen("/proc/self/mounts", "r") else { return nil }
        defer { fclose(file) }
        var resolved = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let path = realpath(folder, &resolved) != nil
            ? String(decoding: resolved.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : folder
        var best: (point: String, type: String)?
        var line: UnsafeMutablePointer<CChar>?
        var capacity = 0
        defer { free(line) }
        while getline(&line, &capacity, file) > 0, let line {
            let fields = String(cString: line).split(separator: " ")
            guard fields.count >= 3 else { continue }
            let point = String(fields[1].replacing("\\040", with: " "))
            let contains = point == "/" || path == point || path.hasPrefix(point + "/")
            if contains && point.count >= (best?.point.count ?? -1) { best = (point, String(fields[2])) }
        }
        guard let type = best?.type else { return nil }
        let family = type.split(separator: ".").first.map(String.init) ?? type  // fuse.sshfs
        return untrusted.contains(family) ? type : nil
    }
}
#endif
