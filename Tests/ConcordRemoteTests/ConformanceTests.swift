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
    ])
    func eachFlawIsCaught(flaw: MemoryRemote.Flaw, symptom: String) async {
        let issues = await RemoteConformance.check(MemoryRemote(flaw: flaw))
        #expect(issues.contains { $0.contains(symptom) }, "\(flaw) went unnoticed: \(issues)")
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
