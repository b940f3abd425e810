import ConcordCore
import ConcordStore
import Foundation

/// Writes `records` declared games into DIR/memory.db unless it already holds them.
func fillMemoryStore(directory: String, records: Int) throws {
    let path = directory + "/memory.db"
    let store = try Store(path: path)
    try store.declare(Game.self)
    let held = try store.count(Query(Game.collection))
    if held == records { print("memory.db holds \(records) games already"); return }
    let start = ContinuousClock.now
    try storeWrite(store, collection: Game.collection, records: records, perTransaction: 1_000)
    print("filled memory.db with \(records) games in \(ContinuousClock.now - start), writer's peak RSS \(status("VmHWM") / 1_024) MiB")
}

/// Opens DIR/memory.db and runs queries over the whole collection, each returning a page of
/// 50 records, printing the peak resident set after each: it must stay near the open store's.
func memoryQueries(directory: String) throws {
    let store = try Store(path: directory + "/memory.db")
    let all = try store.count(Query(Game.collection))
    func report(_ what: String, _ body: () throws -> Int) rethrows {
        let start = ContinuousClock.now
        let count = try body()
        print(String(format: "%@: %d records, %@, RSS %d MiB, peak RSS %d MiB", what, count, "\(ContinuousClock.now - start)",
                     status("VmRSS") / 1_024, status("VmHWM") / 1_024))
    }
    report("opened, counted \(all) records") { all }
    try report("first page by title (indexed)") { try store.query(Query(Game.collection).order(by: "title").limit(50)).count }
    try report("first page by rating (not indexed: a sort of every record)") {
        try store.query(Query(Game.collection).order(by: "rating", descending: true).limit(50)).count
    }
    try report("owned, level >= 500, by note (not indexed), page 1") {
        try store.query(Query(Game.collection).filter(.field("level", .greaterOrEqual, .int(500)) && .field("owned", .equal, .bool(true)))
            .order(by: "note").limit(50)).count
    }
    try report("2,000 pages of 50 by title through the cursor (100,000 records)") {
        var query = Query(Game.collection).order(by: "title").limit(50)
        var read = 0
        for _ in 0..<2_000 {
            let page = try store.query(query)
            guard let last = page.last else { break }
            read += page.count
            query = query.after(last.id)
        }
        return read
    }
    try report("count where level >= 500") { try store.count(Query(Game.collection).filter(.field("level", .greaterOrEqual, .int(500)))) }
}
