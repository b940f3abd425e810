import ConcordCore
import Synchronization

/// Which declared collections changed, counted per collection, and a signal to the
/// observed queries after each commit that changed one. A signal waiting is never
/// queued behind another: a burst of commits wakes an observer once, and it then reads the
/// counts, which never miss a commit.
final class DeclaredChanges: Sendable {
    private let generations = Mutex<[[UInt8]: UInt64]>([:])
    private let signals = Broadcaster<Void>(bufferingPolicy: .bufferingNewest(1))

    /// After a commit: `collections`' declared tables (or declarations) changed.
    func committed(_ collections: Set<String>) {
        guard !collections.isEmpty else { return }
        generations.withLock { counts in
            for collection in collections { counts[Array(collection.utf8), default: 0] &+= 1 }
        }
        signals.publish(())
    }

    func generation(_ collection: String) -> UInt64 {
        generations.withLock { $0[Array(collection.utf8)] ?? 0 }
    }

    func subscribe() -> AsyncStream<Void> { signals.subscribe() }
}

extension Store {
    /// The results of `query` now, then again after every commit that changed them — local
    /// writes, remote applies, snapshot joins, purges, identity changes, a declaration
    /// made again or dropped — through this store.
    ///
    /// ```swift
    /// for try await games in store.observe(Query("games").filter(.field("level", .greater, .int(3)))) {
    ///     print(games.map(\.id))
    /// }
    /// ```
    ///
    /// Bursts coalesce: commits that land while the last results are being read or
    /// consumed wake it once, it yields only when the results differ from the last it
    /// yielded, and a consumer slower than the commits finds only the newest results
    /// waiting. It never misses a change: after the last commit it yields the results as
    /// they then are. A query that cannot run (its collection dropped, a field no longer
    /// declared) ends the sequence with its error. Commits of other processes on the same
    /// file are not seen.
    public func observe(_ query: Query) -> AsyncThrowingStream<[(id: String, fields: [(name: String, value: FieldValue)])], any Error> {
        let signals = declaredChanges.subscribe()
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                var last: [(id: String, fields: [(name: String, value: FieldValue)])]?
                var seen: UInt64?
                var iterator = signals.makeAsyncIterator()
                repeat {
                    let generation = declaredChanges.generation(query.collection)
                    guard generation != seen else { continue }
                    seen = generation
                    do {
                        let results = try self.query(query)
                        if let previous = last, Self.same(previous, results) { continue }
                        last = results
                        continuation.yield(results)
                    } catch {
                        continuation.finish(throwing: error)
                        return
                    }
                } while await iterator.next() != nil && !Task.isCancelled
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    static func same(_ a: [(id: String, fields: [(name: String, value: FieldValue)])], _ b: [(id: String, fields: [(name: String, value: FieldValue)])]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { x, y in
            Bytewise.equal(x.id, y.id) && x.fields.count == y.fields.count
                && zip(x.fields, y.fields).allSatisfy { Bytewise.equal($0.name, $1.name) && $0.value == $1.value }
        }
    }
}
