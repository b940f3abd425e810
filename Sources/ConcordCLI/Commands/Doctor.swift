import ArgumentParser
import Concord
import ConcordRemote
import ConcordSync
import Foundation

struct Doctor: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check every remote object: it decrypts, parses, and no batch or file is missing.",
        discussion: """
            Lists the remote, opens every head, batch and snapshot with its key, decrypts every \
            file and checks its hash, and reports damaged (torn, modified, swapped) objects, gaps \
            in a replica's batch sequence, heads missing, and files that batches reference but the \
            remote lacks. --repair re-uploads what this replica can: its own batches (the exact \
            bytes it sealed), its head, and any file it holds locally. Objects only another \
            replica holds are reported with where to repair them. Exits 1 while problems remain.
            """)

    @Flag(name: .long, help: "Re-upload this replica's damaged or missing objects.") var repair = false
    @OptionGroup var options: GlobalOptions

    struct Problem {
        var path: String
        var kind: String
        var replica: ReplicaID?
        var message: String
        var repaired = false
        var note: String?
    }

    func run() async throws {
        let store = try options.openStore()
        let connection = try await RemoteConnection.open(store, options: options)
        let objects = RemoteObjects(remote: connection.remote, key: connection.key)
        let listing = try await connection.remote.list(prefix: "")

        var counts: [String: Int] = ["manifest": 0, "heads": 0, "deltas": 0, "snapshots": 0, "blobs": 0]
        var heads: [ReplicaID: [UInt64]] = [:]
        var deltas: [ReplicaID: Set<UInt64>] = [:]
        var blobsPresent: Set<String> = []
        var referenced: [String: (hash: ContentHash, writer: ReplicaID, by: String)] = [:]
        var problems: [Problem] = []
        var healthy = 0
        var names: [ReplicaID: String] = [:]

        for object in listing {
            guard let name = RemoteLayout.parse(object.path) else { continue }
            do throws(ConcordError) {
                switch name {
                case .manifest:
                    counts["manifest", default: 0] += 1
                    guard let bytes = try await connection.remote.get(object.path) else { continue }
                    _ = try StoreManifest(json: bytes)
                case let .head(replica, seq):
                    counts["heads", default: 0] += 1
                    heads[replica, default: []].append(seq)
                    if let head = try await objects.head(replica, seq: seq), let device = head.device { names[replica] = device }
                case let .delta(replica, seq):
                    counts["deltas", default: 0] += 1
                    deltas[replica, default: []].insert(seq)
                    guard let delta = try await objects.delta(replica, seq: seq) else { continue }
                    for entry in delta.records.flatMap({ $0.slots.flatMap(\.entries) }) {
                        guard case let .file(file) = entry.payload else { continue }
                        let keyed = BlobName.keyedName(for: file.hash, key: objects.blobNames)
                        if referenced[keyed] == nil { referenced[keyed] = (file.hash, entry.dot.replica, object.path) }
                    }
                case let .snapshot(replica, seq):
                    counts["snapshots", default: 0] += 1
                    _ = try await objects.checkSnapshot(replica, seq: seq)
                case let .blob(keyedName):
                    counts["blobs", default: 0] += 1
                    blobsPresent.insert(keyedName)
                    _ = try await objects.checkBlob(keyedName: keyedName)
                }
                healthy += 1
            } catch {
                if error.code == .remote { throw error }
                problems.append(Problem(path: object.path, kind: Self.kind(of: error), replica: Self.replica(of: name), message: error.message))
            }
        }
        if let own = try store.name() { names[store.replicaID] = own }

        // Gaps: without snapshots (not written yet), every batch 1…latest must be present.
        for replica in Set(heads.keys).union(deltas.keys).sorted() {
            let present = deltas[replica] ?? []
            let latest = max(heads[replica]?.max() ?? 0, present.max() ?? 0)
            guard latest > 0 else { continue }
            for seq in 1...latest where !present.contains(seq) {
                problems.append(Problem(
                    path: RemoteLayout.delta(replica, seq: seq), kind: "missing", replica: replica,
                    message: "batch \(seq) of replica \(replica) is missing (its newest is \(latest)): replicas that have not applied it cannot apply anything newer from it"))
            }
            if heads[replica] == nil {
                problems.append(Problem(
                    path: RemoteLayout.head(replica, seq: latest), kind: "missing", replica: replica,
                    message: "replica \(replica) has batches but no head: other replicas do not see its changes"))
            }
        }
        for (keyed, reference) in referenced.sorted(by: { $0.key < $1.key }) where !blobsPresent.contains(keyed) {
            problems.append(Problem(
                path: RemoteLayout.blob(keyedName: keyed), kind: "missing", replica: reference.writer,
                message: "file \(reference.hash.hex), referenced by \(reference.by), is not on the remote: replicas that need it wait"))
        }
        let pushed = UInt64(try store.syncValue(CLIConfig.enginePushedSeq) ?? "0") ?? 0
        if pushed > 0 && heads[store.replicaID] == nil && deltas[store.replicaID] == nil {
            problems.append(Problem(
                path: RemoteLayout.head(store.replicaID, seq: pushed), kind: "missing", replica: store.replicaID,
                message: "this replica pushed \(pushed) batches, but the remote holds none of them nor its head: the remote was emptied or replaced"))
        }

        var localNames: [String: ContentHash] = [:]
        for hash in try store.blobs.all() { localNames[BlobName.keyedName(for: hash, key: objects.blobNames)] = hash }
        if repair {
            for index in problems.indices {
                problems[index] = await attemptRepair(problems[index], store: store, objects: objects, localNames: localNames, pushed: pushed, names: names)
            }
        } else {
            for index in problems.indices {
                problems[index].note = Self.canRepairHere(problems[index], store: store, localNames: localNames)
                    ? "`concord doctor --repair` on this replica re-uploads it" : Self.elsewhere(problems[index], names: names)
            }
        }

        let ignored = Self.foreignFiles(in: connection.location.folder)
        let open = problems.filter { !$0.repaired }
        let notDone = [
            "damaged objects are never deleted: they stay until their writer replaces them",
            "objects only another replica holds cannot be repaired from here",
            "recovery from snapshots is not available yet (issue 6)",
        ]
        let summary = "checked \(listing.count) object\(listing.count == 1 ? "" : "s") in \(connection.location.folder): "
            + counts.sorted(by: { $0.key < $1.key }).map { "\($0.value) \($0.key)" }.joined(separator: ", ")
        var lines = [summary, "  \(healthy) healthy, \(problems.count) problem\(problems.count == 1 ? "" : "s")\(repair ? ", \(problems.count - open.count) repaired" : "")"]
        for problem in problems {
            lines.append("  \(problem.repaired ? "repaired" : problem.kind): \(problem.path)")
            lines.append("    \(Entry.oneLine(problem.message))")
            if let note = problem.note { lines.append("    \(note)") }
        }
        if !ignored.isEmpty {
            lines.append("  ignored \(ignored.count) file\(ignored.count == 1 ? "" : "s") the store did not write (sync-client copies, temporaries): \(ignored.prefix(3).joined(separator: ", "))\(ignored.count > 3 ? ", …" : "")")
        }
        lines.append(open.isEmpty ? "  the remote is healthy" : "  \(open.count) problem\(open.count == 1 ? "" : "s") remain")
        for item in notDone { lines.append("  not done: \(item)") }
        options.emit(
            .object([
                ("folder", .string(connection.location.folder)),
                ("objects", .object(counts.map { ($0.key, .int(Int64($0.value))) } + [("total", .int(Int64(listing.count)))])),
                ("healthy", .int(Int64(healthy))),
                ("problems", .array(problems.map { problem in
                    .object([
                        ("path", .string(problem.path)), ("kind", .string(problem.kind)),
                        ("replica", .string(problem.replica?.description)), ("message", .string(problem.message)),
                        ("repaired", .bool(problem.repaired)), ("note", .string(problem.note)),
                    ])
                })),
                ("ignored", .array(ignored.map { .string($0) })),
                ("ok", .bool(open.isEmpty)),
                ("notDone", .array(notDone.map { .string($0) })),
            ]),
            lines.joined(separator: "\n"))
        if !open.isEmpty { throw ExitCode(ExitStatus.failure) }
    }

    func attemptRepair(
        _ problem: Problem, store: Store, objects: RemoteObjects, localNames: [String: ContentHash], pushed: UInt64, names: [ReplicaID: String]
    ) async -> Problem {
        var problem = problem
        do {
            switch RemoteLayout.parse(problem.path) {
            case let .delta(replica, seq)? where replica == store.replicaID:
                guard let plaintext = try store.sealedDelta(seq: seq) else {
                    problem.note = "this replica no longer holds batch \(seq); it cannot be re-uploaded"
                    return problem
                }
                try await objects.repushDelta(plaintext, replica: replica, seq: seq)
                _ = try await objects.delta(replica, seq: seq)
                problem.repaired = true
                problem.note = "re-uploaded the bytes this replica sealed"
            case let .blob(keyedName)? where localNames[keyedName] != nil:
                let hash = localNames[keyedName]!
                try await objects.uploadBlob(hash, from: store.blobs)
                _ = try await objects.checkBlob(keyedName: keyedName)
                problem.repaired = true
                problem.note = "re-uploaded file \(hash.hex) from this replica's blob directory"
            case let .head(replica, seq)? where replica == store.replicaID:
                let latest = max(pushed, seq)
                try await objects.putHead(of: store, seq: latest, now: Format.now())
                if seq < latest { try await objects.remote.delete(problem.path) }
                problem.repaired = true
                problem.note = "wrote this replica's head for batch \(latest)"
            default:
                problem.note = Self.elsewhere(problem, names: names)
            }
        } catch {
            problem.note = "repair failed: \(Entry.oneLine((error as? ConcordError)?.message ?? "\(error)"))"
        }
        return problem
    }

    static func canRepairHere(_ problem: Problem, store: Store, localNames: [String: ContentHash]) -> Bool {
        switch RemoteLayout.parse(problem.path) {
        case let .delta(replica, _)?, let .head(replica, _)?: replica == store.replicaID
        case let .blob(keyedName)?: localNames[keyedName] != nil
        default: false
        }
    }

    static func elsewhere(_ problem: Problem, names: [ReplicaID: String]) -> String {
        guard let replica = problem.replica else { return "only the replica that wrote it can replace it" }
        let who = names[replica].map { "\"\($0)\" (\(replica))" } ?? "\(replica)"
        return "only replica \(who) holds this: run `concord doctor --repair` there"
    }

    static func kind(of error: ConcordError) -> String {
        switch error.code {
        case .authenticationFailed: "damaged"
        case .unsupportedVersion: "newerFormat"
        default: "malformed"
        }
    }

    static func replica(of name: RemoteLayout.Name) -> ReplicaID? {
        switch name {
        case let .head(replica, _), let .delta(replica, _), let .snapshot(replica, _): replica
        default: nil
        }
    }

    /// Files in the remote folder that are not the store's objects or folders: sync-client
    /// conflict copies, temporaries, a person's own files. Listings ignore them.
    static func foreignFiles(in folder: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: folder) else { return [] }
        var found: [String] = []
        while let next = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: folder + "/" + next, isDirectory: &isFolder)
            if isFolder.boolValue {
                if !RemoteLayout.isStoreFolder(next) { walker.skipDescendants(); found.append(next + "/") }
            } else if RemoteLayout.parse(next) == nil {
                found.append(next)
            }
        }
        return found.sorted()
    }
}
