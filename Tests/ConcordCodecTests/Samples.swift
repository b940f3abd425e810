import ConcordCodec
import ConcordCore

/// Fixed sample objects for golden vectors and mutation tests.
enum Samples {
    static let laptop = ReplicaID(high: 0x0102_0304_0506_0708, low: 0x090a_0b0c_0d0e_0f10)
    static let phone = ReplicaID(high: 0xa1a2_a3a4_a5a6_a7a8, low: 0xa9aa_abac_adae_afb0)
    static let noon: UInt64 = 1_767_268_800_000
    static let file = FileRef(hash: ContentHash(bytes: (0..<32).map { UInt8($0) })!, size: 1_234, mediaType: "image/png")

    /// Two replicas' edits exchanged: every slot kind and every value kind appears.
    static func replicas() -> (laptop: Replica, phone: Replica, laptopDelta: Delta, phoneDelta: Delta) {
        var a = Replica(id: laptop)
        var b = Replica(id: phone)
        let game = RecordRef(collection: "games", id: "zelda")
        try! a.create(game, ["title": .scalar(.string("Zelda")), "level": .scalar(.int(3)), "tags": .set([.string("rpg"), .int(7)])], now: noon)
        try! a.set(game, "score", .double(9.5), now: noon + 1)
        try! a.set(game, "done", .bool(true), now: noon + 2)
        try! a.set(game, "note", .null, now: noon + 3)
        try! a.set(game, "blob", .bytes([0, 1, 0xff]), now: noon + 4)
        try! a.setFile(game, "cover", file, now: noon + 5)
        try! a.delete(RecordRef(collection: "games", id: "zork"), now: noon + 6)
        let laptopDelta = a.seal()!
        try! b.apply(laptopDelta)
        try! b.set(game, "level", .int(-4), now: noon + 10)
        try! b.remove(game, "tags", .int(7), now: noon + 11)
        let phoneDelta = b.seal()!
        try! a.apply(phoneDelta)
        return (a, b, laptopDelta, phoneDelta)
    }
}
