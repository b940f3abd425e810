// snippet.hide
// The code of the article "Syncing and the Remote Layout" (Sources/Concord/Concord.docc).
// `swift build` compiles it; `make docs` also runs it, so every outcome it states is
// checked. Everything it writes stays in a new temporary folder, deleted at the end; no
// network request.
import Foundation
import Concord

let folder = NSTemporaryDirectory() + "concord-syncing-" + UUID().uuidString
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
let passphrase = "snippet"

/// Stops the run unless `condition` holds.
func check(_ condition: @autoclosure () throws(ConcordError) -> Bool, line: UInt = #line) throws(ConcordError) {
    let holds = try condition()
    precondition(holds, "SyncingAndRemoteLayout.swift:\(line): the stated outcome does not hold")
}

// snippet.show
// snippet.setup
let remote = try FolderRemote(root: "\(folder)/remote", createIfMissing: true)
// snippet.hide
// The minimum Argon2id cost protects nothing; it only keeps this run fast.
let created = try await SyncEngine.createRemote(remote, passphrase: passphrase, limits: .minimum)
// snippet.show
let laptop = try Store(path: "\(folder)/laptop.db")
try laptop.setName("laptop")
// The first device created the remote store (SyncEngine.createRemote); this one unlocks it.
let unlocked = try await SyncEngine.unlock(remote, passphrase: passphrase)
let laptopSync = SyncEngine(store: laptop, remote: remote, key: unlocked.key, storeID: unlocked.storeID)
// snippet.end
// snippet.hide
try check(unlocked.storeID == created.storeID)
let phone = try Store(path: "\(folder)/phone.db")
try phone.setName("phone")
let phoneSync = SyncEngine(store: phone, remote: remote, key: unlocked.key, storeID: unlocked.storeID)
let game = RecordRef(collection: "games", id: "zelda")
// snippet.show

// snippet.sync
try laptop.put(game, ["title": .scalar(.string("Zelda"))])
try laptop.attachFile(game, "cover", bytes: Array("cover art".utf8), mediaType: "image/png")

let report = try await laptopSync.sync()  // pull, then push
print(report.pushed, report.filesUploaded)  // 1 batch, 1 file
// Also: report.applied (others' batches applied), report.filesFetched, report.waiting
// (batches whose dependencies or files are not there yet), report.rejected (objects that
// failed to authenticate or parse: skipped, never applied), report.skews (clocks ahead).
// snippet.end
// snippet.hide
try check(report.pushed == 1 && report.filesUploaded == 1 && report.rejected.isEmpty)
// snippet.show

// snippet.progress
let pulled = try await phoneSync.sync(progress: { update in
    print(update.phase, update.objectsDone, update.objectsTotal.map(String.init) ?? "?", update.bytesDone, update.bytesTotal)
})
print(pulled.applied, pulled.filesFetched)  // 1 batch, 1 file
// snippet.end
// snippet.hide
try check(pulled.applied == 1 && pulled.filesFetched == 1)
try check(phone.canonicalDump() == laptop.canonicalDump())
// snippet.show

// snippet.layout
// Each replica writes only its own names; the storage sees sizes, counts and times, never
// ids, field names, values or file contents.
for object in try await remote.list(prefix: "").sorted(by: { $0.path < $1.path }) {
    print(object.path, object.size.map(String.init) ?? "size not listed")
}
// blobs/<2 hex>/<keyed name>          the cover, encrypted
// concord.json                        store id, Argon2id salt and limits, wrapped key
// heads/<laptop id>-0000000000000001  the laptop's head: it pushed batch 1
// heads/<phone id>-0000000000000000   the phone's head: it has pushed nothing yet
// replicas/<laptop id>/deltas/0000000000000001   the laptop's first batch
// snippet.end
// snippet.hide
do {
    let paths = try await remote.list(prefix: "").map(\.path).sorted()
    let laptopID = laptop.replicaID.description, phoneID = phone.replicaID.description
    try check(paths.count == 5)
    try check(paths[0].hasPrefix("blobs/") && paths[1] == "concord.json")
    try check(Set(paths[2...3]) == ["heads/\(laptopID)-0000000000000001", "heads/\(phoneID)-0000000000000000"])
    try check(paths[4] == "replicas/\(laptopID)/deltas/0000000000000001")
    let manifest = String(decoding: try await remote.get("concord.json") ?? [], as: UTF8.self)
    try check(!manifest.contains(passphrase))
    let batch = try await remote.get(paths[4]) ?? []
    try check(batch.starts(with: Array("CNC".utf8) + [0x01]) && !String(decoding: batch, as: UTF8.self).contains("Zelda"))
}
// snippet.show

// snippet.modes
try phone.set(game, "level", .int(3))
try await phoneSync.sync(mode: .pushOnly)  // a backup: push local changes, pull nothing
try await laptopSync.sync(mode: .pullOnly)  // a mirror: apply others' changes, push nothing

// The same for automatic sync: a mirror that never pushes.
let mirror = AutoSync(engine: laptopSync, configuration: AutoSync.Configuration(mode: .pullOnly))
// snippet.end
// snippet.hide
_ = mirror
try check(laptop.canonicalDump() == phone.canonicalDump())
// snippet.show

// snippet.replicas
for replica in try await laptopSync.replicas() {
    print(replica.deviceName ?? "?", replica.seq, replica.lastSync, replica.status)
}
// snippet.end
// snippet.hide
let names = try await laptopSync.replicas().compactMap(\.deviceName)
try check(Set(names) == ["laptop", "phone"])
// snippet.show

// snippet.compact
let compaction = try await laptopSync.compact()
print(compaction.snapshot ?? "no snapshot written")  // snapshots/<laptop id>-0000000000000001
print(compaction.deletedBatches)  // the laptop's batches the snapshot covers and every replica applied
print(compaction.files.deletedFiles)  // unreferenced files older than the grace period (7 days)
// snippet.end
// snippet.hide
try check(compaction.snapshot == "snapshots/\(laptop.replicaID)-0000000000000001")
try check(compaction.deletedBatches == [1])
// snippet.show

// snippet.doctor
let health = try await laptopSync.doctor()  // reads and authenticates every object
print(health.objects.total, health.healthy, health.isHealthy)
for finding in health.findings {
    print(finding.kind, finding.path, finding.message, finding.action)
}
// With repair, fixes what this replica can (its own batches, heads and the files it holds)
// and reads each repair back; anything else names the replica that must repair it.
let repaired = try await laptopSync.doctor(repair: true)
// snippet.end
// snippet.hide
try check(health.isHealthy && repaired.isHealthy)
try FileManager.default.removeItem(atPath: folder)
print("SyncingAndRemoteLayout: ok")
