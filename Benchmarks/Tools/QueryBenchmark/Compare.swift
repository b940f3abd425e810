import ConcordCore
import ConcordStore
import Foundation
import GRDB

/// One figure: the rounds' times on each side and the median of their ratios.
func line(_ name: String, raw: [Double], store: [Double], unit: String = "ms", scale: Double = 1_000) {
    let ratios = zip(raw, store).map { $0 / $1 }
    print(String(format: "%@: raw %.2f %@, store %.2f %@, ratio %.2f (rounds %@)", name, median(raw) * scale, unit,
                 median(store) * scale, unit, median(ratios), ratios.map { String(format: "%.2f", $0) }.joined(separator: " ")))
}

/// The query of the benchmark: owned games of at least level `level`, by level then title,
/// 50 at a time.
func storeQuery(_ level: Int) -> Query {
    Query(Game.collection)
        .filter(.field("level", .greaterOrEqual, .int(Int64(level))) && .field("owned", .equal, .bool(true)))
        .order(by: "level").order(by: "title").limit(50)
}

/// The same query on the plain table.
let rawQuerySQL = "SELECT * FROM games WHERE level >= ? AND owned = 1 ORDER BY level, title, id LIMIT 50"

/// A plain row as the store's results hold a record: its id and its fields by name.
func fields(_ row: Row) -> (id: String, fields: [(name: String, value: FieldValue)]) {
    (id: row[0], fields: [
        ("level", .scalar(.int(row[1]))), ("note", .scalar(.string(row[2]))), ("owned", .scalar(.bool(row[3]))),
        ("rating", .scalar(.double(row[4]))), ("title", .scalar(.string(row[5]))),
    ])
}

