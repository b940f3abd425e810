import NIOCore
import Synchronization

/// A body handed over one chunk at a time: the producer's `send` returns only when the
/// consumer has taken the chunk (or the exchange ended), so at most one chunk waits in
/// memory however large the body. A request's body goes this way to the HTTP client; an
/// answer's body comes this way from the client to a reader that a deadline can interrupt
/// (``HTTPTransport``'s bounded reads).
final class BodyHandoff: AsyncSequence, Sendable {
    typealias Element = ByteBuffer

    struct Failed: Error {}

    /// Why the body failed, handed to the consumer (``Failed`` when none was given).

    private struct State {
        var pending: ByteBuffer?
        var finished = false
        var failed = false
        var failure: (any Error)?
        var closed = false
        var consumer: CheckedContinuation<ByteBuffer?, any Error>?
        var producer: CheckedContinuation<Bool, Never>?
    }

    private let state = Mutex(State())

    /// Hands `buffer` to the consumer; false if the request has ended and takes no more.
    func send(_ buffer: ByteBuffer) async -> Bool {
        await withCheckedContinuation { (producer: CheckedContinuation<Bool, Never>) in
            let resume: (CheckedContinuation<ByteBuffer?, any Error>?, Bool?) = state.withLock { state in
                if state.closed || state.failed || state.finished { return (nil, false) }
                if let consumer = state.consumer {
                    state.consumer = nil
                    return (consumer, true)
                }
                state.pending = buffer
                state.producer = producer
                return (nil, nil)
            }
            switch resume {
            case let (consumer?, _):
                consumer.resume(returning: buffer)
                producer.resume(returning: true)
            case let (nil, answer?):
                producer.resume(returning: answer)
            default:
                break
            }
        }
    }

    /// The body is complete.
    func finish() {
        let consumer = state.withLock { state -> CheckedContinuation<ByteBuffer?, any Error>? in
            state.finished = true
            defer { state.consumer = nil }
            return state.consumer
        }
        consumer?.resume(returning: nil)
    }

    /// The body failed (with `error`, if given, for the consumer to throw): the request is
    /// aborted. Only the first failure counts.
    func fail(_ error: (any Error)? = nil) {
        let (consumer, thrown) = state.withLock { state -> (CheckedContinuation<ByteBuffer?, any Error>?, any Error) in
            if !state.failed {
                state.failed = true
                state.failure = error
            }
            defer { state.consumer = nil }
            return (state.consumer, state.failure ?? Failed())
        }
        consumer?.resume(throwing: thrown)
    }

    /// The request has ended (answered or failed): a waiting producer is released.
    func close() {
        let producer = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.closed = true
            state.pending = nil
            defer { state.producer = nil }
            return state.producer
        }
        producer?.resume(returning: false)
    }

    func next() async throws -> ByteBuffer? {
        try await withCheckedThrowingContinuation { (consumer: CheckedContinuation<ByteBuffer?, any Error>) in
            enum Action { case give(ByteBuffer, CheckedContinuation<Bool, Never>), end, fail(any Error), wait }
            let action: Action = state.withLock { state in
                if let pending = state.pending, let producer = state.producer {
                    state.pending = nil
                    state.producer = nil
                    return .give(pending, producer)
                }
                if state.failed { return .fail(state.failure ?? Failed()) }
                if state.finished || state.closed { return .end }
                state.consumer = consumer
                return .wait
            }
            switch action {
            case let .give(buffer, producer):
                consumer.resume(returning: buffer)
                producer.resume(returning: true)
            case .end: consumer.resume(returning: nil)
            case let .fail(error): consumer.resume(throwing: error)
            case .wait: break
            }
        }
    }

    struct AsyncIterator: AsyncIteratorProtocol {
        let handoff: BodyHandoff
        func next() async throws -> ByteBuffer? { try await handoff.next() }
    }

    func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handoff: self) }
}
