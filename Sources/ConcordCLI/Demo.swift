import ArgumentParser
import Concord

/// `concord demo`: three replicas edit concurrently and converge.
///
/// Until the store and sync layers land, the replicas live in memory and exchange the
/// encoded bytes of their deltas directly (through ``DeltaCodec``); the merge is the real
/// one every later layer uses.
struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show three replicas editing concurrently and converging.")

    mutating func run() throws {
        var demo = DemoRun()
        try demo.run()
    }
}

struct DemoRun {
    let names = ["laptop", "phone", "tablet"]
    var replicas: [Replica] = (1...3).map { Replica(id: ReplicaID(high: 0xc0c0_0000 + UInt64($0), low: UInt64($0))) }
    var now: UInt64 = 1_767_268_800_000
    var bytesShipped = 0
    let game = RecordRef(collection: "games", id: "zelda")

    mutating func run() throws {
        let game = self.game
        say("Three replicas — laptop, phone, tablet — each hold a full copy of the store.")
        write(0, "creates games/zelda {title: \"Zelda\", level: 1, tags: [adventure]}") {
            $0.create(game, ["title": .scalar(.string("Zelda")), "level": .scalar(.int(1)),
                             "tags": .set([.string("adventure")])], now: $1)
        }
        try syncAll()
        show("after the first sync")

        say("\nOffline, all three edit at once:")
        write(0, "sets level = 2") { $0.set(game, "level", .int(2), now: $1) }
        write(1, "sets level = 3") { $0.set(game, "level", .int(3), now: $1) }
        write(1, "adds tag \"classic\"") { $0.add(game, "tags", .string("classic"), now: $1) }
        write(2, "removes tag \"adventure\"") { $0.remove(game, "tags", .string("adventure"), now: $1) }
        let save = RecordRef(collection: "saves", id: "slot1")
        write(0, "saves saves/slot1 file = «castle» (\(Self.castle.size) bytes)") { $0.setFile(save, "data", Self.castle, now: $1) }
        try syncAll()
        write(1, "saves saves/slot1 file = «dungeon» (\(Self.dungeon.size) bytes)") { $0.setFile(save, "data", Self.dungeon, now: $1) }
        write(2, "deletes saves/slot1") { $0.delete(save, now: $1) }
        write(0, "saves saves/slot1 file = «forest» (\(Self.forest.size) bytes)") { $0.setFile(save, "data", Self.forest, now: $1) }
        try syncAll()
        show("after syncing the concurrent edits")
        try checkConverged()

        say("\nWhat the merge did:")
        say("  level: the concurrent writes 2 and 3 resolve to the greater stamp on every replica (the phone's clock runs a day behind, so the laptop's stamp is greater).")
        say("  tags: the phone's add of \"classic\" and the tablet's remove of \"adventure\" both hold.")
        say("  saves/slot1: the tablet's delete was concurrent with two saves, so the record stays with all its fields.")
        let conflicts = replicas[0].state.conflicts
        say("\nOpen conflicts, identical on every replica:")
        for conflict in conflicts {
            if conflict.kind == Conflict.Kind.fileFork {
                let versions = conflict.versions.map { "\($0.file.hash.hex.prefix(12))… from \(name(of: $0.stamp.replica))" }
                say("  fileFork \(conflict.ref) \(conflict.field ?? ""): \(versions.joined(separator: ", "))")
            } else {
                say("  \(conflict.kind) \(conflict.ref): deleted on one device while edited on another")
            }
        }
        guard conflicts.contains(where: { $0.kind == Conflict.Kind.fileFork }),
              conflicts.contains(where: { $0.kind == Conflict.Kind.deleteUpdate })
        else { throw ValidationError("the demo expected a file fork and a delete/update conflict") }

        say("\nThe laptop resolves the fork by keeping «forest» and keeps the record:")
        write(0, "keeps version \(Self.forest.hash.hex.prefix(12))…") {
            _ = try? $0.keepVersion(save, "data", hash: Self.forest.hash, now: $1)
        }
        write(0, "acknowledges the delete/update by keeping saves/slot1") { $0.keepRecord(save, now: $1) }
        try syncAll()
        show("after resolving")
        try checkConverged()
        guard replicas.allSatisfy({ $0.state.conflicts.isEmpty }) else {
            throw ValidationError("conflicts remain after resolution")
        }
        say("\nNo conflicts remain anywhere. \(bytesShipped) bytes of deltas were exchanged in all.")
        say("(This demo keeps replicas in memory; with the store and sync layers they persist in SQLite and meet in an encrypted folder.)")
    }

    static func file(_ text: String, _ seed: UInt8) -> FileRef {
        // Stand-in content hashes until the store hashes real files with BLAKE2b.
        FileRef(hash: ContentHash(bytes: (0..<32).map { UInt8(truncatingIfNeeded: Int($0) * 7 + Int(seed)) })!,
                size: UInt64(text.utf8.count), mediaType: "application/octet-stream")
    }

    static let castle = file("castle save", 1)
    static let dungeon = file("dungeon save data", 2)
    static let forest = file("forest save, level 9", 3)

    func say(_ text: String) { print(text) }

    func name(of replica: ReplicaID) -> String {
        names[replicas.firstIndex { $0.id == replica } ?? 0]
    }

    mutating func write(_ index: Int, _ text: String, _ body: (inout Replica, UInt64) -> Void) {
        now += 1_000
        // The phone's clock runs a day behind: merges never consult it.
        let local = index == 1 ? now - 86_400_000 : now
        body(&replicas[index], local)
        say("  \(pad(names[index])) \(text)")
    }

    /// Every replica seals its changes; the encoded deltas reach every other replica.
    mutating func syncAll() throws {
        var wire: [[UInt8]] = []
        for index in replicas.indices {
            if let delta = replicas[index].seal() { wire.append(DeltaCodec.encode(delta)) }
        }
        bytesShipped += wire.reduce(0) { $0 + $1.count }
        say("  … sync: \(wire.count) deltas, \(wire.reduce(0) { $0 + $1.count }) bytes")
        for bytes in wire {
            let delta = try DeltaCodec.decode(bytes)
            for index in replicas.indices where replicas[index].id != delta.origin {
                try replicas[index].apply(delta)
            }
        }
    }

    func show(_ moment: String) {
        say("\nCanonical dumps \(moment):")
        for (index, replica) in replicas.enumerated() {
            say("  \(pad(names[index])) \(CanonicalDump.json(of: replica.state))")
        }
    }

    func checkConverged() throws {
        let dumps = Set(replicas.map { CanonicalDump.json(of: $0.state) })
        guard dumps.count == 1 else { throw ValidationError("replicas diverged") }
        say("  ✓ all three dumps are byte-identical")
    }
}

func pad(_ text: String, to width: Int = 6) -> String {
    text + String(repeating: " ", count: max(0, width - text.count))
}