func compare(directory: String, records: Int, rounds: Int) throws {
    let storePath = directory + "/query-store.db"
    let rawPath = directory + "/query-raw.db"
    let undeclaredPath = directory + "/query-undeclared.db"
    for path in [storePath, rawPath, undeclaredPath] { removeDatabase(path) }
    defer { for path in [storePath, rawPath, undeclaredPath] { removeDatabase(path) } }
    print("records=\(records) rounds=\(rounds) dir=\(directory)")

    // (c) Local writes: the declared collection, the same collection undeclared, raw SQLite.
    let store = try Store(path: storePath)
    try store.declare(Game.self)
    let undeclared = try Store(path: undeclaredPath)
    let raw = [try seconds { try rawWrite(path: rawPath, records: records, perTransaction: 1_000) }]
    let declaredWrite = [try seconds { try storeWrite(store, collection: Game.collection, records: records, perTransaction: 1_000) }]
    let undeclaredWrite = [try seconds { try storeWrite(undeclared, collection: Game.collection, records: records, perTransaction: 1_000) }]
    line("local writes, declared collection vs raw SQLite (\(records) records x 5 fields, 1,000 per transaction)", raw: raw, store: declaredWrite)
    line("local writes, the same collection undeclared vs raw SQLite", raw: raw, store: undeclaredWrite)
    line("local writes, declared vs undeclared (what the declared table costs)", raw: undeclaredWrite, store: declaredWrite)

    let pool = try plainPool(rawPath)
    guard try store.count(Query(Game.collection)) == records,
          try pool.read({ db in try Int.fetchOne(db, sql: "SELECT count(*) FROM games") }) == records else {
        throw Failure("the two sides do not hold \(records) records each")
    }
    // Both sides give the same answers before anything is timed.
    for level in [0, 500, 990] {
        let mine = try store.query(Game.self, storeQuery(level))
        let theirs = try pool.read { db in try Game.fetchAll(db, sql: rawQuerySQL, arguments: [level]) }
        guard mine == theirs, !mine.isEmpty else { throw Failure("the query's results differ at level \(level)") }
    }
    guard try store.load(Game.self, id: "game7") == pool.read({ db in try Game.fetchOne(db, key: "game7") }) else {
        throw Failure("the point reads differ")
    }

    // (a) The query, 1,000 times a round with levels across the range.
    let queries = 1_000
    var rawTimes: [Double] = [], storeTimes: [Double] = [], rawTyped: [Double] = [], storeTyped: [Double] = []
    for _ in 0..<rounds {
        rawTimes.append(try seconds { try rawRowsQueries(pool, queries) })
        storeTimes.append(try seconds { try storeRowsQueries(store, queries) })
        rawTyped.append(try seconds { try rawTypedQueries(pool, queries) })
        storeTyped.append(try seconds { try storeTypedQueries(store, queries) })
    }
    line("query (filter, order by 2 keys, limit 50) x \(queries), rows: store.query vs GRDB Row.fetchAll", raw: rawTimes, store: storeTimes)
    line("query x \(queries), typed: store.query(Game.self) vs GRDB Game.fetchAll (FetchableRecord)", raw: rawTyped, store: storeTyped)

    // (b) Point reads of a whole record, 10,000 a round.
    let reads = 10_000
    rawTimes = []; storeTimes = []; rawTyped = []; storeTyped = []
    for _ in 0..<rounds {
        rawTimes.append(try seconds { try rawRowReads(pool, reads, records) })
        storeTimes.append(try seconds { try storeRowReads(store, reads, records) })
        rawTyped.append(try seconds { try rawTypedReads(pool, reads, records) })
        storeTyped.append(try seconds { try storeTypedReads(store, reads, records) })
    }
    line("point read x \(reads), fields: store.record vs GRDB Row.fetchOne", raw: rawTimes, store: storeTimes)
    line("point read x \(reads), typed: store.load(Game.self) vs GRDB Game.fetchOne (cached statement)", raw: rawTyped, store: storeTyped)

    // (b') The same against GRDB reading outside a transaction (`unsafeRead`): a point read
    // is one statement, which reads one committed state alone, as the store's does; GRDB's
    // `read` adds a BEGIN and a COMMIT around it.
    rawTimes = []; storeTimes = []; rawTyped = []; storeTyped = []
    for _ in 0..<rounds {
        rawTimes.append(try seconds { try rawRowReadsOneStatement(pool, reads, records) })
        storeTimes.append(try seconds { try storeRowReads(store, reads, records) })
        rawTyped.append(try seconds { try rawTypedReadsOneStatement(pool, reads, records) })
        storeTyped.append(try seconds { try storeTypedReads(store, reads, records) })
    }
    line("point read x \(reads), fields: store.record vs GRDB Row.fetchOne in unsafeRead (no transaction)", raw: rawTimes, store: storeTimes)
    line("point read x \(reads), typed: store.load(Game.self) vs GRDB Game.fetchOne in unsafeRead (no transaction)", raw: rawTyped, store: storeTyped)
}

// The timed loops, one function each so that a profiler can count each alone
// (`profile` mode, README.md "Queries").

/// The query `count` times, levels across the range, rows through GRDB on the plain table.
func rawRowsQueries(_ pool: DatabasePool, _ count: Int) throws {
    for index in 0..<count {
        let level = (index &* 37) % 1_000
        let rows = try pool.read { db in try Row.fetchAll(db.cachedStatement(sql: rawQuerySQL), arguments: [level]).map(fields) }
        if rows.isEmpty && level < 990 { throw Failure("no rows") }
    }
}

func storeRowsQueries(_ store: Store, _ count: Int) throws {
    for index in 0..<count {
        let level = (index &* 37) % 1_000
        let rows = try store.query(storeQuery(level))
        if rows.isEmpty && level < 990 { throw Failure("no rows") }
    }
}

func rawTypedQueries(_ pool: DatabasePool, _ count: Int) throws {
    for index in 0..<count {
        let level = (index &* 37) % 1_000
        let games = try pool.read { db in try Game.fetchAll(db.cachedStatement(sql: rawQuerySQL), arguments: [level]) }
        if games.isEmpty && level < 990 { throw Failure("no rows") }
    }
}

