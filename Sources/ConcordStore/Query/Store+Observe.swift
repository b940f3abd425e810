import ConcordCore
import Synchronization

/// Which declared collections changed, counted per collection, and a signal to the
/// observed queries after each commit that changed one. A signal waiting is never
/// queued behind another: a burst of commits wakes an observer once, and it then reads the
/// counts, which never miss a commit.
final class DeclaredChanges: Sendable {
    private let generations = Mutex<[[UInt8]: UInt64]>([:])
    private let signals = Broadcaster<Void>(bufferingPolicy: .bufferingNewest(1))
    private let elsewhere = Mutex<UInt64>(0)

    /// After a commit: `collections`' declared tables (or declarations) changed.
    func committed(_ collections: Set<String>) {
        guard !collections.isEmpty else { return }
        generations.withLock { counts in
            for collection in collections { counts[Array(collection.utf8), default: 0] &+= 1 }
        }
        signals.publish(())
    }

    /// After another connection committed (``CommitPoller``): which collections it changed
    /// is not known, so every observed query reads again.
    func committedElsewhere() {
        elsewhere.withLock { $0 &+= 1 }
        signals.publish(())
    }

    /// A count that changes after every commit that changed `collection`'s declared table.
    func generation(_ collection: String) -> UInt64 {
        generations.withLock { $0[Array(collection.utf8)] ?? 0 } &+ elsewhere.withLock { $0 }
    }

    func subscribe() -> AsyncStream<Void> { signals.subscribe() }
}

extension Store {
    /// The results of `query` now, then again after every commit that changed them — local
    /// writes, remote applies, snapshot joins, purges, identity changes, a declaration
    /// made again or dropped — through this store or by another process on the same file
    /// (`concord put` in another terminal, another app's sync).
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
    /// they then are. This store's own commits wake it at once; another process's are
    /// noticed within 50 ms (`PRAGMA data_version`, looked at while a
    /// query is observed). A query that cannot run (its collection dropped, a field no
    /// longer declared) ends the sequence with its error.
    public func observe(_ query: Query) -> AsyncThrowingStream<[(id: String, fields: [(name: String, value: FieldValue)])], any Error> {
        observing(query.collection, { () throws(ConcordError) in try self.query(query) }, same: Self.same)
    }

    /// The number of records `query` keeps (``count(_:)-(Query)``) now, then again after every
    /// commit that changed it, as ``observe(_:)`` yields results.
    public func observeCount(_ query: Query) -> AsyncThrowingStream<Int, any Error> {
        observing(query.collection, { () throws(ConcordError) in try self.count(query) }, same: { $0 == $1 })
    }

    /// `read` now and after every commit that changed `collection`, yielded when it differs.
    private func observing<Value: Sendable>(
        _ collection: String, _ read: @escaping @Sendable () throws(ConcordError) -> Value, same: @escaping @Sendable (Value, Value) -> Bool
    ) -> AsyncThrowingStream<Value, any Error> {
        let signals = declaredChanges.subscribe()
        let poller = commitPoller
        let subscription = poller.subscribe(every: CommitPoller.observeInterval)
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(1)) { continuation in
            let task = Task {
                defer { poller.unsubscribe(subscription) }
                var last: Value?
                var seen: UInt64?
                var iterator = signals.makeAsyncIterator()
                repeat {
                    let generation = declaredChanges.generation(collection)
                    guard generation != seen else { continue }
                    seen = generation
                    do {
                        let value = try read()
                        if let previous = last, same(previous, value) { continue }
                        last = value
                        continuation.yield(value)
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
