import ConcordCore
import ConcordTestServers
import ConcordTesting
import Foundation
import Testing

/// Values a person types are stored and synced byte for byte, or refused with exit 2 before
/// anything is stored — never changed silently.
@Suite struct InputTests {
    /// b's fields of record c/r exactly as `get --json` prints them (the canonical dump's
    /// spelling), or nil when it has no such record.
    static func printedFields(_ cli: CLI, _ name: String) throws -> String? {
        let result = try cli.run(["get", "c", "r", "--json", "--store", cli.path("\(name).db")])
        guard result.status == 0 else { return nil }
        let prefix = "{\"collection\":\"c\",\"fields\":"
        let suffix = ",\"id\":\"r\"}"
        let text = result.stdout.trimmingCharacters(in: .newlines)
        #expect(text.hasPrefix(prefix) && text.hasSuffix(suffix), "\(text)")
        return String(text.dropFirst(prefix.count).dropLast(suffix.count))
    }

    /// The members of a flat JSON object as printed: each name and its value's exact text.
    static func members(of object: String) -> [(name: String, text: String)] {
        var members: [(name: String, text: String)] = []
        var depth = 0
        var inString = false
        var escaped = false
        var current = ""
        for character in object.dropFirst().dropLast() {
            if inString {
                if escaped { escaped = false } else if character == "\\" { escaped = true } else if character == "\"" { inString = false }
            } else if character == "\"" {
                inString = true
            } else if character == "{" || character == "[" {
                depth += 1
            } else if character == "}" || character == "]" {
                depth -= 1
            } else if character == ",", depth == 0 {
                members.append(split(current))
                current = ""
                continue
            }
            current.append(character)
        }
        if !current.isEmpty { members.append(split(current)) }
        return members
    }

    private static func split(_ member: String) -> (name: String, text: String) {
        let colon = member.firstIndex(of: ":")!
        return (String(member[member.index(after: member.startIndex)..<member.index(before: colon)]), String(member[member.index(after: colon)...]))
    }

    static func expected(_ values: [(String, ScalarValue)]) -> String {
        CanonicalDump.json(of: values.sorted { $0.0.utf8.lexicographicallyPrecedes($1.0.utf8) }.map { ($0.0, FieldValue.scalar($0.1)) })
    }

