import ConcordCore
import ConcordStore
import Foundation
import GRDB
import GRDBSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The records both sides hold: a game library. Decoded from the store (`StoredRecord`) and
/// from the plain table through GRDB (`FetchableRecord`) alike.
struct Game: DeclaredRecord, FetchableRecord, TableRecord, Equatable {
    static let collection = "games"
    static let databaseTableName = "games"
    static let indexed = ["level", "title"]
    var id: String
    var title: String
    var level: Int
    var rating: Double
    var owned: Bool
    var note: String

    /// Record `index`'s values: titles in a scrambled order, levels 0…999, ratings with a
    /// fraction, a third owned.
    static func make(_ index: Int, records: Int) -> Game {
        Game(id: "game\(index)", title: "Game \((index &* 7_919) % records)", level: (index &* 31) % 1_000,
             rating: Double(index % 500) / 10 + 0.25, owned: index % 3 == 0, note: "note \(index)")
    }

    /// The fields as the store writes them, in name order.
    var fields: [(String, ScalarValue)] {
        [("level", .int(Int64(level))), ("note", .string(note)), ("owned", .bool(owned)), ("rating", .double(rating)), ("title", .string(title))]
    }
}

/// The plain table: one typed column per field, the same indexes as the declaration.
let plainTableSQL = """
    CREATE TABLE games (id TEXT PRIMARY KEY NOT NULL, level INTEGER, note TEXT, owned INTEGER, rating REAL, title TEXT);
    CREATE INDEX games_level ON games (level);
    CREATE INDEX games_title ON games (title);
    """

/// Raw SQLite through the C API writing the same rows into the plain table: an upsert per
/// record, `perTransaction` records per transaction; WAL and `synchronous = FULL`, as the store.
func rawWrite(path: String, records: Int, perTransaction: Int) throws {
    var db: OpaquePointer?
    func exec(_ sql: String) throws {
        guard sqlite3_exec(db, sql, nil, nil, nil) == SQLITE_OK else { throw Failure(String(cString: sqlite3_errmsg(db))) }
    }
    guard sqlite3_open(path, &db) == SQLITE_OK else { throw Failure("open \(path)") }
    defer { sqlite3_close(db) }
    try exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;")
    try exec(plainTableSQL)
    var statement: OpaquePointer?
    let sql = """
        INSERT INTO games (id, level, note, owned, rating, title) VALUES (?1, ?2, ?3, ?4, ?5, ?6)
        ON CONFLICT (id) DO UPDATE SET level = ?2, note = ?3, owned = ?4, rating = ?5, title = ?6
        """
    guard sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK else { throw Failure("prepare") }
    defer { sqlite3_finalize(statement) }
    let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
    for first in stride(from: 0, to: records, by: perTransaction) {
        try exec("BEGIN")
        for index in first..<min(records, first + perTransaction) {
            let game = Game.make(index, records: records)
            sqlite3_bind_text(statement, 1, game.id, -1, transient)
            sqlite3_bind_int64(statement, 2, Int64(game.level))
            sqlite3_bind_text(statement, 3, game.note, -1, transient)
            sqlite3_bind_int64(statement, 4, game.owned ? 1 : 0)
            sqlite3_bind_double(statement, 5, game.rating)
            sqlite3_bind_text(statement, 6, game.title, -1, transient)
            guard sqlite3_step(statement) == SQLITE_DONE else { throw Failure(String(cString: sqlite3_errmsg(db))) }
            sqlite3_reset(statement)
        }
        try exec("COMMIT")
    }
}

/// The store writing the same records: one `write {}` of `perTransaction` records, each
/// record's five fields set.
func storeWrite(_ store: Store, collection: String, records: Int, perTransaction: Int) throws {
    for first in stride(from: 0, to: records, by: perTransaction) {
        try store.write { tx throws(ConcordError) in
            for index in first..<min(records, first + perTransaction) {
                let game = Game.make(index, records: records)
                let ref = RecordRef(collection: collection, id: game.id)
                for (name, value) in game.fields { try tx.set(ref, name, value) }
            }
        }
    }
}

/// Opens the plain table's database through GRDB, as an app using GRDB would.
func plainPool(_ path: String) throws -> DatabasePool {
    var configuration = GRDB.Configuration()
    configuration.busyMode = .timeout(10)
    return try DatabasePool(path: path, configuration: configuration)
}

struct Failure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

func seconds(_ body: () throws -> Void) rethrows -> Double {
    let start = ContinuousClock.now
    try body()
    let elapsed = ContinuousClock.now - start
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
}

/// A line of `/proc/self/status` in KiB (`VmHWM`: the peak resident set; `VmRSS`: now), or -1.
func status(_ key: String) -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return -1 }
    for line in text.split(separator: "\n") where line.hasPrefix(key + ":") {
        return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? -1
    }
    return -1
}

func removeDatabase(_ path: String) {
    for suffix in ["", "-wal", "-shm", ".blobs"] { try? FileManager.default.removeItem(atPath: path + suffix) }
}
