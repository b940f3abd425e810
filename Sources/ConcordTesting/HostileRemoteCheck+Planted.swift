import ConcordCore
import ConcordRemote
import Foundation
import Synchronization

/// The checks of what is planted in the storage: links out of the root, things that are
/// not files, names outside the layout, sizes.
extension HostileRemoteCheck.Checker {
    // MARK: Links out of the root

    /// `folder` replaced by a link to the outside folder, which holds a file named like
    /// the object `old` and an old temporary file.
    mutating func checkLinkedFolder(_ folder: String, old: String, new: String) async {
        guard await plant("\(folder) as a link to a folder outside", { try await $0.plantLink($1, to: $0.outside) }, folder) else { return }
        await linkedFolder(folder, old: old, new: new)
        await unplant(folder)
    }

    mutating func linkedFolder(_ folder: String, old: String, new: String) async {
        let name = String(old.split(separator: "/").last!)
        let outsideFiles = [name: Array("an unrelated file outside the store".utf8), ".concord-tmp-0000000000000001": Array("someone's".utf8)]
        guard await prepareOutside(outsideFiles), let before = await outsideNow() else { return }
        let context = "with \(folder)/ a symbolic link to a folder outside the root"
        let remote = remote

        _ = await prompt("\(context): put(\(new))") { () async throws(ConcordError) -> String? in try await remote.put(new, [1, 2, 3]); return nil }
        let got = await call("\(context): get(\(old))") { () async throws(ConcordError) -> String? in Self.show(try await remote.get(old)) }
        if case let .returned(shown?) = got {
            issues.append("\(context): get(\(old)) returned \(shown) — it read a file outside the root; expected nil or a typed error")
        }
        if case .hung = got { issues.append("\(context): get(\(old)) hung") }
        let listed = await call("\(context): list(prefix: \"\")") { () async throws(ConcordError) -> String? in
            Self.paths(try await remote.list(prefix: ""))
        }
        switch listed {
        case let .returned(paths?):
            issues.append("\(context): list(prefix: \"\") returned [\(paths)] — it listed files outside the root; links must be skipped")
        case .returned(nil):
            break
        case let .threw(error):
            if !expect.listingMayFail { issues.append("\(context): list(prefix: \"\") threw \(error); it must skip the link and list the rest") }
        case .hung:
            issues.append("\(context): list(prefix: \"\") hung")
        }
        _ = await prompt("\(context): delete(\(old))") { () async throws(ConcordError) -> String? in try await remote.delete(old); return nil }
        let storage = storage
        _ = await prompt("\(context): the sweep") { () async throws(ConcordError) -> String? in
            do { try await storage.sweep() } catch { throw ConcordError(.remote, "sweep threw \(error)") }
            return nil
        }
        if let after = await outsideNow(), before != after {
            issues.append("\(context): put, get, list, delete and the sweep changed the folder outside the root: it held \(Self.describe(before)), now \(Self.describe(after))")
        }
    }

    /// An object that is a link to a file outside the root.
    mutating func checkLinkedObject() async {
        let path = RemoteLayout.manifestPath
        guard await plant("\(path) as a link to a file outside", { try await $0.plantLink($1, to: $0.outside + "/secret") }, path) else { return }
        await linkedObject(path)
        try? await storage.remove(path)
    }

