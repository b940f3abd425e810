import Synchronization

/// Fans values out to every subscriber, after whatever produced them committed: the store's
/// change events, the sync engine's progress and AutoSync's events. Ends every stream,
/// present and future, on finish.
package final class Broadcaster<Element: Sendable>: Sendable {
    private struct State {
        var next = 0
        var subscribers: [Int: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }

    private let state = Mutex(State())
    private let bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy

    package init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy) {
        self.bufferingPolicy = bufferingPolicy
    }

    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let id = state.withLock { state -> Int? in
            if state.finished { return nil }
            state.next += 1
            state.subscribers[state.next] = continuation
            return state.next
        }
        if let id {
            continuation.onTermination = { [weak self] _ in
                _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
            }
        } else {
            continuation.finish()
        }
        return stream
    }

    /// Whether a stream is subscribed now.
    package var hasSubscribers: Bool {
        state.withLock { !$0.subscribers.isEmpty }
    }

    package func publish(_ value: Element) {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.yield(value) }
    }

    package func finish() {
        let continuations = state.withLock { state in
            state.finished = true
            defer { state.subscribers = [:] }
            return Array(state.subscribers.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    deinit {
        for continuation in state.withLock({ Array($0.subscribers.values) }) { continuation.finish() }
    }
}