func storeTypedQueries(_ store: Store, _ count: Int) throws {
    for index in 0..<count {
        let level = (index &* 37) % 1_000
        let games = try store.query(Game.self, storeQuery(level))
        if games.isEmpty && level < 990 { throw Failure("no rows") }
    }
}

/// `count` point reads by id of a whole record, ids scattered over `records`.
func rawRowReads(_ pool: DatabasePool, _ count: Int, _ records: Int) throws {
    for index in 0..<count {
        let row = try pool.read { db in try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM games WHERE id = ?"), arguments: ["game\((index &* 7_919) % records)"]).map(fields) }
        if row == nil { throw Failure("missing") }
    }
}

func storeRowReads(_ store: Store, _ count: Int, _ records: Int) throws {
    for index in 0..<count where try store.record(RecordRef(collection: Game.collection, id: "game\((index &* 7_919) % records)")) == nil {
        throw Failure("missing")
    }
}

func rawTypedReads(_ pool: DatabasePool, _ count: Int, _ records: Int) throws {
    for index in 0..<count where try pool.read({ db in
        try Game.fetchOne(db.cachedStatement(sql: "SELECT * FROM games WHERE id = ?"), arguments: ["game\((index &* 7_919) % records)"])
    }) == nil {
        throw Failure("missing")
    }
}

func rawRowReadsOneStatement(_ pool: DatabasePool, _ count: Int, _ records: Int) throws {
    for index in 0..<count {
        let row = try pool.unsafeRead { db in try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM games WHERE id = ?"), arguments: ["game\((index &* 7_919) % records)"]).map(fields) }
        if row == nil { throw Failure("missing") }
    }
}

func rawTypedReadsOneStatement(_ pool: DatabasePool, _ count: Int, _ records: Int) throws {
    for index in 0..<count where try pool.unsafeRead({ db in
        try Game.fetchOne(db.cachedStatement(sql: "SELECT * FROM games WHERE id = ?"), arguments: ["game\((index &* 7_919) % records)"])
    }) == nil {
        throw Failure("missing")
    }
}

func storeTypedReads(_ store: Store, _ count: Int, _ records: Int) throws {
    for index in 0..<count where try store.load(Game.self, id: "game\((index &* 7_919) % records)") == nil {
        throw Failure("missing")
    }
}

/// The timed loops once each over stores kept in `directory` (filled at the first run).
func profile(directory: String, records: Int, queries: Int, reads: Int) throws {
    let storePath = directory + "/profile-store.db", rawPath = directory + "/profile-raw.db"
    let store = try Store(path: storePath)
    try store.declare(Game.self)
    if try store.count(Query(Game.collection)) != records {
        for path in [storePath, rawPath] { removeDatabase(path) }
        return try profile(directory: directory, records: records, queries: queries, reads: reads, filling: true)
    }
    let pool = try plainPool(rawPath)
    try rawRowsQueries(pool, queries)
    try storeRowsQueries(store, queries)
    try rawTypedQueries(pool, queries)
    try storeTypedQueries(store, queries)
    try rawRowReads(pool, reads, records)
    try storeRowReads(store, reads, records)
    try rawTypedReads(pool, reads, records)
    try storeTypedReads(store, reads, records)
    try rawRowReadsOneStatement(pool, reads, records)
    try rawTypedReadsOneStatement(pool, reads, records)
    print("profiled \(queries) queries and \(reads) point reads per loop over \(records) records")
}

private func profile(directory: String, records: Int, queries: Int, reads: Int, filling: Bool) throws {
    do {
        let store = try Store(path: directory + "/profile-store.db")
        try store.declare(Game.self)
        try storeWrite(store, collection: Game.collection, records: records, perTransaction: 1_000)
        try rawWrite(path: directory + "/profile-raw.db", records: records, perTransaction: 1_000)
    }
    try profile(directory: directory, records: records, queries: queries, reads: reads)
}
