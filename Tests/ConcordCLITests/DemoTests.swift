import Foundation
import Testing

/// `make demo`: `concord demo` runs to completion and shows identical dumps.
@Suite struct DemoTests {
    @Test func demoConvergesAndSaysSo() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        let result = try cli.ok(["demo"])
        #expect(result.stdout.contains("the three dumps are byte-identical"))
        #expect(result.stdout.contains("fileFork saves/slot1 data"))
        #expect(result.stdout.contains("deleteUpdate saves/slot1"))
        #expect(result.stdout.contains("no conflicts remain anywhere"))
        #expect(result.stdout.contains("no object's name or bytes contains"))
        let json = try cli.ok(["demo", "--json"]).object()
        #expect(json["identical"] as? Bool == true)
        #expect(json["conflictsFound"] as? Int == 2)
        #expect(json["conflictsLeft"] as? Int == 0)
    }
}
