// snippet.hide
// The code of the article "Resolving Conflicts" (Sources/Concord/Concord.docc). `swift build`
// compiles it; `make docs` also runs it, so every outcome it states is checked. Everything
// it writes stays in a new temporary folder, deleted at the end; no network request.
import Foundation
import Concord

let folder = NSTemporaryDirectory() + "concord-resolving-conflicts-" + UUID().uuidString
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
let remote = try FolderRemote(root: "\(folder)/remote", createIfMissing: true)
// The minimum Argon2id cost protects nothing; it only keeps this run fast.
let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: "snippet", limits: .minimum)
let laptop = try Store(path: "\(folder)/laptop.db")
let phone = try Store(path: "\(folder)/phone.db")
let laptopSync = SyncEngine(store: laptop, remote: remote, key: key, storeID: storeID)
let phoneSync = SyncEngine(store: phone, remote: remote, key: key, storeID: storeID)

func syncAll() async throws(ConcordError) {
    try await laptopSync.sync()
    try await phoneSync.sync()
    try await laptopSync.sync()
}

func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// Stops the run unless `condition` holds.
func check(_ condition: @autoclosure () throws(ConcordError) -> Bool, line: UInt = #line) throws(ConcordError) {
    let holds = try condition()
    precondition(holds, "ResolvingConflicts.swift:\(line): the stated outcome does not hold")
}

let slot1 = RecordRef(collection: "saves", id: "slot1")
let slot2 = RecordRef(collection: "saves", id: "slot2")
let notes = RecordRef(collection: "notes", id: "shopping")
try laptop.put(slot1, ["label": .scalar(.string("Hyrule Castle"))])
try laptop.put(slot2, ["label": .scalar(.string("Lost Woods"))])
try laptop.attachFile(notes, "text", bytes: bytes("milk\n"), mediaType: "text/plain")
try await syncAll()

// Offline, the two devices disagree: two file forks and two deletes concurrent with updates.
try laptop.attachFile(slot1, "data", bytes: bytes("forest save, 5 hearts"), mediaType: "text/plain")
try phone.attachFile(slot1, "data", bytes: bytes("dungeon save"), mediaType: "text/plain")
try laptop.attachFile(notes, "text", bytes: bytes("milk\neggs\n"), mediaType: "text/plain")
try phone.attachFile(notes, "text", bytes: bytes("milk\nbread\n"), mediaType: "text/plain")
try laptop.delete(slot1)
try phone.set(slot1, "hearts", .int(5))
try phone.delete(slot2)
try laptop.set(slot2, "hearts", .int(2))
try await syncAll()

// snippet.show
// snippet.list
// Every open conflict, in canonical order; the same list on every device that has seen the
// same changes.
for conflict in try laptop.conflicts() {
    switch conflict.kind {
    case .fileFork:
        // The forked field, and one version per distinct content, sorted by content hash:
        // its FileRef and the greatest stamp of a write that set it (stamp.replica wrote it).
        print("\(conflict.ref) \(conflict.field ?? ""): \(conflict.versions.count) versions")
        for version in conflict.versions {
            let content = try laptop.blobs.bytes(version.file.hash)  // to show a person
            print("  \(version.file.hash): \(content.count) bytes by \(version.stamp.replica)")
        }
    case .deleteUpdate:
        // The record stayed, with all its fields.
        print("\(conflict.ref) was deleted on one device while another changed it")
    default:
        print(conflict)  // a kind a later release adds
    }
}
// snippet.end
// snippet.hide
try check(laptop.conflicts() == phone.conflicts())
try check(laptop.conflicts().map { "\($0.kind) \($0.ref) \($0.field ?? "")" } == [
    "fileFork notes/shopping text", "deleteUpdate saves/slot1 ", "fileFork saves/slot1 data", "deleteUpdate saves/slot2 ",
])
// snippet.show

// snippet.keep-version
// Keep one version of a fork: here, the larger save.
let saveFork = try laptop.conflicts().first { $0.kind == .fileFork && $0.ref == slot1 }
if let saveFork, let chosen = saveFork.versions.max(by: { $0.file.size < $1.file.size }) {
    try laptop.keepVersion(slot1, "data", hash: chosen.file.hash)
}
// snippet.end

// snippet.merge
// Or write merged content: an ordinary write, which supersedes every version it has seen.
let notesFork = try laptop.conflicts().first { $0.kind == .fileFork && $0.ref == notes }
if let notesFork {
    var lines: Set<String> = []
    for version in notesFork.versions {
        let text = String(decoding: try laptop.blobs.bytes(version.file.hash), as: UTF8.self)
        lines.formUnion(text.split(separator: "\n").map(String.init))
    }
    let merged = lines.sorted().map { $0 + "\n" }.joined()
    try laptop.attachFile(notes, "text", bytes: Array(merged.utf8), mediaType: "text/plain")
}
// snippet.end

// snippet.delete-update
// Keep a record that was deleted while it was changed elsewhere, as it is now …
try laptop.keepRecord(slot1)
// … or delete it again: this delete has seen the update, so it removes the record.
try laptop.delete(slot2)
// snippet.end

// snippet.after
// The resolutions reach the other devices like any write.
try await laptopSync.sync()
try await phoneSync.sync()
try check(phone.conflicts().isEmpty)

// The versions a resolution superseded stay in the file's history (30 days by default)
// and can be made current again.
let superseded = try phone.versions(slot1, "data")
if let dungeon = superseded.first(where: { $0.file.size == 12 }) {
    print("\(dungeon.file.hash) was superseded at \(dungeon.supersededAt) ms")
    try phone.restore(slot1, "data", hash: dungeon.file.hash)  // an ordinary write
}
// snippet.end

// snippet.hide
try check(laptop.conflicts().isEmpty)
try check(phone.record(slot2) == nil)
try check(phone.record(slot1)?.map(\.name) == ["data", "hearts", "label"])
if case let .file(file)? = try phone.record(notes)?.first(where: { $0.name == "text" })?.value {
    try check(phone.blobs.bytes(file.hash) == bytes("bread\neggs\nmilk\n"))
} else {
    preconditionFailure("notes/shopping lost its text")
}
if case let .file(file)? = try phone.record(slot1)?.first(where: { $0.name == "data" })?.value {
    try check(file.size == 12)  // restored
} else {
    preconditionFailure("saves/slot1 lost its data")
}
try check(superseded.contains { $0.file.size == 12 })
try FileManager.default.removeItem(atPath: folder)
print("ResolvingConflicts: ok")