    mutating func linkedObject(_ path: String) async {
        guard await prepareOutside(["secret": Array("outside bytes".utf8)]), let before = await outsideNow() else { return }
        let context = "with \(path) a symbolic link to a file outside the root"
        let remote = remote
        await expectUnreadable(context, "get(\(path))", naming: path) { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
        await expectUnreadable(context, "get(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String? in
            Self.show(try await remote.get(path, limit: RemoteLayout.maxObjectSize(for: .manifest)))
        }
        await expectSkipped(context, path)
        _ = await prompt("\(context): put(\(path))") { () async throws(ConcordError) -> String? in try await remote.put(path, [1]); return nil }
        _ = await prompt("\(context): delete(\(path))") { () async throws(ConcordError) -> String? in try await remote.delete(path); return nil }
        if let after = await outsideNow(), after != before {
            issues.append("\(context): a put and a delete of \(path) changed the file outside the root (\(Self.describe(before)) → \(Self.describe(after)))")
        }
    }

    // MARK: Things that are not files

    mutating func checkUnreadable(_ path: String, _ what: String, _ plantIt: (S, String) async throws -> Void) async {
        guard await plant("\(path) as \(what)", plantIt, path) else { return }
        await unreadable(path, what)
        await unplant(path)
    }

    mutating func unreadable(_ path: String, _ what: String) async {
        let context = "with \(path) \(what)"
        let remote = remote
        let limit = RemoteLayout.maxObjectSize(forPath: path)
        await expectUnreadable(context, "get(\(path))", naming: path) { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
        await expectUnreadable(context, "get(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String? in
            Self.show(try await remote.get(path, limit: limit))
        }
        await expectUnreadable(context, "getStream(\(path))", naming: path) { () async throws(ConcordError) -> String? in
            var count = 0
            let found = try await remote.getStream(path) { (chunk: [UInt8]) throws(ConcordError) in
                count += chunk.count
                if count > 1 << 20 { throw ConcordError(.limitExceeded, "getStream delivered more than 1 MiB") }
            }
            return found ? "an object of \(count) bytes" : nil
        }
        await expectUnreadable(context, "getStream(\(path), limit:)", naming: path) { () async throws(ConcordError) -> String? in
            var count = 0
            let found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in count += chunk.count }
            return found ? "an object of \(count) bytes" : nil
        }
        await expectSkipped(context, path)
    }

    // MARK: Names outside the layout

    /// Objects at names that are no layout name, beside objects outside the root named
    /// like the store's: none is listed or read, and puts and deletes next to them stay
    /// inside the root.
    mutating func checkForeignNames() async {
        let replica = HostileRemoteCheck.replica
        let head = RemoteLayout.head(replica, seq: 6)
        let batch = RemoteLayout.batch(replica, seq: 1)
        let names = [
            (RemoteLayout.headsPrefix, "a layout folder's name with its slash"),
            (String(RemoteLayout.batchesPrefix(replica).dropLast()), "where the layout has a folder"),
            ("heads/../" + head, "a \"..\" segment"),
            ("/" + RemoteLayout.manifestPath, "a leading slash"),
            ("\(RemoteLayout.storesPrefix)\(replica)/\(head)", "a named store's head, which only that store's own root lists"),
            ("\(RemoteLayout.storesPrefix)\(replica.description.uppercased())/\(RemoteLayout.manifestPath)", "a store folder's id in upper case"),
        ]
        var planted: [String] = []
        for (name, why) in names {
            if await plant("an object at \(name) (\(why))", { try await $0.plantObject($1, Array("planted".utf8)) }, name) { planted.append(name) }
        }
        guard !planted.isEmpty else { return }
        let stored = await foreignNames(planted, head: head, batch: batch)
        for name in planted { await unplant(name) }
        // The folders the puts made, so the root is left as it was found.
        for folder in Set(stored.compactMap { $0.split(separator: "/").first.map(String.init) }) { await unplant(folder) }
    }

    /// The paths it put (and deleted again).
    mutating func foreignNames(_ planted: [String], head: String, batch: String) async -> [String] {
        let outsideFiles = [
            RemoteLayout.manifestPath: Array("an outside concord.json".utf8), head: Array("an outside head".utf8),
            ".concord-tmp-0000000000000001": Array("someone's".utf8),
        ]
        guard await prepareOutside(outsideFiles), let before = await outsideNow() else { return [] }
        let context = "with objects at \(planted.joined(separator: ", ")) (no names of the layout)"
        let remote = remote
        await expectListing(context, [])
        for path in [head, RemoteLayout.manifestPath] {
            let got = await call("\(context): get(\(path))") { () async throws(ConcordError) -> String? in Self.show(try await remote.get(path)) }
            if case let .returned(shown?) = got { issues.append("\(context): get(\(path)) returned \(shown); there is no object at \(path)") }
            if case .hung = got { issues.append("\(context): get(\(path)) hung") }
        }
        var stored: [String] = []
        for (path, bytes) in [(head, [UInt8]([6])), (batch, [1])] {
            // A put may fail, e.g. with a file where its folder belongs.
            let put = await prompt("\(context): put(\(path))") { () async throws(ConcordError) -> String? in try await remote.put(path, bytes); return nil }
            if case .returned = put { stored.append(path) }
        }
        await expectListing(context, stored.sorted())
        if stored.contains(head) {
            let got = await call("\(context): get(\(head))") { () async throws(ConcordError) -> String? in
                try await remote.get(head).map { $0 == [6] ? "the byte put" : "\($0.count) other bytes" }
            }
            if case let .returned(shown) = got, shown != "the byte put" {
                issues.append("\(context): get(\(head)) after put(\(head), [6]) returned \(shown ?? "nothing")")
            } else if case .threw = got {
                issues.append("\(context): get(\(head)) after put(\(head), [6]) \(got)")
            }
        }
        for path in stored {
            let deleted = await call("\(context): delete(\(path))") { () async throws(ConcordError) -> String? in try await remote.delete(path); return nil }
            if case .returned = deleted {} else { issues.append("\(context): delete(\(path)) \(deleted)") }
        }
        let storage = storage
        _ = await prompt("\(context): the sweep") { () async throws(ConcordError) -> String? in
            do { try await storage.sweep() } catch { throw ConcordError(.remote, "sweep threw \(error)") }
            return nil
        }
        if let after = await outsideNow(), before != after {
            issues.append("\(context): list, get, put, delete and the sweep changed what lies outside the root: it held \(Self.describe(before)), now \(Self.describe(after))")
        }
        return stored
    }

    /// `list(prefix: "")` returns exactly `expected` (or, if the storage's remote may, a
    /// typed error), promptly.
    mutating func expectListing(_ context: String, _ expected: [String]) async {
        let remote = remote
        let listed = await call("\(context): list(prefix: \"\")") { () async throws(ConcordError) -> String? in
            Self.paths(try await remote.list(prefix: ""))
        }
        let wanted = expected.isEmpty ? nil : expected.joined(separator: ", ")
        switch listed {
        case let .returned(paths) where paths != wanted:
            issues.append("\(context): list(prefix: \"\") returned [\(paths ?? "")]; expected [\(wanted ?? "")]")
        case let .threw(error) where !expect.listingMayFail:
            issues.append("\(context): list(prefix: \"\") threw \(error); it must skip what is no name of the layout")
        case .hung:
            issues.append("\(context): list(prefix: \"\") hung")
        default:
            break
        }
    }

    // MARK: Sizes

    mutating func checkSparse() async {
        let path = RemoteLayout.manifestPath
        let size = expect.largeFileSize
        guard await plant("\(path) as a file of \(size) bytes", { try await $0.plantSparseFile($1, size: size) }, path) else { return }
        await sparse(path, size: size)
        await unplant(path)
    }

    mutating func sparse(_ path: String, size: UInt64) async {
        let context = "with \(path) a file of \(size) bytes"
        let remote = remote
        let limit = RemoteLayout.maxObjectSize(for: .manifest)
        let (outcome, grown) = await measured("\(context): get(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
            Self.show(try await remote.get(path, limit: limit))
        }
        expectLimitExceeded(context, "get(\(path), limit: \(limit))", outcome, naming: path, limit: limit)
        if grown > 512 << 20 {
            issues.append("\(context): get(\(path), limit: \(limit)) grew the peak memory by \(grown >> 20) MiB; it must not read past the limit")
        }
        await expectBoundedStream(context, path, limit: limit)
        if let listing = try? await remote.list(prefix: path), let object = listing.first, object.size != size {
            issues.append("\(context): list reports \(object.size.map { "\($0) bytes" } ?? "no size")")
        }
    }

    /// `outcome` is ``/ConcordCore/ConcordError/Code/limitExceeded`` naming `path` and `limit`.
    mutating func expectLimitExceeded(_ context: String, _ what: String, _ outcome: Outcome, naming path: String, limit: UInt64) {
        if outcome.code != .limitExceeded {
            issues.append("\(context): \(what) \(outcome); expected limitExceeded")
        } else if case let .threw(error) = outcome, !(error.message.contains(path) && error.message.contains("\(limit)")) {
            issues.append("\(context): the limitExceeded message of \(what) does not name the object and the limit: \(error.message)")
        }
    }

    /// `getStream(path, limit: limit)` throws limitExceeded, `write` having had at most `limit` bytes.
    mutating func expectBoundedStream(_ context: String, _ path: String, limit: UInt64) async {
        let remote = remote
        let delivered = Tally()
        let outcome = await call("\(context): getStream(\(path), limit: \(limit))") { () async throws(ConcordError) -> String? in
            let found = try await remote.getStream(path, limit: limit) { (chunk: [UInt8]) throws(ConcordError) in delivered.add(chunk.count) }
            return found ? "an object of \(delivered.total) bytes" : nil
        }
        if outcome.code != .limitExceeded {
            issues.append("\(context): getStream(\(path), limit: \(limit)) \(outcome); expected limitExceeded")
        }
        let count = delivered.total
        if count > limit {
            issues.append("\(context): getStream(\(path), limit: \(limit)) handed \(count) bytes to write; at most the limit may reach it")
        }
    }
}
