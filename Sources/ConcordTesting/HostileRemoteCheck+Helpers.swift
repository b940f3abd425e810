import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// How the checks call the remote (with a watchdog), plant and unplant, and describe
/// what they saw.
extension HostileRemoteCheck.Checker {
    // MARK: Helpers

    mutating func expectUnreadable(
        _ context: String, _ what: String, naming path: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?
    ) async {
        let outcome = await call("\(context): \(what)", body)
        switch (expect.unreadable, outcome) {
        case (.unreadableObject, .threw(let error)) where error.code == .unreadableObject, (.absentOrError, .threw(let error)):
            if !error.message.contains(path) { issues.append("\(context): the \(error.code) message of \(what) does not name the object: \(error.message)") }
        case (.absentOrError, .returned(nil)):
            break
        case (.unreadableObject, _):
            issues.append("\(context): \(what) \(outcome); expected unreadableObject, promptly")
        case (.absentOrError, _):
            issues.append("\(context): \(what) \(outcome); expected nothing or a typed error, promptly")
        }
    }

    mutating func expectSkipped(_ context: String, _ path: String) async {
        let remote = remote
        let listed = await call("\(context): list(prefix: \"\")") { () async throws(ConcordError) -> String? in
            Self.paths(try await remote.list(prefix: ""))
        }
        switch listed {
        case .returned(nil):
            break
        case let .returned(paths?) where !(expect.listingMayNameNonObjects && paths == path):
            issues.append("\(context): list(prefix: \"\") returned [\(paths)]; only regular files are objects")
        case .returned:
            break
        case let .threw(error) where !expect.listingMayFail:
            issues.append("\(context): list(prefix: \"\") threw \(error); it must skip what is not a file and list the rest")
        case .threw:
            break
        case .hung:
            issues.append("\(context): list(prefix: \"\") hung")
        }
    }

    /// Runs `body` on its own task and gives up waiting after ``hangAfter`` seconds: a
    /// call blocked in the kernel (a FIFO's open) cannot be cancelled, but it need not
    /// block the check. An error of more than one line is an issue (`what` names the call).
    mutating func call(_ what: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?) async -> Outcome {
        let seconds = hangAfter
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<Outcome, Never>) in
            let once = OneShot(continuation)
            Task.detached {
                do throws(ConcordError) { once.finish(.returned(try await body())) } catch { once.finish(.threw(error)) }
            }
            Task.detached {
                try? await Task.sleep(nanoseconds: seconds * 1_000_000_000)
                once.finish(.hung)
            }
        }
        if case let .threw(error) = outcome, error.message.isEmpty || error.message.contains(where: \.isNewline) {
            issues.append("\(what) threw an error that is not one line: \(error.message.debugDescription)")
        }
        return outcome
    }

    /// ``call(_:_:)`` whose only wrong outcome is a hang (a put or delete next to something
    /// planted may succeed or fail).
    mutating func prompt(_ what: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?) async -> Outcome {
        let outcome = await call(what, body)
        if case .hung = outcome { issues.append("\(what) hung") }
        return outcome
    }

    /// ``call(_:_:)`` and how much the process's peak memory grew meanwhile.
    mutating func measured(_ what: String, _ body: @escaping @Sendable () async throws(ConcordError) -> String?) async -> (Outcome, UInt64) {
        let peak = Self.peakMemory()
        let outcome = await call(what, body)
        let after = Self.peakMemory()
        return (outcome, after > peak ? after - peak : 0)
    }

    /// Plants with `body`; false (and a note of why) when the storage cannot hold it.
    mutating func plant(_ what: String, _ body: (S, String) async throws -> Void, _ path: String) async -> Bool {
        do {
            try await body(storage, path)
            return true
        } catch let error as HostileStorageNotApplicable {
            notApplicable.append(NotApplicable(part: what, reason: error.reason))
            return false
        } catch {
            issues.append("could not plant \(what): \(error)")
            return false
        }
    }

    func unplant(_ path: String) async {
        try? await storage.remove(path)
    }

    /// Empties the area outside the root and fills it with `files`.
    mutating func prepareOutside(_ files: [String: [UInt8]]) async -> Bool {
        do {
            try await storage.fillOutside(files)
            return true
        } catch {
            issues.append("could not prepare the area outside the root (\(storage.outside)): \(error)")
            return false
        }
    }

    /// Everything outside the root with its bytes; nil (and an issue) if it cannot be read.
    mutating func outsideNow() async -> [String: [UInt8]]? {
        do {
            return try await storage.outsideContents()
        } catch {
            issues.append("could not read the area outside the root (\(storage.outside)): \(error)")
            return nil
        }
    }

    static func describe(_ contents: [String: [UInt8]]) -> String {
        "[" + contents.keys.sorted().map { "\($0) (\(contents[$0]!.count) bytes)" }.joined(separator: ", ") + "]"
    }

    static func show(_ bytes: [UInt8]?) -> String? {
        bytes.map { "\($0.count) bytes" }
    }

    /// The listed paths, sorted, joined; nil for none.
    static func paths(_ objects: [RemoteObject]) -> String? {
        objects.isEmpty ? nil : objects.map(\.path).sorted().joined(separator: ", ")
    }

    /// The process's peak resident memory so far, in bytes.
    static func peakMemory() -> UInt64 {
        var usage = rusage()
        #if canImport(Glibc)
        guard getrusage(RUSAGE_SELF.rawValue, &usage) == 0 else { return 0 }
        #else
        guard getrusage(RUSAGE_SELF, &usage) == 0 else { return 0 }
        #endif
        #if canImport(Darwin)
        return UInt64(usage.ru_maxrss)  // bytes on Darwin
        #else
        return UInt64(usage.ru_maxrss) * 1024  // KiB on Linux
        #endif
    }
}
