import ConcordTestServers
import ConcordTesting
import Foundation
import Testing

/// The fault library's power-cut mode (`CONCORD_FAULT=CALL:N:powercut`,
/// `CONCORD_POWERCUT_ROOT`): before the Nth call of a kind it drops what was not durable
/// below the root — the bytes written to each file since its last fsync or fdatasync, the
/// entries created, renamed or removed in each folder since that folder's last fsync — then
/// kills the process. A kill alone keeps the page cache, so it never shows a missing fsync.
extension CrashTests {
    /// The power-cut mode itself (`ConcordPowerCutCheck`, Tests/PowerCutCheck/main.c): a
    /// write never synced comes back to what it overwrote; fsynced and fdatasynced content
    /// survives; a new file or folder, a rename or a removal is undone unless its folder was
    /// fsynced after it; the cut comes before the call it is set on, sees another thread's
    /// writes whole, and leaves files outside the root alone.
    @Test func powerCutModeKeepsExactlyWhatWasDurable() async throws {
        let check = URL(fileURLWithPath: Child.executable).deletingLastPathComponent().appendingPathComponent("ConcordPowerCutCheck").path
        let directory = TemporaryDirectory("powercut-check")
        let output = directory.file("output")
        let termination = try await Subprocess.start(check, [Self.faultLibrary, directory.path], stdout: .file(output, append: false), stderr: .file(output, append: true)).finish()
        let lines = Child.lines(output)
        #expect(termination == .exited(0), "\(lines.filter { !$0.hasPrefix("ok") }.joined(separator: "\n"))")
        #expect(lines.filter { $0.hasPrefix("ok") }.count >= 20, "\(lines)")
        print("power-cut mode: \(lines.last ?? "no output")")
    }
}
