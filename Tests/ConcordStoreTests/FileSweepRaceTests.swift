import ConcordCore
import ConcordStore
import ConcordTesting
import Foundation
import Testing

/// The local file sweep and `attachFile` in two processes on one store: no attached file
/// is ever swept (a swept one would make every later push fail with missingBlob).
@Suite struct FileSweepRaceTests {
    @Test func sweepRacingAttachesInAnotherProcessNeverDeletesAnAttachedFile() throws {
        let directory = TemporaryDirectory("race")
        let path = directory.file("store.db")
        _ = try Store(path: path)
        let attaches = 2_000
        let attacher = try Child.start(["attach", path, directory.file("attach.log"), String(attaches)])
        let sweeper = try Child.start(["sweep", path, directory.file("sweep.log"), "100"])
        attacher.wait()
        sweeper.wait()
        #expect(Child.lines(directory.file("attach.log")) == ["attached"], "\(Child.lines(directory.file("attach.log")))")
        #expect(Child.lines(directory.file("sweep.log")).first?.hasPrefix("swept") == true, "\(Child.lines(directory.file("sweep.log")))")
        let store = try Store(path: path)
        var missing: [String] = []
        for index in 0..<attaches {
            let ref = RecordRef(collection: "files", id: "f\(index)")
            guard case let .file(file)? = try store.record(ref)?.first(where: { $0.name == "content" })?.value else {
                Issue.record("f\(index) has no file field")
                continue
            }
            if !store.blobs.contains(file.hash) { missing.append("f\(index)") }
        }
        #expect(missing.isEmpty, "\(missing.count) attached files were swept: \(missing.prefix(10))")
        // And a seal (what a push reads) finds every file.
        for hash in try store.referencedFiles() { #expect(store.blobs.contains(hash)) }
    }
}
