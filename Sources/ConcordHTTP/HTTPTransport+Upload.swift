import AsyncHTTPClient
import ConcordCore
import NIOCore
import Synchronization

extension HTTPTransport {
    /// Sends a request whose body is streamed from `read` (an empty array ends it) with
    /// chunked transfer encoding, in constant memory: `read` is called only when the
    /// connection has taken the previous chunk. Not retried — `read` cannot be replayed —
    /// so a failure throws and the caller's next attempt starts again. An error thrown by
    /// `read` aborts the request and is rethrown.
    ///
    /// The whole exchange may take the time ``HTTPBounds`` gives the bytes handed over so
    /// far plus 1 MiB (the chunk in flight, the answer): a server that stops taking the body,
    /// or never answers it, has the request cancelled with
    /// ``/ConcordCore/ConcordError/Code/limitExceeded`` instead of holding the upload for ever.
    public func upload(
        _ object: String, spec: HTTPRequestSpec, read: () throws(ConcordError) -> [UInt8]
    ) async throws(ConcordError) -> HTTPResponse {
        let handoff = BodyHandoff()
        var streamed = spec.request
        streamed.body = .stream(handoff, length: .unknown)
        let request = streamed
        let client = self.client
        let watch = UploadWatch(bounds: bounds)
        let outcome = await withTaskGroup(of: UploadOutcome?.self) { group -> UploadOutcome in
            group.addTask {
                defer { handoff.close() }
                do {
                    let response = try await client.execute(request, deadline: .distantFuture)
                    var clock = TransferClock(bounds: self.bounds, expected: 1 << 20)
                    var collected = CollectingReader()
                    if (200...299).contains(Int(response.status.code)) {
                        try await self.read(response, into: &collected, object: object, limit: 1 << 20, clock: &clock)
                    } else {
                        collected.bytes = try await self.collectPrefix(response, object: object, clock: &clock)
                    }
                    return .answered(HTTPResponse(status: Int(response.status.code), headers: response.headers, body: collected.bytes))
                } catch {
                    return .failed(error)
                }
            }
            group.addTask {
                // Returns nil when cancelled: the exchange ended in time.
                guard let expired = await watch.run() else { return nil }
                handoff.fail()
                handoff.close()
                return .expired(expired)
            }
            var readFailure: ConcordError?
            while true {
                let chunk: [UInt8]
                do throws(ConcordError) {
                    chunk = try read()
                } catch {
                    readFailure = error
                    handoff.fail()
                    break
                }
                if chunk.isEmpty {
                    handoff.finish()
                    break
                }
                watch.handedOver(chunk.count)
                guard await handoff.send(ByteBuffer(bytes: chunk)) else { break }
            }
            var outcome = UploadOutcome.failed(CancellationError())
            for await result in group {
                guard let result else { continue }
                outcome = result
                group.cancelAll()
                break
            }
            if let readFailure { return .readFailed(readFailure) }
            return outcome
        }
        switch outcome {
        case let .answered(response): return response
        case let .readFailed(error): throw error
        case let .expired(elapsed):
            let sent = watch.sent
            throw ConcordError(
                .limitExceeded,
                "\(remoteName), \(object): the upload was cancelled after \(TransferClock.seconds(elapsed)) s with \(sent) bytes handed over, over the "
                    + "\(TransferClock.seconds(bounds.allowance(forBytes: sent + (1 << 20)))) s allowed at the least rate of \(bounds.minimumRate) bytes/s: "
                    + "the server stopped taking the body or never answered it; nothing local was lost, the next sync tries again")
        case let .failed(error as ConcordError): throw error
        case let .failed(error): throw transportError(error, object: object)
        }
    }
}

/// How a streamed upload ended (``HTTPTransport/upload(_:spec:read:)``).
enum UploadOutcome: Sendable {
    case answered(HTTPResponse)
    case failed(any Error)
    case readFailed(ConcordError)
    /// The watch cancelled it after this long.
    case expired(Duration)
}

/// A streamed upload's clock: the exchange may take the time ``HTTPBounds`` gives the bytes
/// handed over so far plus 1 MiB (the chunk in flight, the answer). Its ``run()`` returns
/// once that time has passed, or nil when it is cancelled first.
final class UploadWatch: Sendable {
    let bounds: HTTPBounds
    let started = ContinuousClock.now
    private let handed = Mutex<UInt64>(0)

    init(bounds: HTTPBounds) {
        self.bounds = bounds
    }

    /// The bytes handed over so far.
    var sent: UInt64 { handed.withLock { $0 } }

    /// `count` more bytes go to the connection.
    func handedOver(_ count: Int) {
        handed.withLock { $0 += UInt64(count) }
    }

    /// Waits until the exchange is over its time (returning how long it took), checking at
    /// least every second as the allowance grows; nil once the task is cancelled.
    func run() async -> Duration? {
        while true {
            let elapsed = ContinuousClock.now - started
            let allowed = bounds.allowance(forBytes: sent + (1 << 20))
            if elapsed > allowed { return elapsed }
            do {
                try await Task.sleep(for: min(allowed - elapsed, .seconds(1)) + .milliseconds(1))
            } catch {
                return nil
            }
        }
    }
}
