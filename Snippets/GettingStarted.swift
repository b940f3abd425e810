// snippet.hide
// The code of the article "Getting Started" (Sources/Concord/Concord.docc). `swift build`
// compiles it; `make docs` also runs it. Everything it writes stays in a new temporary
// folder, deleted at the end; it makes no network request.
import Foundation

// snippet.show
import Concord

// snippet.hide
let folder = NSTemporaryDirectory() + "concord-getting-started-" + UUID().uuidString
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
try Data("not really a PNG".utf8).write(to: URL(fileURLWithPath: "\(folder)/cover.png"))
// snippet.show

// snippet.open
// One SQLite file per device; the files it holds live beside it, in games.db.blobs/.
let store = try Store(path: "\(folder)/games.db")
try store.setName("laptop")  // the device name other replicas see
// snippet.end

// snippet.records
let zelda = RecordRef(collection: "games", id: "zelda")
try store.put(zelda, [
    "title": .scalar(.string("Zelda")),
    "level": .scalar(.int(3)),
    "tags": .set([.string("adventure")]),
])
try store.set(zelda, "level", .int(4))
try store.add(zelda, "tags", .string("classic"))

// The visible fields, sorted by name; nil when the record does not exist or was deleted.
if let fields = try store.record(zelda) {
    for (name, value) in fields {
        print(name, value)  // level 4, tags {"adventure", "classic"}, title "Zelda"
    }
}
// snippet.end
// snippet.hide
do {
    let fields = try store.record(zelda) ?? []
    precondition(fields.map(\.name) == ["level", "tags", "title"])
    precondition(fields[0].value == .scalar(.int(4)))
    precondition(fields[1].value == .set([.string("adventure"), .string("classic")]))
}
// snippet.show

// snippet.write
// One transaction, one stamp: every change in it is stored, or none is.
try store.write { (tx) throws(ConcordError) in
    try tx.set(zelda, "level", .int(5))
    try tx.remove(zelda, "tags", .string("adventure"))
    try tx.delete(RecordRef(collection: "games", id: "tetris"))
}
// snippet.end

// snippet.typed
struct Game: StoredRecord {
    static let collection = "games"
    var id: String
    var title: String
    var level: Int
    var tags: Set<String>
}

try store.save(Game(id: "mario", title: "Mario", level: 1, tags: ["platform"]))

// save(_:) writes only the properties that changed: here, "level". Another device that
// changed the title meanwhile keeps its title; both edits survive the merge.
if var mario = try store.load(Game.self, id: "mario") {
    mario.level = 2
    let written = try store.save(mario)
    print(written)  // ["level"]
}

let games = try store.loadAll(Game.self)  // every visible game, sorted by id: mario, zelda
// snippet.end
// snippet.hide
precondition(games.map(\.id) == ["mario", "zelda"])
precondition(games[0].level == 2 && games[1].tags == ["classic"])
// snippet.show

// snippet.file
// The file is copied into the store (content-addressed by its BLAKE2b-256 hash).
let cover = try store.attachFile(zelda, "cover", path: "\(folder)/cover.png", mediaType: "image/png")
print(cover.hash, cover.size)

// A file field reads as a FileRef; its content is in the store's blob directory.
if case let .file(file)? = try store.record(zelda)?.first(where: { $0.name == "cover" })?.value {
    let bytes = try store.blobs.bytes(file.hash)
    try store.blobs.export(file.hash, to: "\(folder)/cover-copy.png")
    print(bytes.count)
}
// snippet.end

// snippet.remote
// Any folder works: Dropbox, iCloud Drive, Syncthing, a USB drive, a network share.
let remote = try FolderRemote(root: "\(folder)/Dropbox/Games", createIfMissing: true)
let passphrase = "correct horse battery staple"  // asked of the person; never stored

// The first device creates the remote store: a random store key, wrapped with a key
// derived from the passphrase (Argon2id), in concord.json.
let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: passphrase)
let engine = SyncEngine(store: store, remote: remote, key: key, storeID: storeID)
let report = try await engine.sync()  // pull, then push
print("pushed \(report.pushed) batch(es), uploaded \(report.filesUploaded) file(s)")
// snippet.end
// snippet.hide
precondition(report.pushed >= 1 && report.filesUploaded == 1)
// snippet.show

// snippet.join
// Every other device unlocks the same remote store with the passphrase. A wrong one
// throws a ConcordError with code .wrongKey before anything is read or applied.
let phone = try Store(path: "\(folder)/phone.db")
let unlocked = try await SyncEngine.unlock(remote, passphrase: passphrase)
let phoneEngine = SyncEngine(store: phone, remote: remote, key: unlocked.key, storeID: unlocked.storeID)
try await phoneEngine.sync()
print(try phone.loadAll(Game.self).map(\.title))  // ["Mario", "Zelda"], and zelda's cover
// snippet.end
// snippet.hide
let phoneDump = try phone.canonicalDump(), laptopDump = try store.canonicalDump()
precondition(phoneDump == laptopDump)
precondition(phone.blobs.contains(cover.hash))
// snippet.show

// snippet.auto
// Push about 2 s after local commits, pull every 60 s, back off (1 s doubling to 5 min)
// while the remote cannot be reached. Local writes keep working meanwhile.
let auto = AutoSync(engine: engine, configuration: AutoSync.Configuration())
let eventLog = Task {
    for await event in auto.events() {
        switch event {
        case let .synced(report): print("synced: \(report.applied) applied, \(report.pushed) pushed")
        case let .failed(error, retryIn): print("sync failed (\(error.code)), retrying in \(retryIn) ms")
        case .paused, .resumed: break
        }
    }
}
await auto.start()  // syncs at once, then keeps syncing
try store.set(zelda, "level", .int(6))
// … when the app quits (or the store closes):
// snippet.hide
// Wait for the level's debounced push (batch 2), so that the phone pulls it below.
while try SyncEngine.pushedSeq(in: store) < 2 {
    try await Task.sleep(for: .milliseconds(100))
}
// snippet.show
await auto.stop()  // lets a sync in flight finish, then ends the loop and its events
await eventLog.value
// snippet.end

// snippet.hide
try await phoneEngine.sync()
let zeldaOnPhone = try phone.load(Game.self, id: "zelda")
precondition(zeldaOnPhone?.level == 6)
try FileManager.default.removeItem(atPath: folder)
print("GettingStarted: ok")
