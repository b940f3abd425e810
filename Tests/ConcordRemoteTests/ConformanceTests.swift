import ConcordCore
import ConcordRemote
import ConcordTesting
import Testing

/// The conformance suite itself: it passes a faithful remote and catches each kind of
/// broken one (a checker that passes everything would prove nothing).
@Suite struct ConformanceTests {
    @Test func aFaithfulRemoteConforms() async {
        #expect(await RemoteConformance.check(MemoryRemote()) == [])
    }

    @Test(arguments: [
        (MemoryRemote.Flaw.keepsStaleTail, "no stale tail may remain"),
        (.acceptsAnyPath, "must be refused with invalidRemotePath"),
        (.keepsPartialStream, "the previous object must remain whole"),
        (.secondsNotMilliseconds, "wrong unit?"),
        (.ignoresPrefix, "list(prefix: \"heads/\") returned"),
        (.deliversOneChunk, "stream in bounded chunks"),
        (.deleteMissingThrows, "deleting a missing object succeeds"),
        (.ignoresLimit, "an object over the limit must throw limitExceeded"),
    ])
    func eachFlawIsCaught(flaw: MemoryRemote.Flaw, symptom: String) async {
        let issues = await RemoteConformance.check(MemoryRemote(flaw: flaw))
        #expect(issues.contains { $0.contains(symptom) }, "\(flaw) went unnoticed: \(issues)")
    }

    /// The protocol's default `get(_:limit:)` (for remotes that cannot learn a size first)
    /// keeps the bounded get's contract, all but the memory bound.
    @Test func theDefaultBoundedGetConforms() async {
        #expect(await RemoteConformance.check(DefaultBoundedGet(base: MemoryRemote())) == [])
    }

    @Test func aNonEmptyRemoteIsReportedNotClobbered() async throws {
        let remote = MemoryRemote()
        try await remote.put(RemoteLayout.manifestPath, [1, 2, 3])
        let issues = await RemoteConformance.check(remote)
        #expect(issues.count == 1)
        #expect(issues.first?.contains("not empty") == true)
        #expect(remote.contents == [RemoteLayout.manifestPath: [1, 2, 3]])
    }

    @Test func aRemoteWithFaultsOnFails() async {
        let remote = FaultyRemote(wrapping: MemoryRemote(), seed: 5, plan: FaultyRemote.Plan(failure: 0.2, tornPut: 0.2))
        #expect(await !RemoteConformance.check(remote).isEmpty)
    }
}

/// A remote with no `get(_:limit:)` of its own: it gets the protocol's default.
struct DefaultBoundedGet: Remote {
    let base: MemoryRemote
    func put(_ path: String, _ bytes: [UInt8]) async throws(ConcordError) { try await base.put(path, bytes) }
    func get(_ path: String) async throws(ConcordError) -> [UInt8]? { try await base.get(path) }
    func list(prefix: String) async throws(ConcordError) -> [RemoteObject] { try await base.list(prefix: prefix) }
    func delete(_ path: String) async throws(ConcordError) { try await base.delete(path) }
    func putStream(_ path: String, read: () throws(ConcordError) -> [UInt8]) async throws(ConcordError) { try await base.putStream(path, read: read) }
    func getStream(_ path: String, write: ([UInt8]) throws(ConcordError) -> Void) async throws(ConcordError) -> Bool {
        try await base.getStream(path, write: write)
    }
}
