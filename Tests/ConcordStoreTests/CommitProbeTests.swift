import ConcordCore
import ConcordStore
import ConcordTesting
import Testing

/// The store's look for other connections' commits (`CommitProbe`), which its probes share
/// with its observed queries and live sync: each probe answers for itself, since its own
/// last look.
@Suite struct CommitProbeTests {
    @Test func eachProbeSeesAnotherConnectionsCommitOnceSinceItsOwnLastLook() throws {
        let directory = TemporaryDirectory()
        let clock = ManualClock()
        let store = try Store.temporary(directory, "a", clock: clock)
        let other = try Store(path: store.path, configuration: .init(clock: clock))
        let first = store.commitProbe()
        let second = store.commitProbe()
        #expect(!first.committedSinceLastLook(), "nothing committed since the probe was made")

        try other.set(RecordRef(collection: "c", id: "x"), "title", .string("elsewhere"))
        #expect(first.committedSinceLastLook())
        #expect(!first.committedSinceLastLook(), "seen once")
        #expect(second.committedSinceLastLook(), "the other probe has not looked since the commit")
        #expect(!second.committedSinceLastLook())

        // A probe of the file alone; the store's own writer is another connection to it.
        let standalone = CommitProbe(path: store.path)
        #expect(!standalone.committedSinceLastLook())
        try store.set(RecordRef(collection: "c", id: "y"), "title", .string("here"))
        #expect(standalone.committedSinceLastLook())
        #expect(first.committedSinceLastLook())
        #expect(!standalone.committedSinceLastLook() && !first.committedSinceLastLook())
    }
}
