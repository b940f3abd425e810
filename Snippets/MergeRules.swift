// snippet.hide
// The code of the article "The Merge Rules" (Sources/Concord/Concord.docc). `swift build`
// compiles it; `make docs` also runs it, so every outcome it states is checked. Everything
// it writes stays in a new temporary folder, deleted at the end; no network request.
import Foundation
import Concord

let folder = NSTemporaryDirectory() + "concord-merge-rules-" + UUID().uuidString
try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
let remote = try FolderRemote(root: "\(folder)/remote", createIfMissing: true)
// The minimum Argon2id cost protects nothing; it only keeps this run fast.
let (key, storeID) = try await SyncEngine.createRemote(remote, passphrase: "snippet", limits: .minimum)

/// Stops the run unless `condition` holds.
func check(_ condition: @autoclosure () throws(ConcordError) -> Bool, line: UInt = #line) throws(ConcordError) {
    let holds = try condition()
    precondition(holds, "MergeRules.swift:\(line): the stated outcome does not hold")
}

// snippet.show
// snippet.setup
// Two devices, each with its own store, syncing through one remote.
let laptop = try Store(path: "\(folder)/laptop.db")
let phone = try Store(path: "\(folder)/phone.db")
let laptopSync = SyncEngine(store: laptop, remote: remote, key: key, storeID: storeID)
let phoneSync = SyncEngine(store: phone, remote: remote, key: key, storeID: storeID)

/// Syncs every device, then the first again, so that each has seen every change.
func syncAll(_ engines: SyncEngine...) async throws(ConcordError) {
    for engine in engines + engines.prefix(1) { try await engine.sync() }
}

/// What `field` of `ref` reads as in `store`.
func value(_ store: Store, _ ref: RecordRef, _ field: String) throws(ConcordError) -> FieldValue? {
    try store.record(ref)?.first(where: { $0.name == field })?.value
}

let game = RecordRef(collection: "games", id: "zelda")
try laptop.put(game, ["level": .scalar(.int(1)), "tags": .set([.string("adventure")])])
try await syncAll(laptopSync, phoneSync)
// snippet.end

// snippet.registers
// Offline, both devices set the same field.
try laptop.set(game, "level", .int(2))
try phone.set(game, "level", .int(3))
try await syncAll(laptopSync, phoneSync)
// Both now read the write with the greater stamp: 2 or 3, the same on every device.
let level = try value(laptop, game, "level")
try check(level == value(phone, game, "level"))
// snippet.end
// snippet.hide
precondition(level == .scalar(.int(2)) || level == .scalar(.int(3)))
// snippet.show

// snippet.causal
// A write made after seeing another wins over it, even if this device's clock is behind.
try phone.set(game, "level", .int(4))
try await syncAll(phoneSync, laptopSync)
try check(value(laptop, game, "level") == .scalar(.int(4)))
// snippet.end

// snippet.sets
// Offline: the phone removes "adventure" while the laptop adds it again, and adds "classic".
try phone.remove(game, "tags", .string("adventure"))  // removes the add it has seen
try laptop.add(game, "tags", .string("adventure"))  // an add the phone has not seen
try laptop.add(game, "tags", .string("classic"))
try await syncAll(laptopSync, phoneSync)
// The concurrent add wins over the remove.
try check(value(phone, game, "tags") == .set([.string("adventure"), .string("classic")]))

// A remove that has seen every add of an element removes it everywhere.
try phone.remove(game, "tags", .string("classic"))
try await syncAll(phoneSync, laptopSync)
try check(value(laptop, game, "tags") == .set([.string("adventure")]))
// snippet.end

// snippet.delete
let save = RecordRef(collection: "saves", id: "slot1")
try laptop.put(save, ["label": .scalar(.string("Hyrule Castle"))])
try await syncAll(laptopSync, phoneSync)

// Offline: the laptop deletes the record while the phone edits it.
try laptop.delete(save)
try phone.set(save, "hearts", .int(5))
try await syncAll(laptopSync, phoneSync)
// The record stays, with all its fields, on both devices, and a conflict says so.
try check(laptop.record(save)?.map(\.name) == ["hearts", "label"])
try check(laptop.conflicts().map(\.kind) == [.deleteUpdate])
// snippet.end

// snippet.recreate
// A record re-created after its delete was seen starts clean: no old field comes back.
let slot2 = RecordRef(collection: "saves", id: "slot2")
try laptop.put(slot2, ["label": .scalar(.string("Lost Woods")), "hearts": .scalar(.int(3))])
try laptop.delete(slot2)
try laptop.put(slot2, ["hearts": .scalar(.int(1))])
try check(laptop.record(slot2)?.map(\.name) == ["hearts"])
// snippet.end

// snippet.files
// Offline, both devices save different content to one file field.
let forest = try laptop.attachFile(save, "data", bytes: Array("forest save".utf8), mediaType: "text/plain")
let dungeon = try phone.attachFile(save, "data", bytes: Array("dungeon save".utf8), mediaType: "text/plain")
try await syncAll(laptopSync, phoneSync)
// Both versions are kept on every device; meanwhile everyone reads the same one (the greater stamp).
let fork = try phone.conflicts().first { $0.kind == .fileFork }
try check(fork?.field == "data" && Set(fork?.versions.map(\.file.hash) ?? []) == [forest.hash, dungeon.hash])
try check(value(laptop, save, "data") == value(phone, save, "data"))
// snippet.end

// snippet.converge
// Converged: the canonical dump (visible records and open conflicts, as JSON with sorted
// keys) is byte for byte the same on every device.
let dump = try laptop.canonicalDump()
try check(dump == phone.canonicalDump())
print(dump)
// snippet.end

// snippet.hide
try FileManager.default.removeItem(atPath: folder)
print("MergeRules: ok")