    /// `put` with 60,000 fields stores every one of them, and its options and usage errors
    /// are the parser's as before, wherever they stand among the fields. The argument
    /// parser once collected the fields in quadratic time: 237 s for these 60,000 (a
    /// release build), so the time limit here fails it.
    @Test(.timeLimit(.minutes(2))) func putWith60000FieldsStoresEveryFieldInOnePass() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.on("a", ["init"])
        let count = 60_000
        let fields = (0..<count).map { "f\($0)=\($0)" }
        // Options among the fields, and after `--` only fields.
        let put = try cli.ok(["put", "c", "r"] + fields[..<30_000] + ["--store", cli.path("a.db"), "--json"] + fields[30_000...])
        let printed = try put.object()
        let stored = try #require(printed["fields"] as? [String: Any])
        #expect(stored.count == count)
        #expect(stored["f0"] as? Int == 0 && stored["f59999"] as? Int == 59_999)
        try cli.ok(["put", "--store", cli.path("a.db"), "c", "r2", "--", "g=1", "h=2"])
        #expect(try cli.on("a", ["get", "c", "r2"]).stdout.contains("h"))
        // A field given twice, an unknown option, or no field: refused with exit 2.
        for arguments in [["c", "r", "x=1"] + fields[..<1_000] + ["x=2"], ["c", "r", "x=1", "--bogus", "y=2"], ["c", "r"]] {
            let refused = try cli.run(["put"] + arguments + ["--store", cli.path("a.db")])
            #expect(refused.status == 2, "\(refused.stderr)")
            #expect(refused.stderrLines.count == 1, "\(refused.stderr)")
        }
    }

    @Test func aNulInsideAStringIsKeptOnEveryReplica() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        try cli.on("a", ["put", "c", "r", #"n="a\u0000b""#, #"s=["x\u0000y"]"#])
        try cli.syncAll(["a", "b"])
        #expect(try Self.printedFields(cli, "b") == Self.expected([("n", .string("a\u{0}b"))]).dropLast() + #","s":["x\u0000y"]}"#)
    }

    @Test func argumentsThatAreNotUTF8AreRefused() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        // Through a shell: Swift strings passed as arguments are always valid UTF-8.
        for arguments in [#"put c "$(printf 'a\377')" n=1"#, #"put c r "$(printf 'n=\376')""#] {
            let shell = try Subprocess.run(
                "/bin/sh", ["-c", "\"$CONCORD\" \(arguments) --store \"$STORE\" 2>\"$ERR\""],
                environment: ["CONCORD": CLI.binary.path, "STORE": cli.path("a.db"), "ERR": cli.path("err"), "CONCORD_KDF_LIMITS": "minimum"])
            #expect(shell == .exited(2), "\(arguments)")
            let message = try String(contentsOfFile: cli.path("err"), encoding: .utf8)
            #expect(message.contains("not valid UTF-8") && message.split(separator: "\n").count == 1, "\(message)")
        }
        #expect(try cli.on("a", ["dump"]).stdout.contains("\"c\"") == false)
    }

    @Test func numbersThatDoNotFitAreRefusedNotRounded() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        for value in ["18446744073709551616", "-9223372036854775809", "1e400", "-1e400", "1e-400", "[1, 1e400]"] {
            let result = try cli.run(["put", "c", "r", "x=\(value)", "--store", cli.path("a.db")])
            expectFailure(result, status: 2, mentioning: ["x"])
        }
        #expect(try Self.printedFields(cli, "a") == nil)
        // What fits is kept exactly.
        try cli.on("a", ["put", "c", "r", "max=9223372036854775807", "min=-9223372036854775808", "tiny=5e-324", "big=1.7976931348623157e308"])
        #expect(try Self.printedFields(cli, "a") == Self.expected([
            ("max", .int(.max)), ("min", .int(.min)), ("tiny", .double(.leastNonzeroMagnitude)), ("big", .double(.greatestFiniteMagnitude)),
        ]))
    }

    @Test func numericOptionsOutOfRangeAreRefused() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        for days in ["213503982335", "-1", "1.5", "ten"] {
            expectFailure(try cli.run(["compact", "--grace-days", days, "--store", cli.path("a.db")]), status: 2, mentioning: ["--grace-days"])
        }
        for seconds in ["-5", "0", "1e-9", "0.05", "nan", "1e300"] {
            expectFailure(try cli.run(["sync", "--watch", "--interval", seconds, "--store", cli.path("a.db")]), status: 2, mentioning: ["--interval"])
        }
    }

    @Test func jsonThatIsNotAValueIsNamedAndNotEchoedWhole() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a"])
        let long = "[" + Array(repeating: "{\"a\":1}", count: 15_000).joined(separator: ",") + "]"
        let result = try cli.run(["put", "c", "r", "x=\(long)", "--store", cli.path("a.db")])
        expectFailure(result, status: 2, mentioning: ["not a value Concord stores"])
        #expect(result.stderr.utf8.count < 600, "\(result.stderr.utf8.count) bytes on stderr")
        expectFailure(try cli.run(["put", "c", "r", #"x="\ud800""#, "--store", cli.path("a.db")]), status: 2, mentioning: ["x"])
    }

    @Test func whateverGetPrintsPutAcceptsAndStoresIdentically() throws {
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        let values: [(String, ScalarValue)] = [
            ("nan", .double(.nan)), ("inf", .double(.infinity)), ("ninf", .double(-.infinity)), ("nzero", .double(-0.0)),
            ("bytes", .bytes([0, 1, 254, 255])), ("null", .null), ("t", .bool(true)),
        ]
        try cli.on("a", ["put", "c", "r"] + values.map { "\($0.0)=\(CanonicalDump.json(of: [("v", FieldValue.scalar($0.1))]).dropFirst(5).dropLast())" })
        let printed = try #require(try Self.printedFields(cli, "a"))
        #expect(printed == Self.expected(values))
        // Each value exactly as printed, put back on b, is stored as the same value.
        let members = Self.members(of: printed)
        #expect(members.count == values.count)
        try cli.on("b", ["put", "c", "r"] + members.map { "\($0.name)=\($0.text)" })
        #expect(try Self.printedFields(cli, "b") == printed)
    }

    /// Random values of every kind — NUL, every Unicode plane, \u escapes with surrogate
    /// pairs and lone surrogates, integer and double extremes, NaN and infinities, bytes —
    /// through `put` on a, `sync`, and `get --json` on b: identical, or refused with exit 2
    /// before anything is stored.
    @Test func randomValuesRoundTripThroughSyncOrAreRefused() throws {
        let seed = UInt64(ProcessInfo.processInfo.environment["CONCORD_INPUT_SEED"] ?? "") ?? 20261124
        var random = SeededGenerator(seed: seed)
        let cli = try CLI()
        defer { cli.cleanUp() }
        try cli.replicas(["a", "b"])
        var accepted: [(String, ScalarValue)] = []
        var texts: [String] = []
        var refused: [String] = []
        for index in 0..<40 {
            let name = "f\(index)"
            switch random.int(0...7) {
            case 0, 1:
                // A string of scalars from every plane, written raw or as \u escapes.
                var scalars: [Unicode.Scalar] = []
                for _ in 0..<random.int(0...6) {
                    let plane = random.pick([0, 0, 1, 2, 3, 14, 15, 16])
                    var value = UInt32(plane) << 16 | UInt32(random.int(0...0xFFFF))
                    if (0xD800...0xDFFF).contains(value) { value = 0 }
                    scalars.append(Unicode.Scalar(value) ?? "\u{0}")
                }
                let string = String(String.UnicodeScalarView(scalars))
                var json = "\""
                for scalar in scalars {
                    if random.chance(0.5) || scalar.value < 0x20 || scalar == "\"" || scalar == "\\" {
                        for unit in String(scalar).utf16 { json += String(format: "\\u%04x", unit) }
                    } else {
                        json.unicodeScalars.append(scalar)
                    }
                }
                accepted.append((name, .string(string)))
                texts.append("\(name)=\(json)\"")
            case 2:
                let value = random.pick([Int64.min, .max, 0, -1, Int64(random.int(Int.min...Int.max))])
                accepted.append((name, .int(value)))
                texts.append("\(name)=\(value)")
            case 3:
                let bits = random.next()
                let value = random.pick([Double(bitPattern: bits), 0, -0.0, .leastNonzeroMagnitude, .greatestFiniteMagnitude, .nan, .infinity, -.infinity])
                let shown = CanonicalDump.json(of: [("v", FieldValue.scalar(.double(value)))]).dropFirst(5).dropLast()
                accepted.append((name, .double(value)))
                texts.append("\(name)=\(shown)")
            case 4:
                let bytes = (0..<random.int(0...8)).map { _ in UInt8(random.int(0...255)) }
                accepted.append((name, .bytes(bytes)))
                texts.append("\(name)={\"$bytes\":\"\(Hex.encode(bytes))\"}")
            case 5:
                refused.append("\(name)=\"\\u\(random.pick(["d800", "dbff", "dc00", "dfff"]))\"")
            case 6:
                refused.append("\(name)=\(random.pick(["9223372036854775808", "-9223372036854775809", "1e309", "-2e308", "1e-330", "123456789012345678901234567890"]))")
            default:
                accepted.append((name, .bool(random.chance(0.5))))
                texts.append("\(name)=\(accepted.last!.1 == .bool(true) ? "true" : "false")")
            }
        }
        for text in refused {
            let result = try cli.run(["put", "c", "r", text, "--store", cli.path("a.db")])
            #expect(result.status == 2, "seed \(seed): \(text) was not refused: \(result.stderr)")
        }
        #expect(try Self.printedFields(cli, "a") == nil, "seed \(seed): a refused value stored something")
        try cli.on("a", ["put", "c", "r"] + texts)
        try cli.syncAll(["a", "b"])
        #expect(try Self.printedFields(cli, "b") == Self.expected(accepted), "seed \(seed) (replay with CONCORD_INPUT_SEED=\(seed))")
    }
}
