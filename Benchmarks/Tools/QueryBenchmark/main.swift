// Declared collections and queries against raw GRDB on a plain table (see README.md,
// "Queries"). Every ratio is measured in one run, both sides beside each other.
//
//   QueryBenchmark compare DIR [RECORDS] [ROUNDS]
//       RECORDS games (default 100,000) written through the store into a declared collection
//       and by raw SQLite (the C API) into a plain table with the same columns and indexes,
//       1,000 records per transaction; then queries and point reads, the store's against
//       raw GRDB's on the plain table, ROUNDS rounds (default 5) alternating the sides.
//       Prints one line per measurement and its ratio (raw time ÷ store time: 1 = as fast
//       as raw, 0.5 = half its throughput), the median of the rounds' ratios.
//   QueryBenchmark memory DIR RECORDS
//       Fills DIR/memory.db with RECORDS declared games (kept for the next run), then in a
//       process of its own opens it and runs queries over the whole collection that return
//       a page of 50, printing the peak resident set after each.
//   QueryBenchmark profile DIR RECORDS [QUERIES] [READS]
//       Fills DIR/profile-store.db and DIR/profile-raw.db once (kept), then runs each timed
//       loop of `compare` once (QUERIES queries, default 200; READS point reads, default
//       2,000), for a profiler counting each loop's function alone (README.md, "Queries").
import ConcordCore
import ConcordStore
import Foundation
import GRDB

let arguments = CommandLine.arguments
func usage() -> Never {
    FileHandle.standardError.write(Data("usage: QueryBenchmark compare DIR [RECORDS] [ROUNDS] | memory DIR RECORDS | profile DIR RECORDS [QUERIES] [READS]\n".utf8))
    exit(2)
}
guard arguments.count >= 3 else { usage() }
let directory = arguments[2]
try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)

switch arguments[1] {
case "compare":
    let records = arguments.count > 3 ? Int(arguments[3]) ?? 100_000 : 100_000
    let rounds = arguments.count > 4 ? Int(arguments[4]) ?? 5 : 5
    try compare(directory: directory, records: records, rounds: rounds)
case "memory":
    guard arguments.count == 4, let records = Int(arguments[3]) else { usage() }
    try fillMemoryStore(directory: directory, records: records)
    let child = Process()
    child.executableURL = URL(fileURLWithPath: arguments[0])
    child.arguments = ["memory-query", directory]
    try child.run()
    child.waitUntilExit()
    exit(child.terminationStatus)
case "write":
    // One side's writes alone, for a profiler: QueryBenchmark write DIR RECORDS.
    guard arguments.count == 4, let records = Int(arguments[3]) else { usage() }
    let path = directory + "/write.db"
    removeDatabase(path)
    defer { removeDatabase(path) }
    let store = try Store(path: path)
    if ProcessInfo.processInfo.environment["NO_DECLARE"] == nil { try store.declare(Game.self) }
    // With WRITE_COLLECTION set, into that (undeclared) collection: the triggers' cost alone.
    let collection = ProcessInfo.processInfo.environment["WRITE_COLLECTION"] ?? Game.collection
    print("writes into \(collection): \(try seconds { try storeWrite(store, collection: collection, records: records, perTransaction: 1_000) }) s")
case "profile":
    guard arguments.count >= 4, let records = Int(arguments[3]) else { usage() }
    let queries = arguments.count > 4 ? Int(arguments[4]) ?? 200 : 200
    let reads = arguments.count > 5 ? Int(arguments[5]) ?? 2_000 : 2_000
    try profile(directory: directory, records: records, queries: queries, reads: reads)
case "memory-query":
    try memoryQueries(directory: directory)
default:
    usage()
}
