import ConcordCore
import ConcordRemote

/// The batches pull will ask for next, fetched ahead a bounded number at a time, so that
/// over a link with latency a thousand batches take a thousand round trips divided by the
/// window, not a thousand round trips (docs/ARCHITECTURE.md §4).
///
/// Pull still asks for batches one at a time, in its order, and applies them in causal
/// order; only the fetching runs ahead. At most `window` fetches are in flight or held at
/// once, so memory stays at `window` batches. A window of 1 fetches exactly what is asked,
/// when it is asked — the order a seeded fault injector needs to replay a schedule.
struct BatchPrefetch {
    typealias Fetch = Task<Result<[UInt8]?, ConcordError>, Never>

    let objects: RemoteObjects
    let window: Int
    private var fetches: [ReplicaID: [UInt64: Fetch]] = [:]
    private var count = 0

    init(objects: RemoteObjects, window: Int) {
        self.objects = objects
        self.window = max(1, window)
    }

    /// The batch `seq` of `replica` (nil if the remote has none), having started fetching
    /// its successors up to `last` while there is room in the window — and, with room
    /// left, the batches of the origins pull turns to next (`upcoming`: each with the seqs
    /// it will ask for), so ten origins with one batch each cost one round trip, not ten.
    mutating func batch(
        _ replica: ReplicaID, _ seq: UInt64, last: UInt64, upcoming: [(replica: ReplicaID, seqs: ClosedRange<UInt64>)] = []
    ) async throws(ConcordError) -> [UInt8]? {
        if window == 1 {
            return try await objects.fetch(RemoteLayout.batch(replica, seq: seq))
        }
        // Batches below `seq` were skipped (a snapshot covered them): no longer wanted.
        for (held, fetch) in fetches[replica, default: [:]] where held < seq {
            fetch.cancel()
            fetches[replica]![held] = nil
            count -= 1
        }
        // Room for this origin: fetches others left running give way (they are fetched
        // again if asked for).
        if fetches[replica, default: [:]].isEmpty, count >= window { cancelAll() }
        var ahead = seq
        while ahead <= last, count < window || ahead == seq {
            if fetches[replica, default: [:]][ahead] == nil {
                fetches[replica, default: [:]][ahead] = start(RemoteLayout.batch(replica, seq: ahead))
                count += 1
            }
            if ahead == UInt64.max { break }
            ahead += 1
        }
        for (other, seqs) in upcoming where other != replica {
            for ahead in seqs {
                guard count < window else { break }
                if fetches[other, default: [:]][ahead] == nil {
                    fetches[other, default: [:]][ahead] = start(RemoteLayout.batch(other, seq: ahead))
                    count += 1
                }
            }
        }
        let fetch = fetches[replica]![seq]!
        fetches[replica]![seq] = nil
        count -= 1
        return try await fetch.value.get()
    }

    private func start(_ path: String) -> Fetch {
        let objects = self.objects
        return Task {
            do throws(ConcordError) {
                return .success(try await objects.fetch(path))
            } catch {
                return .failure(error)
            }
        }
    }

    /// Stops every fetch still running (pull is done, or needs the room).
    mutating func cancelAll() {
        for fetch in fetches.values.flatMap(\.values) { fetch.cancel() }
        fetches = [:]
        count = 0
    }
}
